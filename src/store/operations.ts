import type { AlertCondition, AlertKind } from "../domain/operations";
import type { ControlDb } from "./shards";

/**
 * The operations view's own bookkeeping in the control database (migration 0073): the cron's
 * ticks, alert subscriptions and the alert conditions that hold now.
 */

export interface CronTick {
  scheduledAt: number;
  startedAt: number;
  durationMs: number;
  failedTasks: number;
}

/** Ticks kept: a day of them. */
const TICKS_KEPT_MS = 24 * 60 * 60_000;

/** Records one tick and forgets those past a day, in one batch (the tick's last D1 call). */
export async function recordCronTick(db: ControlDb, tick: CronTick): Promise<void> {
  await db.batch([
    db
      .prepare("INSERT OR REPLACE INTO cron_ticks (scheduled_at, started_at, duration_ms, failed_tasks) VALUES (?, ?, ?, ?)")
      .bind(tick.scheduledAt, tick.startedAt, tick.durationMs, tick.failedTasks),
    db.prepare("DELETE FROM cron_ticks WHERE scheduled_at < ?").bind(tick.scheduledAt - TICKS_KEPT_MS),
  ]);
}

type TickRow = { scheduled_at: number; started_at: number; duration_ms: number; failed_tasks: number };
const tickOf = (r: TickRow): CronTick => ({ scheduledAt: r.scheduled_at, startedAt: r.started_at, durationMs: r.duration_ms, failedTasks: r.failed_tasks });

/** The latest ticks, newest first. */
export async function lastCronTicks(db: ControlDb, limit: number): Promise<CronTick[]> {
  const { results } = await db.prepare("SELECT * FROM cron_ticks ORDER BY scheduled_at DESC LIMIT ?").bind(limit).all<TickRow>();
  return results.map(tickOf);
}

export interface AlertSubscription {
  id: string;
  /** The panel whose owners subscribed; null for the deployment admin's. */
  panelId: string | null;
  kinds: AlertKind[];
  email: string | null;
  webhookUrl: string | null;
  signingSecretEnc: string | null;
  createdAt: number;
  lastError: string | null;
  lastErrorAt: number | null;
}

type SubscriptionRow = {
  id: string;
  panel_id: string | null;
  kinds: string;
  email: string | null;
  webhook_url: string | null;
  signing_secret_enc: string | null;
  created_at: number;
  last_error: string | null;
  last_error_at: number | null;
};

const subscriptionOf = (r: SubscriptionRow): AlertSubscription => ({
  id: r.id,
  panelId: r.panel_id,
  kinds: JSON.parse(r.kinds) as AlertKind[],
  email: r.email,
  webhookUrl: r.webhook_url,
  signingSecretEnc: r.signing_secret_enc,
  createdAt: r.created_at,
  lastError: r.last_error,
  lastErrorAt: r.last_error_at,
});

/** Adds a subscription unless its holder (the deployment, or the panel it names) holds `max` already; false then. */
export async function insertAlertSubscription(db: ControlDb, subscription: Omit<AlertSubscription, "lastError" | "lastErrorAt">, max: number): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO alert_subscriptions (id, panel_id, kinds, email, webhook_url, signing_secret_enc, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE (SELECT COUNT(*) FROM alert_subscriptions WHERE panel_id IS ?2) < ?8`,
    )
    .bind(subscription.id, subscription.panelId, JSON.stringify(subscription.kinds), subscription.email, subscription.webhookUrl, subscription.signingSecretEnc, subscription.createdAt, max)
    .run();
  return result.meta.changes === 1;
}

/** The deployment's subscriptions (panel null), or one panel's. */
export async function listAlertSubscriptions(db: ControlDb, panelId: string | null = null): Promise<AlertSubscription[]> {
  const { results } = await db.prepare("SELECT * FROM alert_subscriptions WHERE panel_id IS ? ORDER BY created_at, id").bind(panelId).all<SubscriptionRow>();
  return results.map(subscriptionOf);
}

/** Removes one of the deployment's subscriptions (panel null), or of the panel named; the removed one, or null. */
export async function deleteAlertSubscription(db: ControlDb, id: string, panelId: string | null = null): Promise<AlertSubscription | null> {
  const row = await db.prepare("DELETE FROM alert_subscriptions WHERE id = ? AND panel_id IS ? RETURNING *").bind(id, panelId).first<SubscriptionRow>();
  return row && subscriptionOf(row);
}

/** A subscription with the shards its panel's data is on (its directory entry and partitions; none for the deployment's). */
export interface AlertRecipient extends AlertSubscription {
  shards: number[];
}

/**
 * Who may hear of an announcement, in one statement: the deployment's subscriptions, and those
 * of the panels named, of the panels on (or with partitions on) the shards named, or of every
 * panel; the deployment's first, at most `limit`.
 */
export async function alertRecipients(db: ControlDb, reach: { panels: readonly string[]; shards: readonly number[]; everyPanel: boolean }, limit: number): Promise<AlertRecipient[]> {
  const { results } = await db
    .prepare(
      `SELECT s.*, CASE WHEN s.panel_id IS NULL THEN '[]' ELSE (
           SELECT json_group_array(shard) FROM (SELECT shard FROM panels WHERE id = s.panel_id UNION SELECT shard FROM panel_partitions WHERE panel_id = s.panel_id)
         ) END AS shards
       FROM alert_subscriptions AS s
       WHERE s.panel_id IS NULL OR ?1
          OR s.panel_id IN (SELECT value FROM json_each(?2))
          OR EXISTS (SELECT 1 FROM panels AS p WHERE p.id = s.panel_id AND p.shard IN (SELECT value FROM json_each(?3)))
          OR EXISTS (SELECT 1 FROM panel_partitions AS pp WHERE pp.panel_id = s.panel_id AND pp.shard IN (SELECT value FROM json_each(?3)))
       ORDER BY s.panel_id IS NOT NULL, s.created_at, s.id LIMIT ?4`,
    )
    .bind(reach.everyPanel ? 1 : 0, JSON.stringify(reach.panels), JSON.stringify(reach.shards), limit)
    .all<SubscriptionRow & { shards: string }>();
  return results.map((r) => ({ ...subscriptionOf(r), shards: JSON.parse(r.shards) as number[] }));
}

/** Notes a failed delivery (null clears it after one that went through). */
export async function noteAlertDelivery(db: ControlDb, id: string, error: string | null, at: number): Promise<void> {
  await db.prepare("UPDATE alert_subscriptions SET last_error = ?, last_error_at = ? WHERE id = ?").bind(error, error === null ? null : at, id).run();
}

export interface HeldCondition extends AlertCondition {
  since: number;
}

const CONDITION_COLUMNS = "key, kind, panel_id, detail, since";
type ConditionRow = { key: string; kind: AlertKind; panel_id: string | null; detail: string; since: number };

function heldCondition(r: ConditionRow): HeldCondition {
  return { key: r.key, kind: r.kind, panelId: r.panel_id, detail: r.detail, since: r.since };
}

/** The conditions a check (its scope) holds now. */
export async function heldConditions(db: ControlDb, scope: string): Promise<HeldCondition[]> {
  const { results } = await db.prepare(`SELECT ${CONDITION_COLUMNS} FROM alert_conditions WHERE scope = ?`).bind(scope).all<ConditionRow>();
  return results.map(heldCondition);
}

/** Every condition held now, oldest first (the operations view). */
export async function allHeldConditions(db: ControlDb, limit: number): Promise<HeldCondition[]> {
  const { results } = await db.prepare(`SELECT ${CONDITION_COLUMNS} FROM alert_conditions ORDER BY since, key LIMIT ?`).bind(limit).all<ConditionRow>();
  return results.map(heldCondition);
}

/**
 * Keeps the raised conditions and forgets the cleared ones of a scope, in one batch of two
 * statements (JSON arrays, so any number). A raised key already held (two checks racing) is
 * left as it is; the keys actually inserted are answered, so only one check announces it.
 */
export async function changeConditions(db: ControlDb, scope: string, raised: readonly AlertCondition[], cleared: readonly string[], now: number): Promise<string[]> {
  const rows = JSON.stringify(raised.map((c) => [c.key, c.kind, c.panelId, c.detail]));
  const [inserted] = await db.batch<{ key: string }>([
    db
      .prepare(
        `INSERT INTO alert_conditions (key, scope, kind, panel_id, detail, since)
         SELECT value ->> 0, ?2, value ->> 1, value ->> 2, value ->> 3, ?3 FROM json_each(?1) WHERE true
         ON CONFLICT (key) DO NOTHING RETURNING key`,
      )
      .bind(rows, scope, now),
    db.prepare("DELETE FROM alert_conditions WHERE scope = ?1 AND key IN (SELECT value FROM json_each(?2))").bind(scope, JSON.stringify(cleared)),
  ]);
  return (inserted?.results ?? []).map((r) => r.key);
}
