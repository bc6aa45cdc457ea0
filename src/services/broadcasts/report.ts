import { pagedCsv } from "../../domain/csv";
import type { CampaignCounters, CampaignRecipientView, CampaignReport, RecipientFilter } from "../../domain/broadcast";
import type { Campaign } from "../../store/campaigns";
import { campaignCounters, campaignHours, campaignRecipients, campaignTopLinks, type CampaignRecipient } from "../../store/campaign-report";
import type { ShardDb } from "../../store/shards";
import { isoTime } from "../../store/sql";
import { messageIdOf } from "./send";

/** Links a report lists. */
const TOP_LINKS = 20;
/** Recipients one read of a CSV export takes. */
const CSV_PAGE = 5_000;

/** `part` of `whole`, 0 to 1 in four decimals (0 of nothing). */
export function share(part: number, whole: number): number {
  return whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0;
}

export function reportRates(c: CampaignCounters): CampaignReport["rates"] {
  return {
    delivered: share(c.sent - c.bounces, c.sent),
    unique_open: share(c.unique_opens, c.sent),
    click_through: share(c.unique_clicks, c.sent),
    click_to_open: share(c.unique_clicks, c.unique_opens),
    bounce: share(c.bounces, c.sent),
    unsubscribe: share(c.unsubscribes, c.sent),
  };
}

/** What a campaign did: counters, rates, its hours and its most clicked links, from the aggregates. */
export async function campaignReport(db: ShardDb, campaign: Campaign): Promise<Omit<CampaignReport, "ab_test">> {
  const [counters, hours, links] = await Promise.all([
    campaignCounters(db, campaign.panelId, campaign),
    campaignHours(db, campaign.panelId, campaign.id),
    campaignTopLinks(db, campaign.panelId, campaign.id, TOP_LINKS),
  ]);
  return { counters, rates: reportRates(counters), hours, top_links: links };
}

const time = (at: number | null) => (at === null ? null : isoTime(at));

export function recipientView(r: CampaignRecipient): CampaignRecipientView {
  return {
    contact_id: r.contactId,
    key: r.key,
    address: r.address,
    status: r.status,
    error: r.error,
    sent_at: time(r.sentAt),
    opens: r.opens,
    clicks: r.clicks,
    first_open_at: time(r.firstOpenAt),
    first_click_at: time(r.firstClickAt),
    bounced_at: time(r.bouncedAt),
    unsubscribed_at: time(r.unsubscribedAt),
    subject: r.subject,
    message_id: messageIdOf(r.campaignId, r.contactId),
  };
}

const CSV_COLUMNS = ["contact_id", "key", "address", "status", "sent_at", "opens", "clicks", "first_open_at", "first_click_at", "bounced_at", "unsubscribed_at"] as const;

/**
 * Every recipient behind `filter` as CSV, read a page at a time while the download is taken,
 * so memory stays flat whatever the campaign's size.
 */
export function recipientsCsv(db: ShardDb, campaign: Campaign, filter: RecipientFilter): ReadableStream<Uint8Array> {
  return pagedCsv({
    header: CSV_COLUMNS,
    pageSize: CSV_PAGE,
    page: (after: number | undefined, size) => campaignRecipients(db, campaign.panelId, campaign.id, filter, after ?? 0, size),
    fields: (recipient) => {
      const view = recipientView(recipient);
      return CSV_COLUMNS.map((column) => String(view[column] ?? ""));
    },
    cursor: (last) => last.contactId,
  });
}
