import { DAY_MS, parseIsoTimestamp } from "../../domain/time";
import { BATCH_LIMITS } from "../../domain/webhooks/batching";
import { MAX_REPLAY_RANGE_DAYS, replayBatches, type CreateReplayBody } from "../../domain/webhooks/replay";
import type { WebhookStep } from "../../domain/journey";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { contactsByIds, type KeyedContact } from "../../store/contacts";
import { eventFromRow, type EventRow } from "../../store/events";
import { getJourneysByIds } from "../../store/journeys/definitions";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { getWebhook } from "../../store/webhooks";
import {
  advanceReplay,
  cancelReplay as endReplay,
  getReplay,
  insertReplay,
  listReplays,
  stalledReplays,
  touchReplay,
  type ReplayCursor,
  type WebhookReplay,
} from "../../store/webhook-replays";
import { mergedMap, panelOwningShards, panelShards, type PanelShards } from "../access/partitions";
import { panelHome, shardTask } from "../access/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { journeyWebhookEvent } from "../journeys/webhook-event";
import { enqueueReplayEvents, webhookDispatcher } from "../webhooks/enqueue";
import { countReplayEvents, nextReplayEvents, selectionOf } from "./events";

/**
 * Webhook replays (issue 46 item 2, decision 0043): an owner re-sends the panel's recorded
 * events of a time range to a webhook, in order, through its WebhookDispatcher and batching,
 * each event marked `replay: true` and each batch `X-Webhook-Replay: <replay id>`.
 *
 * A replay is a row (store/webhook-replays.ts) worked in bounded steps: a step reads the next
 * page of events after the replay's cursor (the shard, and the R2 archive for days past the
 * retention window: ./events.ts), hands them to the dispatcher, then moves the cursor on if no
 * other step moved it meanwhile. Each event's guid is `replay:<replay id>:<event id>`, so a step
 * run again after a crash (its hand-over stored, its cursor not moved) queues nothing twice:
 * the dispatcher skips guids it has seen within 7 days. The first step runs in the request;
 * each further one is a `webhook_replay` nudge on IMPORTS, and the cron re-nudges a replay whose
 * steps stopped.
 */

/** Events one step hands over: whole batches (a multiple of the batch limit, 100). */
export const REPLAY_PAGE = 5 * BATCH_LIMITS.maxEvents;
/**
 * A step hands nothing over while the dispatcher holds this many of the replay's events: a
 * replay goes at the endpoint's pace, and never fills the backlog to its bound (1,000,000),
 * past which the oldest waiting events, live ones among them, would be dropped.
 */
export const REPLAY_MAX_WAITING = 4 * REPLAY_PAGE;
/** How long a step that found the dispatcher full waits before the next look. */
export const REPLAY_WAIT_SECONDS = 30;
/** A step left alone this long lost its nudge (or failed): the cron nudges it again. */
export const REPLAY_STALLED_AFTER_MS = 60_000;
/** Replays a webhook's list shows. */
const LIST_LIMIT = 50;
/** Named in each event as its journey when the event belongs to none (a custom activity, say). */
export const REPLAY_JOURNEY_NAME = "Replay";

/** The IMPORTS nudge: the replay's next step; the progress itself is on the replay's row. */
export interface ReplayNudge {
  type: "webhook_replay";
  panelId: string;
  replayId: string;
}

export function readReplayNudge(body: unknown): ReplayNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, replayId } = body as Record<string, unknown>;
  return type === "webhook_replay" && typeof panelId === "string" && typeof replayId === "string" ? { type, panelId, replayId } : null;
}

async function nudgeReplay(env: Pick<Env, "IMPORTS">, panelId: string, replayId: string, delaySeconds?: number): Promise<void> {
  await env.IMPORTS.send({ type: "webhook_replay", panelId, replayId } satisfies ReplayNudge, delaySeconds ? { delaySeconds } : undefined);
}

/** A replay with what its webhook's dispatcher has delivered of it. */
export interface ReplayWithProgress {
  replay: WebhookReplay;
  /** From the dispatcher: events and batches delivered (2xx), events still waiting. */
  progress: { delivered: number; batches: number; waiting: number };
}

export type ReplayCreation = { kind: "dry_run"; events: number; batches: number } | { kind: "replay"; created: boolean; replay: ReplayWithProgress };

const noSuchWebhook = (webhookId: string) => refused<never>("not_found", [], `No webhook with id "${webhookId}" in this panel`);
const noSuchReplay = (replayId: string) => refused<never>("not_found", [], `No replay with id "${replayId}" of this webhook`);

function readInstant(text: string, field: string, timeZone: string): Result<number> {
  const parsed = parseIsoTimestamp(text, timeZone);
  return parsed.ok ? succeeded(parsed.value) : refusedField("invalid", field, parsed.reason);
}

/**
 * A dry run (how many events and batches a replay would send) or a replay started, its first
 * step run. A replay id the panel has already answers that replay, unchanged, with `created`
 * false (a retried request starts nothing new); refused as a conflict when it names another
 * webhook's. Refused when the webhook is not the panel's (not_found) or the range is not a
 * range (invalid, naming `from` or `to`). `to` later than now is taken as now: events recorded
 * after the replay started are not part of it.
 */
export async function createReplay(
  env: Env,
  db: ShardDb,
  panel: Panel,
  webhookId: string,
  body: CreateReplayBody,
  by: Auditor,
  now: number,
): Promise<Result<ReplayCreation>> {
  const webhook = await getWebhook(db, panel.id, webhookId);
  if (!webhook) return noSuchWebhook(webhookId);
  if (body.id !== undefined && !body.dry_run) {
    const existing = await getReplay(db, panel.id, body.id);
    if (existing) return existing.webhookId === webhookId ? succeeded({ kind: "replay", created: false, replay: await withProgress(env, existing) }) : takenId(body.id);
  }
  const from = readInstant(body.from, "from", panel.timezone);
  if (!from.ok) return from;
  const asked = readInstant(body.to, "to", panel.timezone);
  if (!asked.ok) return asked;
  if (from.value >= now) return refusedField("invalid", "from", "must be in the past");
  const to = Math.min(asked.value, now);
  if (to <= from.value) return refusedField("invalid", "to", "must be later than from");
  if (to - from.value > MAX_REPLAY_RANGE_DAYS * DAY_MS) return refusedField("invalid", "to", `must be at most ${MAX_REPLAY_RANGE_DAYS} days after from`);

  const filter = { channels: body.channels ?? null, journeyId: body.journey_id ?? null };
  const events = await countReplayEvents(env.FILES, panelOwningShards(env, panel, db), panel.id, selectionOf(filter), from.value, to);
  if (body.dry_run) return succeeded({ kind: "dry_run", events, batches: replayBatches(events, BATCH_LIMITS.maxEvents) });

  const { replay, created } = await insertReplay(db, {
    panelId: panel.id,
    id: body.id ?? newId("rpl"),
    webhookId,
    from: from.value,
    to,
    filter,
    eventsTotal: events,
    createdBy: by.operator?.email ?? null,
    createdAt: now,
  });
  // Two requests with one id at once: the second answers the first's replay.
  if (!created) return replay.webhookId === webhookId ? succeeded({ kind: "replay", created: false, replay: await withProgress(env, replay) }) : takenId(replay.id);
  await recordAudit(db, panel.id, by, "webhook.replay_started", webhookId, { replay: replay.id, from: body.from, to: body.to, events });
  await stepAndNudge(env, panelShards(env, panel, db), panel.id, replay.id, now);
  return succeeded({ kind: "replay", created: true, replay: await withProgress(env, (await getReplay(db, panel.id, replay.id)) ?? replay) });
}

function takenId(id: string): Result<never> {
  return refused("conflict", [{ field: "id", message: "is the id of another webhook's replay" }], `The replay id "${id}" is taken by another webhook's replay`);
}

async function withProgress(env: Env, replay: WebhookReplay): Promise<ReplayWithProgress> {
  const { delivered, batches, waiting } = await webhookDispatcher(env, replay.webhookId).replayProgress(replay.id);
  return { replay, progress: { delivered, batches, waiting } };
}

/** A replay of the webhook with its progress; not_found when the panel's webhook has none with this id. */
export async function readReplay(env: Env, db: ShardDb, panelId: string, webhookId: string, replayId: string): Promise<Result<ReplayWithProgress>> {
  const replay = await getReplay(db, panelId, replayId);
  if (!replay || replay.webhookId !== webhookId) return noSuchReplay(replayId);
  return succeeded(await withProgress(env, replay));
}

/** The webhook's latest replays, newest first, with their progress. */
export async function replaysOf(env: Env, db: ShardDb, panelId: string, webhookId: string): Promise<Result<ReplayWithProgress[]>> {
  if (!(await getWebhook(db, panelId, webhookId))) return noSuchWebhook(webhookId);
  const replays = await listReplays(db, panelId, webhookId, LIST_LIMIT);
  return succeeded(await Promise.all(replays.map((replay) => withProgress(env, replay))));
}

/**
 * Cancels a running replay: no further step hands anything over, and the events it queued that
 * wait in the dispatcher go (a batch in flight is finished). A replay already done or cancelled
 * is answered as it is.
 */
export async function cancelWebhookReplay(env: Env, db: ShardDb, panelId: string, webhookId: string, replayId: string, by: Auditor, now: number): Promise<Result<ReplayWithProgress>> {
  const found = await getReplay(db, panelId, replayId);
  if (!found || found.webhookId !== webhookId) return noSuchReplay(replayId);
  const replay = (await endReplay(db, panelId, replayId, now)) ?? found;
  if (found.state === "running" && replay.state === "cancelled") {
    await recordAudit(db, panelId, by, "webhook.replay_cancelled", webhookId, { replay: replayId });
  }
  // Also when it was cancelled already: a step that was handing over meanwhile may have added some.
  if (replay.state === "cancelled") await webhookDispatcher(env, webhookId).cancelReplay(replayId);
  return succeeded(await withProgress(env, replay));
}

/** The replayed event: as a journey's webhook step describes that event, with the replay's guid. */
function describe(replay: WebhookReplay, row: EventRow, contact: KeyedContact | undefined, journeyName: string | undefined, now: number) {
  const step: WebhookStep = { id: String(row.id), type: "webhook", webhook: replay.webhookId, attributes: [], params: {} } as WebhookStep;
  const described = journeyWebhookEvent({
    journeyName: journeyName ?? REPLAY_JOURNEY_NAME,
    triggerType: "replay",
    // The guid is `<instance>:<step>`: `replay:<replay id>:<event id>`, the same on every repeat.
    instanceId: `replay:${replay.id}`,
    step,
    contact: contact ?? { id: row.contact_id ?? 0, key: row.identity ?? row.uniqueid ?? "", attributes: {} },
    event: eventFromRow(row),
    message: null,
    now,
  });
  return { ...described, guid: described.guid! };
}

export type ReplayStepOutcome = "more" | "wait" | "done" | "stopped";

/**
 * One step: the next page after the cursor handed over, then the cursor moved on; or, while the
 * dispatcher holds REPLAY_MAX_WAITING of the replay's events, nothing (`wait`). A step that
 * finds the replay ended, or whose cursor another step moved meanwhile, stops (what it handed
 * over was a repeat the dispatcher skipped).
 */
export async function replayStep(env: Env, shards: PanelShards, panelId: string, replayId: string, now: number): Promise<ReplayStepOutcome> {
  const [db] = shards;
  const replay = await getReplay(db, panelId, replayId);
  if (!replay || replay.state !== "running") return "stopped";
  if ((await webhookDispatcher(env, replay.webhookId).replayProgress(replay.id)).waiting >= REPLAY_MAX_WAITING) {
    await touchReplay(db, panelId, replayId, now);
    return "wait";
  }
  const start: ReplayCursor = replay.cursor ?? { occurredAt: replay.from, id: 0 };
  const page = await nextReplayEvents(env.FILES, shards, panelId, selectionOf(replay.filter), start, replay.to, REPLAY_PAGE);
  // Whole batches only, but for the last page: a page's tail would otherwise go as a small batch
  // of its own when the next step comes after the batch window.
  const whole = Math.floor(page.rows.length / BATCH_LIMITS.maxEvents) * BATCH_LIMITS.maxEvents;
  const rows = page.exhausted || whole === 0 ? page.rows : page.rows.slice(0, whole);
  const done = page.exhausted && rows.length === page.rows.length;
  let handed = 0;
  if (rows.length > 0) {
    const ids = rows.flatMap((row) => (row.contact_id === null ? [] : [row.contact_id]));
    const contacts = await mergedMap(shards, (shard) => contactsByIds(shard, panelId, ids));
    const journeyIds = [...new Set(rows.flatMap((row) => (row.journey_id === null ? [] : [row.journey_id])))];
    const journeys = await getJourneysByIds(db, journeyIds.map((journeyId) => ({ panelId, journeyId })));
    const outcome = await enqueueReplayEvents(env, panelId, replay.webhookId, replay.id, () =>
      rows.map((row) => describe(replay, row, row.contact_id === null ? undefined : contacts.get(row.contact_id), row.journey_id === null ? undefined : journeys.get(row.journey_id)?.name, now)),
    );
    if (outcome.kind === "webhook_missing") {
      await endReplay(db, panelId, replayId, now);
      return "stopped";
    }
    if (outcome.refused > 0) console.warn(`webhook replay ${replayId}: ${outcome.refused} event(s) too large to send were skipped`);
    // Repeats count too: a step run again after a crash hands over what the first one stored.
    handed = outcome.queued + outcome.duplicates;
  }
  const last = rows.at(-1);
  // A page of no events (archived days with none selected) still moves on, past what it read.
  const to = last ? { occurredAt: last.occurred_at, id: last.id } : page.passed;
  const moved = await advanceReplay(db, panelId, replayId, { from: replay.cursor, to, queued: handed, done }, now);
  if (!moved) {
    // Cancelled while this step handed over: what it queued goes too.
    if ((await getReplay(db, panelId, replayId))?.state === "cancelled") await webhookDispatcher(env, replay.webhookId).cancelReplay(replayId);
    return "stopped";
  }
  return done ? "done" : "more";
}

async function stepAndNudge(env: Env, shards: PanelShards, panelId: string, replayId: string, now: number): Promise<void> {
  const outcome = await replayStep(env, shards, panelId, replayId, now);
  if (outcome === "more") await nudgeReplay(env, panelId, replayId);
  if (outcome === "wait") await nudgeReplay(env, panelId, replayId, REPLAY_WAIT_SECONDS);
}

/** The IMPORTS queue's `webhook_replay` nudge: the replay's next step, if it has one. */
export async function handleReplayNudge(env: Env, nudge: ReplayNudge, now = Date.now()): Promise<void> {
  const { panel, db } = await panelHome(env, nudge.panelId);
  await stepAndNudge(env, panelShards(env, panel, db), nudge.panelId, nudge.replayId, now);
}

/** The cron's sweep: running replays whose steps stopped (a lost nudge, a failed step) are nudged again. */
export const replayRedrive = shardTask("webhook-replay-redrive", async (env, db, _index, now) => {
  for (const stalled of await stalledReplays(db, now - REPLAY_STALLED_AFTER_MS, now, 100)) await nudgeReplay(env, stalled.panelId, stalled.replayId);
});
