import type { ShardDb } from "./shards";
import type { Panel } from "./panels";
import type { AlertFrequency } from "../domain/webhooks/alerts";
import type { PayloadVersion } from "../domain/webhooks/payload";

export const WEBHOOK_STATES = ["configured", "operational", "disabled"] as const;
export type WebhookState = (typeof WEBHOOK_STATES)[number];

export interface Webhook {
  id: string;
  panelId: string;
  label: string;
  url: string;
  username: string | null;
  /** Encrypted (lib/crypto.ts); null when not set. */
  passwordEnc: string | null;
  signingSecretEnc: string | null;
  version: PayloadVersion;
  alert: { emails: string[]; frequency: AlertFrequency } | null;
  state: WebhookState;
  disabledReason: string | null;
  disabledAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** A webhook with what delivery needs of its panel. */
export interface WebhookWithPanel extends Webhook {
  panelName: string;
  panelTimeZone: string;
  panelPrimaryKey: string;
}

interface WebhookRow {
  id: string;
  panel_id: string;
  label: string;
  url: string;
  username: string | null;
  password_enc: string | null;
  signing_secret_enc: string | null;
  version: PayloadVersion;
  alert_emails: string | null;
  alert_frequency: AlertFrequency | null;
  state: WebhookState;
  disabled_reason: string | null;
  disabled_at: number | null;
  created_at: number;
  updated_at: number;
}

const WEBHOOK_COLUMNS =
  "id, panel_id, label, url, username, password_enc, signing_secret_enc, version, alert_emails, alert_frequency, state, disabled_reason, disabled_at, created_at, updated_at";

function webhookFromRow(row: WebhookRow): Webhook {
  return {
    id: row.id,
    panelId: row.panel_id,
    label: row.label,
    url: row.url,
    username: row.username,
    passwordEnc: row.password_enc,
    signingSecretEnc: row.signing_secret_enc,
    version: row.version,
    alert: row.alert_emails && row.alert_frequency ? { emails: JSON.parse(row.alert_emails) as string[], frequency: row.alert_frequency } : null,
    state: row.state,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function rowValues(webhook: Webhook): unknown[] {
  return [
    webhook.id,
    webhook.panelId,
    webhook.label,
    webhook.url,
    webhook.username,
    webhook.passwordEnc,
    webhook.signingSecretEnc,
    webhook.version,
    webhook.alert ? JSON.stringify(webhook.alert.emails) : null,
    webhook.alert?.frequency ?? null,
    webhook.state,
    webhook.disabledReason,
    webhook.disabledAt,
    webhook.createdAt,
    webhook.updatedAt,
  ];
}

export async function insertWebhook(db: ShardDb, webhook: Webhook): Promise<void> {
  await db
    .prepare(`INSERT INTO webhooks (${WEBHOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .bind(...rowValues(webhook))
    .run();
}

export async function getWebhook(db: ShardDb, panelId: string, id: string): Promise<Webhook | null> {
  const row = await db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<WebhookRow>();
  return row ? webhookFromRow(row) : null;
}

export async function listWebhooks(db: ShardDb, panelId: string): Promise<Webhook[]> {
  const { results } = await db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE panel_id = ? ORDER BY created_at, id`).bind(panelId).all<WebhookRow>();
  return results.map(webhookFromRow);
}

/** The webhook with what its payloads say of its panel (read from the directory by the caller). */
export async function getWebhookWithPanel(db: ShardDb, panel: Panel, id: string): Promise<WebhookWithPanel | null> {
  const webhook = await getWebhook(db, panel.id, id);
  return webhook ? { ...webhook, panelName: panel.name, panelTimeZone: panel.timezone, panelPrimaryKey: panel.primaryKey } : null;
}

/**
 * Writes every configurable member of `webhook`; its state is left to the dispatcher, except
 * that a new URL makes it `configured` again (it must pass its test). Deciding that in SQL,
 * from the stored URL, keeps a disable that landed after the caller's read.
 */
export async function replaceWebhookConfig(db: ShardDb, webhook: Webhook): Promise<Webhook | null> {
  const row = await db
    .prepare(
      `UPDATE webhooks SET
         state = CASE WHEN url <> ?2 THEN 'configured' ELSE state END,
         disabled_reason = CASE WHEN url <> ?2 THEN NULL ELSE disabled_reason END,
         disabled_at = CASE WHEN url <> ?2 THEN NULL ELSE disabled_at END,
         label = ?1, url = ?2, username = ?3, password_enc = ?4, signing_secret_enc = ?5, version = ?6,
         alert_emails = ?7, alert_frequency = ?8, updated_at = ?9
       WHERE panel_id = ?10 AND id = ?11 RETURNING ${WEBHOOK_COLUMNS}`,
    )
    // rowValues from label through alert_frequency: ?1 to ?8.
    .bind(...rowValues(webhook).slice(2, 10), webhook.updatedAt, webhook.panelId, webhook.id)
    .first<WebhookRow>();
  return row ? webhookFromRow(row) : null;
}

export async function deleteWebhook(db: ShardDb, panelId: string, id: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM webhooks WHERE panel_id = ? AND id = ?").bind(panelId, id).run();
  return result.meta.changes > 0;
}

/**
 * Moves the webhook to `state` when it is currently in one of `from`; returns the webhook as
 * it is afterwards (null when it does not exist).
 */
export async function setWebhookState(
  db: ShardDb,
  panelId: string,
  id: string,
  change: { state: WebhookState; reason: string | null; from: readonly WebhookState[] },
  now: number,
): Promise<Webhook | null> {
  const [, current] = await db.batch<WebhookRow>([
    db
      .prepare(
        `UPDATE webhooks SET state = ?1, disabled_reason = ?2, disabled_at = CASE WHEN ?1 = 'disabled' THEN ?3 ELSE NULL END, updated_at = ?3
         WHERE panel_id = ?4 AND id = ?5 AND state IN (SELECT value FROM json_each(?6))`,
      )
      .bind(change.state, change.reason, now, panelId, id, JSON.stringify(change.from)),
    db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE panel_id = ? AND id = ?`).bind(panelId, id),
  ]);
  const row = current?.results[0];
  return row ? webhookFromRow(row) : null;
}
