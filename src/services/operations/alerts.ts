import {
  ALERT_KINDS,
  alertReach,
  concerns,
  conditionChanges,
  CRON_LATE_MS,
  cronLateness,
  D1_MAX_BYTES,
  DEAD_LETTER_WINDOW_MS,
  FINDINGS_PER_KIND,
  MAX_ALERT_DELIVERIES,
  MAX_ALERT_SUBSCRIPTIONS,
  MAX_PANEL_ALERT_SUBSCRIPTIONS,
  shardFull,
  type AlertCondition,
  type AlertKind,
  type AlertSubscriptionBody,
} from "../../domain/operations";
import { config } from "../../lib/config";
import { decryptSecret, encryptSecret } from "../../lib/crypto";
import { fetchOutbound } from "../../lib/outbound";
import { refused, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import type { CronTask } from "../../lib/tasks";
import { deadLetterPanelsSince, deadLettersSince } from "../../store/dead-letters";
import { alertRecipients, changeConditions, deleteAlertSubscription, heldConditions, insertAlertSubscription, lastCronTicks, noteAlertDelivery, type AlertSubscription } from "../../store/operations";
import { disabledWebhooks, shardUsage, unverifiedSenderDomains } from "../../store/operations-findings";
import type { ShardDb } from "../../store/shards";
import { shardTask } from "../access/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { sendTransactional } from "../channels/mailer";
import { signatureHeaders } from "../webhooks/signing";

/**
 * Operations alerts (issue 47): the cron checks the conditions an operator should hear of, keeps
 * those that hold in `alert_conditions`, and tells every subscription of a kind once when a
 * condition first holds; a condition that clears is forgotten, so its return is told again.
 * The control database's conditions (dead letters, a late cron) are checked in the tick itself
 * in a fixed few queries; each shard's (webhooks disabled, sender domains failing their check,
 * the shard past 80% of D1's size) in the shard's own CRON message.
 */

/** A webhook subscriber gets the answer within this, or the delivery counts as failed (and is not retried). */
const WEBHOOK_TIMEOUT_MS = 10_000;

/** The panel a subscription is held by, with its shard (its audit log) and who acts. */
export interface AlertPanel {
  id: string;
  db: ShardDb;
  by: Auditor;
}

/** Where a subscription posts or mails, for the audit log (a URL without its query, which may hold a token). */
function destination(subscription: Pick<AlertSubscription, "email" | "webhookUrl">): string {
  if (subscription.email !== null) return subscription.email;
  const url = new URL(subscription.webhookUrl!);
  return `${url.origin}${url.pathname}`;
}

/**
 * Adds a subscription, the deployment's (no panel: every condition) or a panel's owners' (the
 * conditions of their panel, its shards and the cron; audited); its signing secret is kept
 * encrypted and never shown again.
 */
export async function subscribeToAlerts(env: Env, body: AlertSubscriptionBody, now: number, panel?: AlertPanel): Promise<Result<AlertSubscription>> {
  const subscription = {
    id: newId("als"),
    panelId: panel?.id ?? null,
    kinds: ALERT_KINDS.filter((kind) => body.kinds.includes(kind)),
    email: body.email ?? null,
    webhookUrl: body.webhook?.url ?? null,
    signingSecretEnc: body.webhook?.signing_secret === undefined ? null : await encryptSecret(config(env).secretsKey, body.webhook.signing_secret),
    createdAt: now,
  };
  const max = panel ? MAX_PANEL_ALERT_SUBSCRIPTIONS : MAX_ALERT_SUBSCRIPTIONS;
  if (!(await insertAlertSubscription(env.DB, subscription, max))) {
    return refused("conflict", [], `The ${panel ? "panel" : "deployment"} holds ${max} alert subscriptions already; remove one first`);
  }
  if (panel) await recordAudit(panel.db, panel.id, panel.by, "alert_subscription.added", subscription.id, { to: destination(subscription), kinds: subscription.kinds });
  return succeeded({ ...subscription, lastError: null, lastErrorAt: null });
}

/** Removes one of the panel's subscriptions (audited); false when the panel holds none of that id. */
export async function unsubscribePanelFromAlerts(env: Env, id: string, panel: AlertPanel): Promise<boolean> {
  const removed = await deleteAlertSubscription(env.DB, id, panel.id);
  if (removed) await recordAudit(panel.db, panel.id, panel.by, "alert_subscription.removed", id, { to: destination(removed), kinds: removed.kinds });
  return removed !== null;
}

/** What one check found and what it changed: the conditions raised (announced) and the keys cleared. */
export interface CheckOutcome {
  raised: AlertCondition[];
  cleared: string[];
}

/**
 * Compares a scope's findings with what it holds, keeps the change, and tells the subscribers
 * of the raised conditions' kinds (one message per subscription per check, whatever the number).
 */
async function settle(env: Env, scope: string, found: AlertCondition[], now: number): Promise<CheckOutcome> {
  const held = await heldConditions(env.DB, scope);
  const { raised, cleared } = conditionChanges(
    held.map((c) => c.key),
    found,
  );
  if (raised.length === 0 && cleared.length === 0) return { raised, cleared };
  const inserted = new Set(await changeConditions(env.DB, scope, raised, cleared, now));
  const announced = raised.filter((condition) => inserted.has(condition.key));
  if (announced.length) await announce(env, announced, now);
  return { raised: announced, cleared };
}

/**
 * Delivers the conditions to each subscription of their kinds they concern (domain `concerns`):
 * the recipients are read in one statement whatever the number of panels; a failed delivery is
 * noted on the subscription, never retried.
 */
async function announce(env: Env, conditions: AlertCondition[], now: number): Promise<void> {
  const recipients = await alertRecipients(env.DB, alertReach(conditions), MAX_ALERT_DELIVERIES + 1);
  if (recipients.length > MAX_ALERT_DELIVERIES) {
    console.error(`operations alert ${conditions.map((c) => c.key).join(", ")}: over ${MAX_ALERT_DELIVERIES} subscriptions concerned; the ones past that are not told`);
  }
  const deliveries = recipients.slice(0, MAX_ALERT_DELIVERIES).flatMap((recipient) => {
    const mine = conditions.filter((condition) => recipient.kinds.includes(condition.kind) && concerns(condition, recipient));
    return mine.length ? [{ recipient, mine }] : [];
  });
  // A few at a time: a Worker keeps six connections open at once, the rest would only wait.
  for (let start = 0; start < deliveries.length; start += DELIVERIES_AT_ONCE) {
    await Promise.all(
      deliveries.slice(start, start + DELIVERIES_AT_ONCE).map(async ({ recipient, mine }) => {
        try {
          await deliver(env, recipient, mine, now);
          if (recipient.lastError !== null) await noteAlertDelivery(env.DB, recipient.id, null, now);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          console.error(`operations alert to subscription ${recipient.id} failed: ${message}`);
          await noteAlertDelivery(env.DB, recipient.id, message.slice(0, 500), now);
        }
      }),
    );
  }
}

/** Deliveries in flight at once. */
const DELIVERIES_AT_ONCE = 6;

const TITLES: Record<AlertKind, string> = {
  webhook_disabled: "webhook disabled",
  sender_domain_unverified: "sender domain no longer verified",
  dead_letters: "dead letters",
  shard_full: "shard past 80% of its size",
  cron_late: "cron late",
};

const OPS_VIEW_NOTE = "The operations view (GET /admin/v1/ops, or the panel's /ops page) shows each with what fixes it.";
const PANEL_NOTE = "The panel's Webhooks and Sender domains screens fix what is the panel's; a full shard, dead letters or a late cron are also told to the deployment's operator.";

async function deliver(env: Env, subscription: AlertSubscription, conditions: AlertCondition[], now: number): Promise<void> {
  const region = config(env).region;
  if (subscription.email !== null) {
    const kinds = [...new Set(conditions.map((c) => TITLES[c.kind]))].join(", ");
    const lines = conditions.map((c) => `- ${TITLES[c.kind]}${c.panelId ? ` (panel ${c.panelId})` : ""}: ${c.detail}`);
    await sendTransactional(env, {
      from: config(env).mailFrom,
      to: subscription.email,
      subject: `[apiv2 ${region}] ${kinds}`,
      text: `${lines.join("\n")}\n\n${subscription.panelId === null ? OPS_VIEW_NOTE : PANEL_NOTE} You hear of a condition once; again only after it cleared and came back.\n`,
    });
    return;
  }
  const id = newId("alr");
  const body = JSON.stringify({
    type: "ops.alert",
    id,
    region,
    at: new Date(now).toISOString(),
    alerts: conditions.map((c) => ({ kind: c.kind, key: c.key, panel_id: c.panelId, detail: c.detail })),
  });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (subscription.signingSecretEnc !== null) Object.assign(headers, signatureHeaders(await decryptSecret(config(env).secretsKey, subscription.signingSecretEnc), id, now, body));
  const response = await fetchOutbound(env, subscription.webhookUrl!, { method: "POST", headers, body }, { timeoutMs: WEBHOOK_TIMEOUT_MS });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`the webhook answered HTTP ${response.status}`);
}

/** The oldest message on the CRON queue, when the runtime tells (Queue.metrics); null otherwise. */
async function oldestCronMessage(queue: Queue): Promise<number | null> {
  try {
    const metrics = await queue.metrics();
    return metrics.backlogCount > 0 && metrics.oldestMessageTimestamp ? new Date(metrics.oldestMessageTimestamp).getTime() : null;
  } catch {
    return null;
  }
}

/** The tick's own check (control database): dead letters in the last hour, and the cron running late. */
export async function checkControlAlerts(env: Env, scheduledAt: number, startedAt: number): Promise<CheckOutcome> {
  const [ticks, letters, oldestCron] = await Promise.all([lastCronTicks(env.DB, 1), deadLettersSince(env.DB, startedAt - DEAD_LETTER_WINDOW_MS), oldestCronMessage(env.CRON)]);
  const found: AlertCondition[] = [];
  if (letters.length) {
    const summary = letters.map((l) => `${l.count} from ${l.queue}`).join(", ");
    found.push({ key: "dead_letters", kind: "dead_letters", panelId: null, detail: `dead letters in the last hour: ${summary}` });
    // Each panel's own, for its owners (one more query, only while there are letters).
    for (const panel of await deadLetterPanelsSince(env.DB, startedAt - DEAD_LETTER_WINDOW_MS, FINDINGS_PER_KIND)) {
      const detail = `${panel.count} dead letter(s) of this panel in the last hour, from ${panel.queues.join(", ")}: its work there failed every retry`;
      found.push({ key: `dead_letters:${panel.panelId}`, kind: "dead_letters", panelId: panel.panelId, detail });
    }
  }
  // The tick before this one: ticks record themselves once done, so this tick is not among them yet.
  const previous = ticks[0]?.scheduledAt === scheduledAt ? null : (ticks[0]?.startedAt ?? null);
  const late = cronLateness({ scheduledAt, startedAt }, previous, oldestCron);
  if (late > CRON_LATE_MS) found.push({ key: "cron_late", kind: "cron_late", panelId: null, detail: `the cron runs ${Math.round(late / 60_000)} minutes late` });
  return settle(env, "control", found, startedAt);
}

/** One shard's check: its disabled webhooks, sender domains that failed their check, and its size. */
export async function checkShardAlerts(env: Env, db: ShardDb, index: number, now: number, limitBytes = D1_MAX_BYTES): Promise<CheckOutcome> {
  const [webhooks, domains, usage] = await Promise.all([disabledWebhooks(db, FINDINGS_PER_KIND), unverifiedSenderDomains(db, FINDINGS_PER_KIND), shardUsage(db)]);
  const found: AlertCondition[] = [
    ...webhooks.map((w) => ({
      key: `webhook_disabled:${w.panelId}:${w.id}`,
      kind: "webhook_disabled" as const,
      panelId: w.panelId,
      detail: `webhook "${w.label}" (${w.id}) to ${w.url} is disabled${w.reason ? `: ${w.reason}` : ""}`,
    })),
    ...domains
      .filter((d) => d.state === "failed")
      .map((d) => ({
        key: `sender_domain_unverified:${d.panelId}:${d.domain}`,
        kind: "sender_domain_unverified" as const,
        panelId: d.panelId,
        detail: `sender domain ${d.domain} failed its last DNS check: its mail is refused until it passes again`,
      })),
  ];
  if (shardFull(usage.sizeBytes, limitBytes)) {
    const share = Math.round((usage.sizeBytes / limitBytes) * 100);
    found.push({ key: `shard_full:${index}`, kind: "shard_full", panelId: null, shard: index, detail: `shard ${index} holds ${usage.sizeBytes} bytes, ${share}% of its ${limitBytes}` });
  }
  return settle(env, `shard:${index}`, found, now);
}

/** The tick's alert check, in the tick (a handful of control-database queries, none per shard or panel). */
export const controlAlertsTask: CronTask = {
  name: "ops.alerts",
  run: async (env, now) => void (await checkControlAlerts(env, now, Date.now())),
};

/** Each shard's alert check, handed out one CRON message per shard. */
export const shardAlertsTask: CronTask = shardTask("ops.shard-alerts", async (env, db, index, now) => void (await checkShardAlerts(env, db, index, now)));
