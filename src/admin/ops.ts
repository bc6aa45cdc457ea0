import { alertSubscriptionAnswer, alertSubscriptionListAnswer, deadLetterRedriveAnswer, opsAnswer } from "../domain/answers/deployment";
import { alertSubscriptionBody, CRON_LATE_MS, D1_MAX_BYTES } from "../domain/operations";
import { notFound, unwrap } from "../lib/http/errors";
import type { z } from "../lib/z";
import { redriveDeadLetter } from "../services/dead-letters";
import { subscribeToAlerts, unsubscribePanelFromAlerts } from "../services/operations/alerts";
import { auditorOf } from "./audit";
import { readOperations, type OperationsReading } from "../services/operations/view";
import { deleteAlertSubscription, listAlertSubscriptions, type AlertSubscription } from "../store/operations";
import { shardBindingName } from "../store/shards";
import { isoTime } from "../store/sql";
import { NEEDS } from "../domain/permissions";
import { defineAdminRoute, definePanelRoute } from "./route";

// The deployment's operations view and its alerts (issue 47): for the admin token alone.

type Action = z.input<typeof opsAnswer>["queues"][number]["action"];
const api = (label: string, method: "GET" | "POST", path: string): NonNullable<Action> => ({ label, method, href: `/admin/v1${path}` });
const doc = (label: string, anchor: string): NonNullable<Action> => ({ label, method: null, href: `docs/operations.md#${anchor}` });
const seg = encodeURIComponent;
const isoOrNull = (at: number | null) => (at === null ? null : isoTime(at));

/** A queue whose oldest message waits longer than this shows what to look at. */
const QUEUE_LAG_MS = 5 * 60_000;

/** The answer of GET /ops from what the service read: each item with what fixes it. */
export function opsView(reading: OperationsReading, now: number): z.input<typeof opsAnswer> {
  const lastTick = reading.ticks[0] ?? null;
  const sinceLast = lastTick ? now - lastTick.startedAt : null;
  const cronLate = sinceLast === null || sinceLast > CRON_LATE_MS;
  return {
    region: reading.region,
    generated_at: isoTime(now),
    queues: reading.queues.map((q) => {
      const oldest = q.metrics?.oldestMessageTimestamp && q.metrics.backlogCount > 0 ? new Date(q.metrics.oldestMessageTimestamp).getTime() : null;
      const age = oldest === null ? null : Math.max(0, Math.round((now - oldest) / 1000));
      return {
        binding: q.binding,
        queue: q.queue,
        backlog: q.metrics?.backlogCount ?? null,
        backlog_bytes: q.metrics?.backlogBytes ?? null,
        oldest_message_at: isoOrNull(oldest),
        oldest_message_age_s: age,
        error: q.error,
        action: age !== null && age * 1000 > QUEUE_LAG_MS ? doc("A backlog that does not shrink: its consumer fails or is too slow (wrangler tail)", "the-operations-view-and-alerts") : null,
      };
    }),
    dead_letters: {
      last_24h: reading.deadLetters.recent.map((r) => ({ queue: r.queue, count: r.count, newest_at: isoTime(r.newest) })),
      latest: reading.deadLetters.latest.map((letter) => ({
        id: letter.id,
        queue: letter.queue,
        kind: letter.kind,
        panel_id: letter.panelId,
        attempts: letter.attempts,
        action: letter.action,
        received_at: isoTime(letter.receivedAt),
        redrive: api("Re-drive the work it names", "POST", `/dead-letters/${letter.id}/redrive`),
      })),
    },
    cron: {
      last_tick_at: lastTick ? isoTime(lastTick.startedAt) : null,
      since_last_tick_s: sinceLast === null ? null : Math.round(sinceLast / 1000),
      late: cronLate,
      ticks: reading.ticks.map((t) => ({ scheduled_at: isoTime(t.scheduledAt), started_at: isoTime(t.startedAt), duration_ms: t.durationMs, failed_tasks: t.failedTasks })),
      action: cronLate ? doc("No tick for over 5 minutes: check the Cron Trigger (wrangler triggers) and the Worker's errors", "the-cron") : null,
    },
    shards: reading.shards.map((s) => {
      const share = s.sizeBytes === null ? null : s.sizeBytes / D1_MAX_BYTES;
      return {
        shard: s.index,
        binding: shardBindingName(s.index),
        size_bytes: s.sizeBytes,
        limit_bytes: D1_MAX_BYTES,
        used_share: share,
        panels: s.panels,
        contacts: s.contacts,
        error: s.error,
        action: s.error !== null ? doc("The shard could not be read: check its D1 binding", "shards") : share !== null && share > 0.8 ? doc("Move panels to a shard with room (POST /admin/v1/panels/{panel}/moves) or add a shard", "shards") : null,
      };
    }),
    disabled_webhooks: reading.shards.flatMap((s) =>
      s.webhooks.map((w) => ({
        panel_id: w.panelId,
        shard: s.index,
        id: w.id,
        label: w.label,
        url: w.url,
        reason: w.reason,
        disabled_at: isoOrNull(w.disabledAt),
        action: api("Enable it again once its receiver answers", "POST", `/panels/${seg(w.panelId)}/webhooks/${seg(w.id)}/enable`),
      })),
    ),
    unverified_sender_domains: reading.shards.flatMap((s) =>
      s.domains.map((d) => ({
        panel_id: d.panelId,
        shard: s.index,
        domain: d.domain,
        state: d.state,
        checked_at: isoOrNull(d.checkedAt),
        action: api("Publish its DNS records, then check again", "POST", `/panels/${seg(d.panelId)}/sender-domains/${seg(d.domain)}/verify`),
      })),
    ),
    stuck_jobs: [
      ...reading.shards.flatMap((s) => [
        ...s.imports.map((j) => ({
          kind: "import" as const,
          panel_id: j.panelId,
          id: j.id,
          state: j.phase,
          since: isoTime(j.updatedAt),
          detail: `no progress for over an hour after ${j.attempts} failed attempt(s)${j.lastError ? `: ${j.lastError}` : ""}`,
          action: api("Read the job and its last error; the cron re-drives it while attempts remain", "GET", `/panels/${seg(j.panelId)}/jobs/${seg(j.id)}`),
        })),
        ...s.campaigns.map((c) =>
          c.status === "scheduled"
            ? {
                kind: "campaign_publish" as const,
                panel_id: c.panelId,
                id: c.id,
                state: c.status,
                since: isoTime(c.sendAt),
                detail: `"${c.name}" is not published 10 minutes after its time`,
                action: api("Move it back to draft and schedule it again", "POST", `/panels/${seg(c.panelId)}/campaigns/${seg(c.id)}/unschedule`),
              }
            : {
                kind: "campaign_send" as const,
                panel_id: c.panelId,
                id: c.id,
                state: c.status,
                since: isoTime(c.updatedAt),
                detail: `"${c.name}" has sent nothing for over an hour`,
                action: api("Pause it, then resume it: its unsent batches are nudged again", "POST", `/panels/${seg(c.panelId)}/campaigns/${seg(c.id)}/pause`),
              },
        ),
      ]),
      ...reading.moves.map((m) => ({
        kind: "panel_move" as const,
        panel_id: m.panelId,
        id: m.id,
        state: m.state,
        since: isoTime(m.updatedAt),
        detail: `shard ${m.fromShard} to ${m.toShard}: no step for over 30 minutes after ${m.attempts} attempt(s)${m.error ? `: ${m.error}` : ""}`,
        action: api("Read the move's state and error", "GET", `/panels/${seg(m.panelId)}/moves/${seg(m.id)}`),
      })),
    ],
    alerts: {
      subscriptions: reading.subscriptions,
      holding: reading.holding.map((c) => ({ key: c.key, kind: c.kind, panel_id: c.panelId, detail: c.detail, since: isoTime(c.since) })),
    },
  };
}

const opsRoute = defineAdminRoute({
  method: "GET",
  path: "/ops",
  role: "admin",
  response: opsAnswer,
  summary: "The operations view: queue backlogs, dead letters, cron ticks, shard sizes, disabled webhooks, unverified sender domains and stuck jobs, each with what fixes it",
  async handle({ env }) {
    const now = Date.now();
    return opsView(await readOperations(env, now), now);
  },
});

const redriveRoute = defineAdminRoute({
  method: "POST",
  path: "/dead-letters/:id/redrive",
  role: "admin",
  response: deadLetterRedriveAnswer,
  summary: "Re-drive a dead letter by hand: the work it names goes back through its own re-drive, as the dead-letter queue did",
  async handle({ env, path }) {
    const id = Number(path.id);
    if (!Number.isSafeInteger(id) || id < 1) throw notFound(`No dead letter with id ${path.id}`);
    const redrive = unwrap(await redriveDeadLetter(env, id, Date.now()));
    return { id: redrive.id, kind: redrive.kind, panel_id: redrive.panelId, action: redrive.action };
  },
});

function subscriptionView(s: AlertSubscription): z.input<typeof alertSubscriptionAnswer> {
  return {
    id: s.id,
    kinds: s.kinds,
    email: s.email,
    webhook_url: s.webhookUrl,
    signing_secret_set: s.signingSecretEnc !== null,
    created_at: isoTime(s.createdAt),
    last_error: s.lastError,
    last_error_at: isoOrNull(s.lastErrorAt),
  };
}

const listSubscriptions = defineAdminRoute({
  method: "GET",
  path: "/alerts/subscriptions",
  role: "admin",
  response: alertSubscriptionListAnswer,
  summary: "Who hears of operations alerts, and the last failed delivery of each",
  async handle({ env }) {
    return { subscriptions: (await listAlertSubscriptions(env.DB)).map(subscriptionView) };
  },
});

const subscribe = defineAdminRoute({
  method: "POST",
  path: "/alerts/subscriptions",
  role: "admin",
  status: 201,
  body: alertSubscriptionBody,
  response: alertSubscriptionAnswer,
  summary: "Subscribe an email address or a webhook to operations alerts: webhook disabled, sender domain unverified, dead letters, a shard past 80%, the cron late by over 5 minutes",
  async handle({ env, body }) {
    return subscriptionView(unwrap(await subscribeToAlerts(env, body, Date.now())));
  },
});

const unsubscribe = defineAdminRoute({
  method: "DELETE",
  path: "/alerts/subscriptions/:id",
  role: "admin",
  status: 204,
  raw: { contentType: null, description: "Removed" },
  summary: "Remove an alert subscription",
  async handle({ env, path }) {
    if (!(await deleteAlertSubscription(env.DB, path.id))) throw notFound(`No alert subscription with id "${path.id}"`);
    return new Response(null, { status: 204 });
  },
});

// A panel's owners hear of what concerns their panel (issue 47, item 4): the same subscriptions,
// held by the panel, told of its own conditions, its shards' and the cron's.

const listPanelSubscriptions = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/alerts/subscriptions",
  role: NEEDS.alerts,
  response: alertSubscriptionListAnswer,
  summary: "Who hears of the panel's operations alerts, and the last failed delivery of each",
  async handle({ env, panel }) {
    return { subscriptions: (await listAlertSubscriptions(env.DB, panel.id)).map(subscriptionView) };
  },
});

const subscribePanel = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/alerts/subscriptions",
  role: NEEDS.alerts,
  status: 201,
  body: alertSubscriptionBody,
  response: alertSubscriptionAnswer,
  summary: "Subscribe an email address or a webhook of your own to the panel's alerts: its webhooks disabled, its sender domains unverified, its dead letters, its shard past 80%, the cron late by over 5 minutes",
  async handle({ env, caller, body, panel, db }) {
    return subscriptionView(unwrap(await subscribeToAlerts(env, body, Date.now(), { id: panel.id, db, by: auditorOf(caller) })));
  },
});

const unsubscribePanel = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/alerts/subscriptions/:id",
  role: NEEDS.alerts,
  status: 204,
  raw: { contentType: null, description: "Removed" },
  summary: "Remove one of the panel's alert subscriptions",
  async handle({ env, caller, path, panel, db }) {
    if (!(await unsubscribePanelFromAlerts(env, path.id, { id: panel.id, db, by: auditorOf(caller) }))) throw notFound(`No alert subscription with id "${path.id}" in this panel`);
    return new Response(null, { status: 204 });
  },
});

export const opsRoutes = [opsRoute, redriveRoute, listSubscriptions, subscribe, unsubscribe, listPanelSubscriptions, subscribePanel, unsubscribePanel];
