import { webhookAnswer, webhookDeliveriesAnswer, webhookEventsQueuedAnswer, webhookListAnswer, webhookTestAnswer } from "../domain/answers/webhooks";
import { invalidField, notFound, orNotFound } from "../lib/http/errors";
import { encryptSecret } from "../lib/crypto";
import { newId } from "../lib/random";
import { nameText } from "../domain/fields";
import { z } from "../lib/z";
import type { ShardDb } from "../store/shards";
import type { Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { deleteWebhook, getWebhook, insertWebhook, listWebhooks, replaceWebhookConfig, type Webhook } from "../store/webhooks";
import { createWebhookBody, patchWebhookBody } from "../domain/webhooks/config";
import type { DispatcherStatus } from "../services/webhooks/dispatcher";
import { enqueueWebhookEvents, forgetWebhooks, webhookDispatcher, WebhookEventError } from "../services/webhooks/enqueue";
import { describeEventObject, WEBHOOK_CHANNELS } from "../domain/webhooks/payload";
import { audited } from "./audit";
import { defineAdminRoute, definePanelRoute } from "./route";

// Journey webhooks (CONTRACT 4 and 6): configuration in D1, backlog and delivery in the
// webhook's WebhookDispatcher. Passwords and signing secrets are encrypted at rest and never
// appear in an answer.

// Members holding JSON values take them as parsed: the body was JSON, so they are JSON values
// already, and checking them recursively costs more than the rest of the hand-over.
const jsonObject = z.record(z.string().max(200), z.unknown());

const eventObject = z
  .object({
    channel: z.enum(WEBHOOK_CHANNELS, { error: `must be one of ${WEBHOOK_CHANNELS.join(", ")}` }),
    event: z.string().max(100).optional(),
    msgid: z.string().max(200).optional(),
    journey_name: nameText(200),
    // Written by the service (the webhook's label); accepted so a received object can be replayed.
    webhook_name: z.string().max(200).optional(),
    custom_params: jsonObject.optional(),
    att_params: jsonObject.optional(),
    udt_params: z.record(z.string().max(200), z.string().max(2048)).optional(),
    event_params: jsonObject.optional(),
    payload_params: jsonObject.optional(),
  })
  .strict();

const eventsBody = z.object({ events: z.array(eventObject).min(1, { error: "must hold at least one event" }).max(1000) }).strict();

function webhookView(webhook: Webhook, status: DispatcherStatus | null) {
  return {
    id: webhook.id,
    label: webhook.label,
    url: webhook.url,
    username: webhook.username,
    password_set: webhook.passwordEnc !== null,
    signing_secret_set: webhook.signingSecretEnc !== null,
    version: webhook.version,
    alert: webhook.alert,
    state: webhook.state,
    disabled_reason: webhook.disabledReason,
    disabled_at: webhook.disabledAt === null ? null : isoTime(webhook.disabledAt),
    backlog: status?.backlog ?? 0,
    backlog_oldest_at: status?.oldestAt ? isoTime(status.oldestAt) : null,
    in_flight: status?.inFlight
      ? {
          batch_id: status.inFlight.batchId,
          events: status.inFlight.events,
          failed_attempts: status.inFlight.failures,
          next_attempt_at: isoTime(status.inFlight.nextAttemptAt),
        }
      : null,
    dropped: status?.dropped ?? 0,
    created_at: isoTime(webhook.createdAt),
    updated_at: isoTime(webhook.updatedAt),
  };
}

const noSuchWebhook = (id: string) => `No webhook with id "${id}" in this panel`;

function requireWebhook(db: ShardDb, panel: Panel, id: string): Promise<Webhook> {
  return orNotFound(getWebhook(db, panel.id, id), noSuchWebhook(id));
}

const createWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks",
  role: "marketer",
  response: webhookAnswer,
  summary: "Register a journey webhook (state configured until its test gets HTTP 200)",
  status: 201,
  body: createWebhookBody,
  async handle({ env, caller, body, panel, db }) {
    const now = Date.now();
    const webhook: Webhook = {
      id: newId("whk"),
      panelId: panel.id,
      label: body.label,
      url: body.url,
      username: body.username ?? null,
      passwordEnc: body.password === undefined ? null : await encryptSecret(env.SECRETS_KEY, body.password),
      signingSecretEnc: body.signing_secret === undefined ? null : await encryptSecret(env.SECRETS_KEY, body.signing_secret),
      version: body.version,
      alert: body.alert ?? null,
      state: "configured",
      disabledReason: null,
      disabledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await insertWebhook(db, webhook);
    await audited({ db, caller, panel }, "webhook.created", webhook.id, { label: webhook.label, url: webhook.url });
    return webhookView(webhook, null);
  },
});

const listPanelWebhooks = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks",
  role: "viewer",
  response: webhookListAnswer,
  summary: "The panel's webhooks with their state and backlog",
  async handle({ env, panel, db }) {
    const webhooks = await listWebhooks(db, panel.id);
    const statuses = await Promise.all(webhooks.map((w) => webhookDispatcher(env, w.id).status()));
    return { webhooks: webhooks.map((w, i) => webhookView(w, statuses[i]!)) };
  },
});

const readWebhook = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id",
  role: "viewer",
  response: webhookAnswer,
  summary: "Read a webhook: state, disabled_reason, backlog (never the password or signing secret)",
  async handle({ env, path, panel, db }) {
    const webhook = await requireWebhook(db, panel, path.id);
    return webhookView(webhook, await webhookDispatcher(env, webhook.id).status());
  },
});

const patchWebhook = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/webhooks/:id",
  role: "marketer",
  response: webhookAnswer,
  summary: "Change a webhook; null removes credentials, the alert or the signing secret. A new URL must pass the test again",
  body: patchWebhookBody,
  async handle({ env, caller, path, body, panel, db }) {
    const webhook = await requireWebhook(db, panel, path.id);
    const next: Webhook = { ...webhook, updatedAt: Date.now() };
    if (body.label !== undefined) next.label = body.label;
    // A new URL makes the webhook `configured` until it passes its test (spec 3): replaceWebhookConfig.
    if (body.url !== undefined) next.url = body.url;
    if (body.username === null) Object.assign(next, { username: null, passwordEnc: null });
    else if (body.username !== undefined) next.username = body.username;
    if (body.password === null) next.passwordEnc = null;
    else if (body.password !== undefined) next.passwordEnc = await encryptSecret(env.SECRETS_KEY, body.password);
    if (next.passwordEnc !== null && next.username === null) throw invalidField("password", "needs a username");
    if (body.version !== undefined) next.version = body.version;
    if (body.alert !== undefined) next.alert = body.alert;
    if (body.signing_secret === null) next.signingSecretEnc = null;
    else if (body.signing_secret !== undefined) next.signingSecretEnc = await encryptSecret(env.SECRETS_KEY, body.signing_secret);
    const stored = await replaceWebhookConfig(db, next);
    if (!stored) throw notFound(noSuchWebhook(path.id));
    forgetWebhooks();
    // Which settings changed, with their values except the password and the signing secret.
    const changed = Object.fromEntries(Object.entries(body).map(([name, value]) => [name, name === "password" || name === "signing_secret" ? (value === null ? "removed" : "changed") : value]));
    await audited({ db, caller, panel }, "webhook.edited", stored.id, { label: stored.label, changed });
    return webhookView(stored, await webhookDispatcher(env, stored.id).status());
  },
});

const removeWebhook = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/webhooks/:id",
  role: "marketer",
  status: 204,
  raw: { contentType: null, description: "Deleted" },
  summary: "Delete a webhook with its undelivered backlog and attempt log",
  async handle({ env, caller, path, panel, db }) {
    if (!(await deleteWebhook(db, panel.id, path.id))) throw notFound(noSuchWebhook(path.id));
    await audited({ db, caller, panel }, "webhook.deleted", path.id);
    forgetWebhooks();
    await webhookDispatcher(env, path.id).destroy();
    return new Response(null, { status: 204 });
  },
});

function testAnswer(report: Awaited<ReturnType<ReturnType<typeof webhookDispatcher>["testEndpoint"]>>, id: string) {
  if (!report.found) throw notFound(noSuchWebhook(id));
  return { state: report.state, status: report.status, error: report.error, message: report.message };
}

const testWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/test",
  role: "marketer",
  response: webhookTestAnswer,
  summary: "Send a sample batch; HTTP 200 makes a configured webhook operational",
  async handle({ env, path, panel, db }) {
    const webhook = await requireWebhook(db, panel, path.id);
    return testAnswer(await webhookDispatcher(env, webhook.id).testEndpoint({ panelId: panel.id, webhookId: webhook.id }), path.id);
  },
});

const enableWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/enable",
  role: "marketer",
  response: webhookTestAnswer,
  summary: "Re-test; on HTTP 200 the webhook is operational again and its backlog is delivered in order",
  async handle({ env, caller, path, panel, db }) {
    const webhook = await requireWebhook(db, panel, path.id);
    const dispatcher = webhookDispatcher(env, webhook.id);
    const answer = testAnswer(await dispatcher.enable({ panelId: panel.id, webhookId: webhook.id }), path.id);
    if (answer.state === "operational") await audited({ db, caller, panel }, "webhook.enabled", webhook.id, { label: webhook.label });
    return { ...answer, backlog: (await dispatcher.status()).backlog };
  },
});

const listDeliveries = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id/deliveries",
  role: "viewer",
  response: webhookDeliveriesAnswer,
  summary: "Delivery and test attempts, newest first: time, batch id, status or error, duration, first 2 KB of the response",
  query: z.object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    batch_id: z.string().max(100).optional(),
  }),
  async handle({ env, path, query, panel, db }) {
    const webhook = await requireWebhook(db, panel, path.id);
    const attempts = await webhookDispatcher(env, webhook.id).deliveries(query.limit, query.batch_id);
    return {
      deliveries: attempts.map((a) => ({
        at: isoTime(a.at),
        kind: a.kind,
        batch_id: a.batchId,
        events: a.events,
        status: a.status,
        error: a.error,
        error_message: a.errorMessage,
        duration_ms: a.durationMs,
        response: a.response,
        outcome: a.outcome,
        next_attempt_at: a.nextAttemptAt === null ? null : isoTime(a.nextAttemptAt),
      })),
    };
  },
});

// Not a panel route: the webhook's lookup (cached, see WEBHOOK_CACHE_MS) carries its panel, so a
// hand-over pays no panel read, and an unknown panel answers as an unknown webhook.
const queueEvents = defineAdminRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/events",
  role: "marketer",
  response: webhookEventsQueuedAnswer,
  summary: "Queue event objects (spec 2.8) for delivery exactly as journey events are",
  status: 202,
  body: eventsBody,
  async handle({ env, path, body }) {
    const now = Date.now();
    // Times (`event_params.ts`) are read in the panel's zone, known once the webhook is loaded.
    const describe = (webhook: { panelTimeZone: string }) =>
      body.events.map((object, index) => {
        const described = describeEventObject(object, webhook.panelTimeZone, now);
        if (!described.ok) throw invalidField(`events.${index}.${described.field}`, described.message);
        return described.event;
      });
    try {
      const outcome = await enqueueWebhookEvents(env, path.panel, path.id, describe);
      if (!outcome.found) throw notFound(noSuchWebhook(path.id));
      return { accepted: outcome.accepted, duplicates: outcome.duplicates };
    } catch (error) {
      if (error instanceof WebhookEventError) throw invalidField(`events.${error.index}.${error.field}`, error.reason);
      throw error;
    }
  },
});

export const webhookRoutes = [createWebhook, listPanelWebhooks, readWebhook, patchWebhook, removeWebhook, testWebhook, enableWebhook, listDeliveries, queueEvents];
