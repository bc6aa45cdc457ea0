/** A campaign's sent messages as tracking, bounces and copies read and mark them. */
import type { ShardDb } from "../shards";
import { countLinkClickStatement } from "../campaign-report";
import { abVariantSql } from "./ab-tests";

export interface TrackedMessage {
  panelId: string;
  campaignId: string;
  contactId: number;
  address: string | null;
}

type TrackedRow = { panel_id: string; campaign_id: string; contact_id: number; address: string | null };
const tracked = (row: TrackedRow | null): TrackedMessage | null =>
  row ? { panelId: row.panel_id, campaignId: row.campaign_id, contactId: row.contact_id, address: row.address } : null;

const ENGAGEMENT_COLUMNS = { open: ["opens", "first_open_at"], click: ["clicks", "first_click_at"] } as const;

/**
 * Counts an open or a click of a sent message, and a click on its link `url` with it (the
 * report's top links); null when the panel sent no such message.
 */
export async function countEngagement(
  db: ShardDb,
  m: { panelId: string; campaignId: string; contactId: number },
  kind: keyof typeof ENGAGEMENT_COLUMNS,
  now: number,
  url?: string,
): Promise<TrackedMessage | null> {
  const [count, first] = ENGAGEMENT_COLUMNS[kind];
  const statements = [
    db
      .prepare(
        `UPDATE campaign_messages SET ${count} = ${count} + 1, ${first} = COALESCE(${first}, ?)
         WHERE panel_id = ? AND campaign_id = ? AND contact_id = ? AND status = 'sent'
         RETURNING panel_id, campaign_id, contact_id, address`,
      )
      .bind(now, m.panelId, m.campaignId, m.contactId),
  ];
  if (url !== undefined) statements.push(countLinkClickStatement(db, m, url));
  const [counted] = await db.batch<TrackedRow>(statements);
  return tracked(counted!.results[0] ?? null);
}

/** Marks the message's recipient unsubscribed; `first` tells whether this was the first time. */
export async function markUnsubscribed(
  db: ShardDb,
  m: { panelId: string; campaignId: string; contactId: number },
  now: number,
): Promise<{ message: TrackedMessage; first: boolean } | null> {
  const row = await db
    .prepare(
      `UPDATE campaign_messages SET unsubscribed_at = COALESCE(unsubscribed_at, ?1)
       WHERE panel_id = ?2 AND campaign_id = ?3 AND contact_id = ?4 AND status = 'sent'
       RETURNING panel_id, campaign_id, contact_id, address, unsubscribed_at = ?1 AS first`,
    )
    .bind(now, m.panelId, m.campaignId, m.contactId)
    .first<TrackedRow & { first: number }>();
  return row ? { message: tracked(row)!, first: row.first === 1 } : null;
}

/** The message of a campaign to one contact, if it was sent. */
export async function getSentCampaignMessage(db: ShardDb, m: { panelId: string; campaignId: string; contactId: number }): Promise<TrackedMessage | null> {
  const row = await db
    .prepare("SELECT panel_id, campaign_id, contact_id, address FROM campaign_messages WHERE panel_id = ? AND campaign_id = ? AND contact_id = ? AND status = 'sent'")
    .bind(m.panelId, m.campaignId, m.contactId)
    .first<TrackedRow>();
  return tracked(row);
}

/** The sent message the provider knows by its message id (a complaint names only that). */
export async function sentMessageByProviderId(db: ShardDb, providerMessageId: string): Promise<TrackedMessage | null> {
  const row = await db
    .prepare("SELECT panel_id, campaign_id, contact_id, address FROM campaign_messages WHERE provider_msg_id = ? AND status = 'sent'")
    .bind(providerMessageId)
    .first<TrackedRow>();
  return tracked(row);
}

/** Marks the message a provider reported bounced, found by the provider's message id. */
export async function markBounced(db: ShardDb, providerMessageId: string, now: number): Promise<TrackedMessage | null> {
  const row = await db
    .prepare(
      `UPDATE campaign_messages SET bounced_at = COALESCE(bounced_at, ?)
       WHERE provider_msg_id = ? RETURNING panel_id, campaign_id, contact_id, address`,
    )
    .bind(now, providerMessageId)
    .first<TrackedRow>();
  return tracked(row);
}

/** What a campaign message's copy is rendered from: its outcome, the subject it went with and its merge values. */
export interface CampaignMessageRecord {
  campaignId: string;
  contactId: number;
  status: string;
  address: string | null;
  /** The filled subject, or null where the campaign's subject had no merge tags. */
  subject: string | null;
  mergeValues: Record<string, string | number | boolean> | null;
  sentAt: number | null;
  /** The A/B test's variant it got; null outside a test. */
  variant: number | null;
}

export async function getCampaignMessage(db: ShardDb, panelId: string, campaignId: string, contactId: number): Promise<CampaignMessageRecord | null> {
  const row = await db
    .prepare(`SELECT status, address, subject, merge_values, sent_at, ${abVariantSql("campaign_messages.campaign_id")} AS variant FROM campaign_messages WHERE panel_id = ? AND campaign_id = ? AND contact_id = ?`)
    .bind(panelId, campaignId, contactId)
    .first<{ status: string; address: string | null; subject: string | null; merge_values: string | null; sent_at: number | null; variant: number | null }>();
  if (!row) return null;
  return {
    campaignId,
    contactId,
    status: row.status,
    address: row.address,
    subject: row.subject,
    mergeValues: row.merge_values ? (JSON.parse(row.merge_values) as CampaignMessageRecord["mergeValues"]) : null,
    sentAt: row.sent_at,
    variant: row.variant,
  };
}
