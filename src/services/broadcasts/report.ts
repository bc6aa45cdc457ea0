import { pagedCsv } from "../../domain/csv";
import type { CampaignCounters, CampaignHour, CampaignLinkClicks, CampaignRecipientView, CampaignReport, CampaignSums, RecipientFilter } from "../../domain/broadcast";
import { abGroupTallies, type AbGroupTally } from "../../store/campaigns/ab-tests";
import { type Campaign } from "../../store/campaigns/definitions";
import {
  NO_SUMS,
  campaignCounters,
  campaignHours,
  campaignRecipients,
  campaignSums,
  campaignTopLinks,
  countersOf,
  countersOfCampaigns,
  sumsOfCampaigns,
  type CampaignRecipient,
} from "../../store/campaign-report";
import { mergedPage, type OwningShards } from "../access/partitions";
import type { ShardDb } from "../../store/shards";
import { isoTime } from "../../store/sql";
import { campaignMessageId } from "../../domain/email-message";

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

/**
 * The shards a campaign's report reads (panelShards): the home first, then each other shard
 * holding some of the panel's partitions, whose recipients it sent from there and counts there
 * (decision 0038 step 4). One read a shard; a panel without a map reads its home alone, as before.
 */
export type CampaignShards = readonly [ShardDb, ...ShardDb[]];

const SUM_FIELDS = Object.keys(NO_SUMS) as Array<keyof CampaignSums>;

function addSums<T extends CampaignSums>(into: T, sums: CampaignSums): T {
  for (const field of SUM_FIELDS) into[field] += sums[field];
  return into;
}

/** The campaign's counters, its sums added up over its shards; `recipients` is the home's total, every shard's included. */
export async function countersAcross(shards: CampaignShards, panelId: string, campaign: { id: string; recipients: number }): Promise<CampaignCounters> {
  if (shards.length === 1) return campaignCounters(shards[0], panelId, campaign);
  const sums = await Promise.all(shards.map((db) => campaignSums(db, panelId, campaign.id)));
  return countersOf(campaign.recipients, sums.reduce(addSums, { ...NO_SUMS }));
}

/** The counters of several campaigns (the campaign list): one read a shard. */
export async function countersOfCampaignsAcross(shards: CampaignShards, panelId: string, campaigns: ReadonlyArray<{ id: string; recipients: number }>): Promise<CampaignCounters[]> {
  if (shards.length === 1) return countersOfCampaigns(shards[0], panelId, campaigns);
  const perShard = await Promise.all(shards.map((db) => sumsOfCampaigns(db, panelId, campaigns.map((c) => c.id))));
  return campaigns.map((campaign, i) => countersOf(campaign.recipients, perShard.reduce((sum, sums) => addSums(sum, sums[i]!), { ...NO_SUMS })));
}

async function hoursAcross(shards: CampaignShards, panelId: string, campaignId: string): Promise<CampaignHour[]> {
  const perShard = await Promise.all(shards.map((db) => campaignHours(db, panelId, campaignId)));
  if (perShard.length === 1) return perShard[0]!;
  const byHour = new Map<number, CampaignHour>();
  for (const hour of perShard.flat()) {
    const seen = byHour.get(hour.hour);
    if (seen) addSums(seen, hour);
    else byHour.set(hour.hour, { ...hour });
  }
  return [...byHour.values()].sort((a, b) => a.hour - b.hour);
}

async function topLinksAcross(shards: CampaignShards, panelId: string, campaignId: string): Promise<CampaignLinkClicks[]> {
  // Each shard's top links: a link below one shard's top may still be in the panel's (its clicks
  // there not counted in): the top is the sum of what each shard's top holds.
  const perShard = await Promise.all(shards.map((db) => campaignTopLinks(db, panelId, campaignId, TOP_LINKS)));
  if (perShard.length === 1) return perShard[0]!;
  const byUrl = new Map<string, number>();
  for (const link of perShard.flat()) byUrl.set(link.url, (byUrl.get(link.url) ?? 0) + link.clicks);
  return [...byUrl].map(([url, clicks]) => ({ url, clicks })).sort((a, b) => b.clicks - a.clicks || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0)).slice(0, TOP_LINKS);
}

const TALLY_FIELDS = ["recipients", "sent", "failed", "skipped", "opens", "unique_opens", "clicks", "unique_clicks", "bounces", "unsubscribes"] as const;

/**
 * What each of an A/B test's groups (each variant's test recipients, the rest) came to over the
 * campaign's shards: each shard splits and sends its own recipients (decision 0038 step 4), so a
 * group's figures are the sum of its rows on each. One read a shard.
 */
export async function abTalliesAcross(shards: CampaignShards, panelId: string, campaignId: string): Promise<AbGroupTally[]> {
  // Every shard but the first (the home) keeps its share on its part once its rows are pruned.
  const perShard = await Promise.all(shards.map((db, i) => abGroupTallies(db, panelId, campaignId, i > 0)));
  if (perShard.length === 1) return perShard[0]!;
  const byGroup = new Map<string, AbGroupTally>();
  for (const tally of perShard.flat()) {
    const key = `${tally.group}:${tally.variant}`;
    const seen = byGroup.get(key);
    if (!seen) byGroup.set(key, { ...tally });
    else for (const field of TALLY_FIELDS) seen[field] += tally[field];
  }
  return [...byGroup.values()];
}

/** What a campaign did: counters, rates, its hours and its most clicked links, from the aggregates (of every shard it sent from). */
export async function campaignReport(shards: CampaignShards, campaign: Campaign): Promise<Omit<CampaignReport, "ab_test">> {
  const [counters, hours, links] = await Promise.all([
    countersAcross(shards, campaign.panelId, campaign),
    hoursAcross(shards, campaign.panelId, campaign.id),
    topLinksAcross(shards, campaign.panelId, campaign.id),
  ]);
  return { counters, rates: reportRates(counters), hours, top_links: links };
}

/**
 * A page of the recipients behind a number, by contact id: each shard's page past the cursor,
 * merged (contact ids are unique across shards, decision 0030), each shard's kept to the buckets
 * its map gives it (panelOwningShards: until a split's cleaning its source's copies of the moved
 * recipients were listed beside the target's, decision 0047). A recipient on a shard other than
 * the home, sent with the campaign's own subject, takes it from the campaign.
 */
export async function recipientsAcross(shards: OwningShards, campaign: Campaign, filter: RecipientFilter, after: number, limit: number): Promise<CampaignRecipient[]> {
  const page = await mergedPage(shards, (shard) => campaignRecipients(shard.db, campaign.panelId, campaign.id, filter, after, limit, shard.buckets), (a, b) => a.contactId - b.contactId, limit);
  return shards.length === 1 ? page : page.map((r) => ({ ...r, subject: (r.subject as string | null) ?? campaign.subject }));
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
    message_id: campaignMessageId(r.campaignId, r.contactId),
  };
}

const CSV_COLUMNS = ["contact_id", "key", "address", "status", "sent_at", "opens", "clicks", "first_open_at", "first_click_at", "bounced_at", "unsubscribed_at"] as const;

/**
 * Every recipient behind `filter` as CSV, read a page at a time while the download is taken,
 * so memory stays flat whatever the campaign's size.
 */
export function recipientsCsv(shards: OwningShards, campaign: Campaign, filter: RecipientFilter): ReadableStream<Uint8Array> {
  return pagedCsv({
    header: CSV_COLUMNS,
    pageSize: CSV_PAGE,
    page: (after: number | undefined, size) => recipientsAcross(shards, campaign, filter, after ?? 0, size),
    fields: (recipient) => {
      const view = recipientView(recipient);
      return CSV_COLUMNS.map((column) => String(view[column] ?? ""));
    },
    cursor: (last) => last.contactId,
  });
}
