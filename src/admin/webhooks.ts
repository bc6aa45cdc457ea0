import { webhookAnswer, webhookDeliveriesAnswer, webhookEventsQueuedAnswer, webhookListAnswer, webhookTestAnswer } from "../domain/answers/webhooks";
import { NEEDS } from "../domain/permissions";
import { invalidField, notFound, unwrap } from "../lib/http/errors";
import { nameText } from "../domain/fields";
import { z } from "../lib/z";
import { isoTime } from "../store/sql";
import type { Webhook } from "../store/webhooks";
import { createWebhookBody, patchWebhookBody } from "../domain/webhooks/config";
import {
  changeWebhook,
  createWebhook as configureWebhook,
  enableWebhook as reenableWebhook,
  noSuchWebhookMessage as noSuchWebhook,
  removeWebhook as deleteWebhookConfig,
  testWebhook as testWebhookEndpoint,
} from "../services/webhooks/config";
import type { DispatcherStatus, TestReport } from "../services/webhooks/dispatcher";
import { enqueueWebhookEvents } from "../services/webhooks/enqueue";
import { webhookDeliveries, webhooksWithStatus, webhookWithStatus } from "../services/webhooks/read";
import { describeEventObject, WEBHOOK_CHANNELS } from "../domain/webhooks/payload";
import { auditorOf } from "./audit";
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



const createWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks",
  role: NEEDS.webhooks,
  response: webhookAnswer,
  summary: "Register a journey webhook (state configured until its test gets HTTP 200)",
  status: 201,
  body: createWebhookBody,
  async handle({ env, caller, body, panel, db }) {
    const webhook = await configureWebhook(env, db, panel.id, body, auditorOf(caller));
    return webhookView(webhook, null);
  },
});

const listPanelWebhooks = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks",
  role: NEEDS.read,
  response: webhookListAnswer,
  summary: "The panel's webhooks with their state and backlog",
  async handle({ env, panel, db }) {
    return { webhooks: (await webhooksWithStatus(env, db, panel.id)).map(({ webhook, status }) => webhookView(webhook, status)) };
  },
});

const readWebhook = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id",
  role: NEEDS.read,
  response: webhookAnswer,
  summary: "Read a webhook: state, disabled_reason, backlog (never the password or signing secret)",
  async handle({ env, path, panel, db }) {
    const found = await webhookWithStatus(env, db, panel.id, path.id);
    if (!found) throw notFound(noSuchWebhook(path.id));
    return webhookView(found.webhook, found.status);
  },
});

const patchWebhook = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/webhooks/:id",
  role: NEEDS.webhooks,
  response: webhookAnswer,
  summary: "Change a webhook; null removes credentials, the alert or the signing secret. A new URL must pass the test again",
  body: patchWebhookBody,
  async handle({ env, caller, path, body, panel, db }) {
    const { webhook, status } = unwrap(await changeWebhook(env, db, panel.id, path.id, body, auditorOf(caller)));
    return webhookView(webhook, status);
  },
});

const removeWebhook = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/webhooks/:id",
  role: NEEDS.webhooks,
  status: 204,
  raw: { contentType: null, description: "Deleted" },
  summary: "Delete a webhook with its undelivered backlog and attempt log",
  async handle({ env, caller, path, panel, db }) {
    unwrap(await deleteWebhookConfig(env, db, panel.id, path.id, auditorOf(caller)));
    return new Response(null, { status: 204 });
  },
});

function testAnswer(report: TestReport) {
  return { state: report.state, status: report.status, error: report.error, message: report.message };
}

const testWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/test",
  role: NEEDS.webhooks,
  response: webhookTestAnswer,
  summary: "Send a sample batch; HTTP 200 makes a configured webhook operational",
  async handle({ env, path, panel, db }) {
    return testAnswer(unwrap(await testWebhookEndpoint(env, db, panel.id, path.id)));
  },
});

const enableWebhook = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/enable",
  role: NEEDS.webhooks,
  response: webhookTestAnswer,
  summary: "Re-test; on HTTP 200 the webhook is operational again and its backlog is delivered in order",
  async handle({ env, caller, path, panel, db }) {
    const { report, backlog } = unwrap(await reenableWebhook(env, db, panel.id, path.id, auditorOf(caller)));
    return { ...testAnswer(report), backlog };
  },
});

const listDeliveries = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id/deliveries",
  role: NEEDS.read,
  response: webhookDeliveriesAnswer,
  summary: "Delivery and test attempts, newest first: time, batch id, status or error, duration, first 2 KB of the response",
  query: z.object({
    limit: z.coerce.number().int().min(1).max(500).default(50),
    batch_id: z.string().max(100).optional(),
  }),
  async handle({ env, path, query, panel, db }) {
    const attempts = await webhookDeliveries(env, db, panel.id, path.id, query.limit, query.batch_id);
    if (!attempts) throw notFound(noSuchWebhook(path.id));
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
  role: NEEDS.webhooks,
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
    const { accepted, duplicates } = unwrap(await enqueueWebhookEvents(env, path.panel, path.id, describe));
    return { accepted, duplicates };
  },
});

export const webhookRoutes = [createWebhook, listPanelWebhooks, readWebhook, patchWebhook, removeWebhook, testWebhook, enableWebhook, listDeliveries, queueEvents];
