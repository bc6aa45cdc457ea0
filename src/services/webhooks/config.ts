import type { createWebhookBody, patchWebhookBody } from "../../domain/webhooks/config";
import { encryptSecret } from "../../lib/crypto";
import { config } from "../../lib/config";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import type { z } from "../../lib/z";
import type { ShardDb } from "../../store/shards";
import { deleteWebhook, getWebhook, insertWebhook, replaceWebhookConfig, type Webhook } from "../../store/webhooks";
import { recordAudit, type Auditor } from "../audit/record";
import type { DispatcherStatus, TestReport } from "./dispatcher";
import { forgetWebhooks, webhookDispatcher } from "./enqueue";

// A journey webhook's configuration (CONTRACT 4 and 6) lives in D1, its backlog and delivery in
// its WebhookDispatcher. Passwords and signing secrets are encrypted at rest.

export type NewWebhook = z.output<ReturnType<typeof createWebhookBody>>;
export type WebhookChange = z.output<ReturnType<typeof patchWebhookBody>>;

/** Configures a new webhook; it stays `configured` until it passes its test. */
export async function createWebhook(env: Env, db: ShardDb, panelId: string, body: NewWebhook, by: Auditor): Promise<Webhook> {
  const now = Date.now();
  const webhook: Webhook = {
    id: newId("whk"),
    panelId,
    label: body.label,
    url: body.url,
    username: body.username ?? null,
    passwordEnc: body.password === undefined ? null : await encryptSecret(config(env).secretsKey, body.password),
    signingSecretEnc: body.signing_secret === undefined ? null : await encryptSecret(config(env).secretsKey, body.signing_secret),
    version: body.version,
    alert: body.alert ?? null,
    state: "configured",
    disabledReason: null,
    disabledAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await insertWebhook(db, webhook);
  await recordAudit(db, panelId, by, "webhook.created", webhook.id, { label: webhook.label, url: webhook.url });
  return webhook;
}

/** The webhook as changed, with its dispatcher's status; refused when there is no such webhook (not_found) or the change breaks a rule (invalid). */
export type ChangeWebhookOutcome = Result<{ webhook: Webhook; status: DispatcherStatus }>;

export const noSuchWebhookMessage = (webhookId: string) => `No webhook with id "${webhookId}" in this panel`;
const noSuchWebhook = (webhookId: string) => refused("not_found", [], noSuchWebhookMessage(webhookId));

/** Changes a webhook's settings; null removes credentials, the alert or the signing secret. */
export async function changeWebhook(env: Env, db: ShardDb, panelId: string, webhookId: string, body: WebhookChange, by: Auditor): Promise<ChangeWebhookOutcome> {
  const webhook = await getWebhook(db, panelId, webhookId);
  if (!webhook) return noSuchWebhook(webhookId);
  const next: Webhook = { ...webhook, updatedAt: Date.now() };
  if (body.label !== undefined) next.label = body.label;
  // A new URL makes the webhook `configured` until it passes its test (spec 3): replaceWebhookConfig.
  if (body.url !== undefined) next.url = body.url;
  if (body.username === null) Object.assign(next, { username: null, passwordEnc: null });
  else if (body.username !== undefined) next.username = body.username;
  if (body.password === null) next.passwordEnc = null;
  else if (body.password !== undefined) next.passwordEnc = await encryptSecret(config(env).secretsKey, body.password);
  if (next.passwordEnc !== null && next.username === null) return refusedField("invalid", "password", "needs a username");
  if (body.version !== undefined) next.version = body.version;
  if (body.alert !== undefined) next.alert = body.alert;
  if (body.signing_secret === null) next.signingSecretEnc = null;
  else if (body.signing_secret !== undefined) next.signingSecretEnc = await encryptSecret(config(env).secretsKey, body.signing_secret);
  const stored = await replaceWebhookConfig(db, next);
  if (!stored) return noSuchWebhook(webhookId);
  forgetWebhooks();
  // Which settings changed, with their values except the password and the signing secret.
  const changed = Object.fromEntries(Object.entries(body).map(([name, value]) => [name, name === "password" || name === "signing_secret" ? (value === null ? "removed" : "changed") : value]));
  await recordAudit(db, panelId, by, "webhook.edited", stored.id, { label: stored.label, changed });
  // A delivery run going on stops sending with the old settings.
  return succeeded({ webhook: stored, status: await webhookDispatcher(env, stored.id).configChanged() });
}

/** Deletes a webhook's configuration, then its dispatcher's backlog; refused (not_found) when there is no such webhook. */
export async function removeWebhook(env: Env, db: ShardDb, panelId: string, webhookId: string, by: Auditor): Promise<Result<true>> {
  if (!(await deleteWebhook(db, panelId, webhookId))) return noSuchWebhook(webhookId);
  await recordAudit(db, panelId, by, "webhook.deleted", webhookId);
  forgetWebhooks();
  await webhookDispatcher(env, webhookId).destroy();
  return succeeded(true);
}

/**
 * Sends the webhook's test request; refused (not_found) when there is no such webhook, or its
 * dispatcher finds none (deleted meanwhile).
 */
export async function testWebhook(env: Env, db: ShardDb, panelId: string, webhookId: string): Promise<Result<TestReport>> {
  const webhook = await getWebhook(db, panelId, webhookId);
  if (!webhook) return noSuchWebhook(webhookId);
  const report = await webhookDispatcher(env, webhook.id).testEndpoint({ panelId, webhookId: webhook.id });
  return report.found ? succeeded(report) : noSuchWebhook(webhookId);
}

/** Tests a disabled webhook and, when it passes, turns it back on; with its backlog now. Refused (not_found) as `testWebhook`. */
export async function enableWebhook(env: Env, db: ShardDb, panelId: string, webhookId: string, by: Auditor): Promise<Result<{ report: TestReport; backlog: number }>> {
  const webhook = await getWebhook(db, panelId, webhookId);
  if (!webhook) return noSuchWebhook(webhookId);
  const dispatcher = webhookDispatcher(env, webhook.id);
  const report = await dispatcher.enable({ panelId, webhookId: webhook.id });
  if (!report.found) return noSuchWebhook(webhookId);
  if (report.state === "operational") await recordAudit(db, panelId, by, "webhook.enabled", webhook.id, { label: webhook.label });
  return succeeded({ report, backlog: (await dispatcher.status()).backlog });
}
