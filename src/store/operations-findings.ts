import { CONTACTS } from "./panel-counts";
import type { ShardDb } from "./shards";

/**
 * What the operations view and its alerts read of one shard: webhooks disabled, sender domains
 * not verified, work past its time, and the shard's size. Across the shard's panels, each
 * capped at `limit` rows; each read is a scan of a small table or an index range.
 */

export interface DisabledWebhook {
  panelId: string;
  id: string;
  label: string;
  url: string;
  reason: string | null;
  disabledAt: number | null;
}

export async function disabledWebhooks(db: ShardDb, limit: number): Promise<DisabledWebhook[]> {
  const { results } = await db
    .prepare("SELECT panel_id, id, label, url, disabled_reason, disabled_at FROM webhooks WHERE state = 'disabled' ORDER BY disabled_at DESC LIMIT ?")
    .bind(limit)
    .all<{ panel_id: string; id: string; label: string; url: string; disabled_reason: string | null; disabled_at: number | null }>();
  return results.map((r) => ({ panelId: r.panel_id, id: r.id, label: r.label, url: r.url, reason: r.disabled_reason, disabledAt: r.disabled_at }));
}

export interface UnverifiedDomain {
  panelId: string;
  domain: string;
  state: "pending" | "failed";
  checkedAt: number | null;
}

/** Domains that may not send real email: never checked (`pending`) or failing their last check (`failed`). */
export async function unverifiedSenderDomains(db: ShardDb, limit: number): Promise<UnverifiedDomain[]> {
  const { results } = await db
    .prepare("SELECT panel_id, domain, state, checked_at FROM sender_domains WHERE state <> 'verified' ORDER BY state = 'pending', checked_at DESC LIMIT ?")
    .bind(limit)
    .all<{ panel_id: string; domain: string; state: "pending" | "failed"; checked_at: number | null }>();
  return results.map((r) => ({ panelId: r.panel_id, domain: r.domain, state: r.state, checkedAt: r.checked_at }));
}

export interface StuckImport {
  panelId: string;
  id: string;
  phase: string;
  attempts: number;
  lastError: string | null;
  updatedAt: number;
}

/** Unfinished import jobs untouched since `before` (index import_jobs_unfinished). */
export async function stuckImports(db: ShardDb, before: number, limit: number): Promise<StuckImport[]> {
  const { results } = await db
    .prepare("SELECT panel_id, id, phase, attempts, last_error, updated_at FROM import_jobs WHERE phase <> 'done' AND updated_at < ? ORDER BY updated_at LIMIT ?")
    .bind(before, limit)
    .all<{ panel_id: string; id: string; phase: string; attempts: number; last_error: string | null; updated_at: number }>();
  return results.map((r) => ({ panelId: r.panel_id, id: r.id, phase: r.phase, attempts: r.attempts, lastError: r.last_error, updatedAt: r.updated_at }));
}

export interface StuckCampaign {
  panelId: string;
  id: string;
  name: string;
  status: "scheduled" | "sending";
  sendAt: number;
  updatedAt: number;
}

/**
 * Campaigns past their time: scheduled ones not published `lateBefore` after their send time,
 * and sending ones untouched since `stalledBefore` (index campaigns_due for both).
 */
export async function stuckCampaigns(db: ShardDb, lateBefore: number, stalledBefore: number, limit: number): Promise<StuckCampaign[]> {
  const { results } = await db
    .prepare(
      `SELECT panel_id, id, name, status, send_at, updated_at FROM campaigns WHERE status = 'scheduled' AND send_at < ?1
       UNION ALL
       SELECT panel_id, id, name, status, send_at, updated_at FROM campaigns WHERE status = 'sending' AND updated_at < ?2
       ORDER BY send_at LIMIT ?3`,
    )
    .bind(lateBefore, stalledBefore, limit)
    .all<{ panel_id: string; id: string; name: string; status: "scheduled" | "sending"; send_at: number; updated_at: number }>();
  return results.map((r) => ({ panelId: r.panel_id, id: r.id, name: r.name, status: r.status, sendAt: r.send_at, updatedAt: r.updated_at }));
}

/**
 * The shard's size in bytes (D1's `meta.size_after`, which every result carries) and the
 * contacts its panels hold as last counted (panel_counts: no scan of contacts).
 */
export async function shardUsage(db: ShardDb): Promise<{ sizeBytes: number; contacts: number }> {
  const result = await db.prepare("SELECT COALESCE(SUM(n), 0) AS contacts FROM panel_counts WHERE subject = ?").bind(CONTACTS).all<{ contacts: number }>();
  return { sizeBytes: result.meta.size_after ?? 0, contacts: result.results[0]?.contacts ?? 0 };
}
