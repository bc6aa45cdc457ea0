import { findPanelHome } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import { recordEvents } from "../pipeline/record";
import { fcmUrls, sendFcm } from "../channels/push/fcm";
import type { PushDelivery } from "../channels/push/delivery";
import { panelPush, type PanelPush } from "../channels/push/settings";
import { sendWebPush } from "../channels/push/web-push";
import type { AttributeValue } from "../../domain/attributes";
import type { NewEvent } from "../../domain/events";
import { personalize } from "../../domain/merge-tags";
import { pushPayload } from "../../domain/push";
import { noPushDevice, PUSH_TURNED_OFF, tokenBeyondInstalls } from "../../domain/send-skips";
import { randomHex } from "../../lib/random";
import { settleEach } from "../../lib/tasks";
import {
  claimedOf,
  claimQueuedStatements,
  insertMessageStatement,
  releaseClaimedStatement,
  settleClaimedStatement,
  UNKNOWN_SEND_OUTCOME,
  type ClaimedMessage,
  type JourneyMessage,
} from "../../store/journeys/messages";
import type { Panel } from "../../store/panels";
import { pushOptedOut } from "../../store/preferences";
import { deletePushSubscriptionStatement, pushSubscriptionsOf, type PushSubscription } from "../../store/push";
import type { ShardDb } from "../../store/shards";
import {
  enqueueNudges,
  isQueuedNudge,
  messageOutcomeEvent,
  outcomeList,
  QUEUED_CLAIM_MS,
  redriveWaiting,
  sendNudges,
  sendRetryDelaySeconds,
  type Limit,
  type NudgeDelivery,
  type QueuedNudge,
} from "./queued-sends";
import { metrics } from "../../lib/observability/metrics";
import { config } from "../../lib/config";

/**
 * Journey push: bpn through web push (the panel's VAPID keys, to every browser the contact
 * subscribed), apn through FCM (to every app install that registered a token, and the contact's
 * PUSH_TOKEN attribute). Without the channel set up, the message goes to the outbox as before
 * (recorded; delivered and click come back through `POST /v1/events/{channel}`). With it, the
 * message waits for a nudge on the SENDS queue as SMS does (queued-sends.ts). A device the push
 * service reports gone is removed; the message counts as sent when one device took it.
 */

/** Why a push step sent nothing to a contact who turned push notifications off (one text with the simulation: domain/send-skips.ts). */
export { PUSH_TURNED_OFF };

export type PushNudge = QueuedNudge<"push">;

export const isPushNudge = (body: unknown): body is PushNudge => isQueuedNudge(body, "push");

export function enqueuePush(env: Pick<Env, "SENDS">, panelId: string, msgids: readonly string[], delaySeconds = 0, shard?: number): Promise<void> {
  return enqueueNudges(env, "push", panelId, msgids, delaySeconds, shard);
}

/** What the step records for its push message, and whether it waits for a nudge. */
export interface PlannedPush {
  message: JourneyMessage;
  statements: D1PreparedStatement[];
  /** The message's insert: what it returns tells whether it was recorded. */
  insert: D1PreparedStatement;
  queued: boolean;
}

function sendsChannel(push: PanelPush, channel: JourneyMessage["channel"]): boolean {
  return channel === "bpn" ? push.web !== null : channel === "apn" ? push.fcm !== null : false;
}

/** `config`: where the panel's push setup is, its home when `db` is a partition's shard (decision 0038). */
export async function planJourneyPush(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, message: JourneyMessage, attributes: Readonly<Record<string, AttributeValue>>, config: ShardDb = db): Promise<PlannedPush> {
  const [optedOut, push] = await Promise.all([pushOptedOut(db, message.panelId, message.contactId), panelPush(env, config, message.panelId)]);
  // Filled here, as SMS is: the recorded message is what the device is sent (or, on the outbox, would be).
  const filled = { ...message, content: { ...message.content, ...filledPush(message.content, attributes) } };
  let planned: JourneyMessage;
  if (optedOut) planned = { ...filled, status: "skipped", error: PUSH_TURNED_OFF };
  else if (!sendsChannel(push, message.channel)) planned = filled;
  else {
    const token = attributes.PUSH_TOKEN;
    planned = { ...filled, status: "sending", content: { ...filled.content, ...(message.channel === "apn" && typeof token === "string" && token ? { token } : {}) } };
  }
  const insert = insertMessageStatement(db, planned);
  return { message: planned, statements: [insert], insert, queued: planned.status === "sending" };
}

/** A push step's title and text with their merge tags filled with the contact's attributes. */
function filledPush(content: Readonly<Record<string, unknown>>, attributes: Readonly<Record<string, AttributeValue>>): Record<string, string> {
  const filled: Record<string, string> = {};
  for (const field of ["title", "text"] as const) {
    const source = content[field];
    if (typeof source === "string") filled[field] = personalize(source, attributes, "plain");
  }
  return filled;
}

export type PushSendEnv = Env;

export function sendQueuedPushBatch(env: PushSendEnv, deliveries: readonly NudgeDelivery<"push">[], now = Date.now()): Promise<Array<number | null>> {
  return sendNudges(deliveries, (panelId, attempts, limit, shard) => sendPanelPush(env, panelId, attempts, now, limit, shard));
}

/** One message, as sendQueuedPushBatch sends it. */
export async function sendQueuedPush(env: PushSendEnv, panelId: string, msgid: string, attempt: number, now = Date.now()): Promise<number | null> {
  const [retry] = await sendQueuedPushBatch(env, [{ nudge: { kind: "push", panelId, msgids: [msgid] }, attempt }], now);
  return retry ?? null;
}

/** The devices a claimed message goes to: web subscriptions for bpn; FCM tokens (and the PUSH_TOKEN attribute) for apn. */
async function devicesOf(db: ShardDb, panelId: string, claimed: readonly ClaimedMessage[]): Promise<Map<string, PushSubscription[]>> {
  const contacts = (channel: "apn" | "bpn") => claimed.filter((m) => m.channel === channel).map((m) => m.contactId);
  const [web, app] = await Promise.all([pushSubscriptionsOf(db, panelId, "web", contacts("bpn")), pushSubscriptionsOf(db, panelId, "app", contacts("apn"))]);
  const devices = new Map<string, PushSubscription[]>();
  for (const message of claimed) {
    const list = [...((message.channel === "bpn" ? web : app).get(message.contactId) ?? [])];
    const token = message.channel === "apn" ? tokenBeyondInstalls(list, message.content.token) : null;
    if (token) list.push({ panelId, kind: "app", address: token, p256dh: null, auth: null, platform: null, contactKey: null, uniqueid: null });
    devices.set(message.msgid, list);
  }
  return devices;
}

async function sendPanelPush(env: PushSendEnv, panelId: string, attempts: ReadonlyMap<string, number>, now: number, limit: Limit, shard?: number): Promise<Map<string, number>> {
  const retries = new Map<string, number>();
  const home = await findPanelHome(env, panelId);
  if (!home) return retries;
  // The messages are on the shard the nudge names (their contacts' partition's); the setup on the home.
  const { panel } = home;
  const { db } = namedPanelShard(env, panel, shard);
  const claim = randomHex(8);
  const [push, answers] = await Promise.all([
    panelPush(env, home.db, panelId),
    db.batch<Record<string, any>>(claimQueuedStatements(db, panelId, ["apn", "bpn"], [...attempts.keys()], claim, now, now - QUEUED_CLAIM_MS, UNKNOWN_SEND_OUTCOME)),
  ]);
  const { claimed, held } = claimedOf(answers);
  for (const msgid of held) retries.set(msgid, QUEUED_CLAIM_MS / 1000);
  if (claimed.length === 0) return retries;
  const devices = await devicesOf(db, panelId, claimed);
  const statements: D1PreparedStatement[] = [];
  const failed: NewEvent[] = [];
  const { outcomes, settle } = outcomeList();
  const settled = await settleEach(claimed, claimed.length, async (message) => {
    if (!sendsChannel(push, message.channel)) return settle(message, { status: "skipped", error: `the panel's ${message.channel === "bpn" ? "web push" : "FCM"} setup was removed` });
    const targets = devices.get(message.msgid) ?? [];
    if (targets.length === 0) {
      return settle(message, { status: "skipped", error: noPushDevice(message.channel === "bpn" ? "bpn" : "apn") });
    }
    const payload = pushPayload(message.content, message.msgid, panel.name, reportUrl(env, panel, message.channel));
    const results = await Promise.all(targets.map((device) => limit.run(() => deliver(env, push, device, payload, now))));
    results.forEach((result, i) => {
      if (!result.ok && result.gone) statements.push(deletePushSubscriptionStatement(db, panelId, targets[i]!.kind, targets[i]!.address));
    });
    const taken = results.find((r): r is Extract<PushDelivery, { ok: true }> => r.ok);
    if (taken) {
      metrics(env).message(message.channel, "sent");
      return settle(message, { status: "sent", providerMessageId: taken.id });
    }
    const failures = results as Array<Extract<PushDelivery, { ok: false }>>;
    const error = [...new Set(failures.map((f) => f.error))].join("; ");
    if (!failures.some((f) => f.retryable)) {
      metrics(env).message(message.channel, "failed");
      failed.push(messageOutcomeEvent(message, "failed", { provider: message.channel === "bpn" ? "web_push" : "fcm", error }, now));
      return settle(message, { status: "failed", error });
    }
    const delay = sendRetryDelaySeconds(attempts.get(message.msgid) ?? 1);
    console.error(`push ${message.msgid}: ${error}; retried in ${delay} s`);
    retries.set(message.msgid, delay);
    statements.push(releaseClaimedStatement(db, message.msgid, claim, now + delay * 1000));
  });
  // Outcomes known are recorded even when one message's work failed; that one's claim runs out (unknown outcome).
  if (outcomes.length) statements.push(settleClaimedStatement(db, claim, outcomes));
  if (statements.length) await db.batch(statements);
  const fault = settled.find((o) => o.status === "rejected");
  if (fault) throw fault.reason;
  // As SMS refusals are: journeys, webhooks and the contact's timeline see the failure.
  if (failed.length) await recordEvents(env, { id: panelId }, failed);
  return retries;
}

function deliver(env: PushSendEnv, push: PanelPush, device: PushSubscription, payload: ReturnType<typeof pushPayload>, now: number): Promise<PushDelivery> {
  if (device.kind === "web") return sendWebPush({ endpoint: device.address, p256dh: device.p256dh ?? "", auth: device.auth ?? "" }, payload, push.web!, now);
  return sendFcm(push.fcm!, fcmUrls(env), device.address, payload, now);
}

/** Where the device reports delivered and click (CONTRACT 7), addressed by the panel's client id as 4.11 is. */
function reportUrl(env: Pick<Env, "PUBLIC_BASE_URL">, panel: Pick<Panel, "clientId">, channel: JourneyMessage["channel"]): string {
  return `${config(env).publicBaseUrl}/v1/events/${channel}/${encodeURIComponent(panel.clientId)}`;
}

/** Cron: push messages waiting for their provider whose nudge was lost are nudged again. */
export const redriveWaitingPush = redriveWaiting("push");
