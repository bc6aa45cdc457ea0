import { panelHome } from "../access/shards";
import { namedPanelShard, type PanelShard } from "../access/partitions";
import { randomHex } from "../../lib/random";
import { bucketRangesOn } from "../../domain/partitions";
import { deferEventBatches, finishEventBatches, rerouteLease, saveBatchProgress, takeEventBatches, type BatchProgress, type EventBatch, type HeldBuckets } from "../../store/event-batches";
import { isPanelMovingError, panelMovingMet } from "../../lib/moving";
import { rerouteBatches } from "./reroute";
import type { EventBatchState, EventPipelineState } from "../../store/events";
import type { KeyedContact } from "../../store/contacts";
import { afterContactsChanged } from "../contacts/reactions";
import { isEventsNudge, nudgeEventBatches } from "./nudge";
import type { PipelineEvent, PipelineStep } from "./steps";

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * What one pass takes: at most PASS_EVENTS events, which bounds one D1 transaction and what one
 * pass saves as progress, in at most PASS_BATCHES batches. A batch the nudge gave no size for
 * counts as a full call's (1,000 events). Single posts make one-event batches: a pass takes a
 * hundred of them, where a fixed 25 batches a pass made their share of the pipeline four passes.
 */
export const PASS_EVENTS = 25_000;
export const PASS_BATCHES = 100;
const UNSIZED_BATCH_EVENTS = 1_000;

/** The passes over batches `ids` (in order), cut by PASS_EVENTS and PASS_BATCHES. */
export function passesOf(ids: readonly number[], sizes: ReadonlyMap<number, number>): number[][] {
  const passes: number[][] = [];
  let pass: number[] = [];
  let events = 0;
  for (const id of ids) {
    const size = sizes.get(id) ?? UNSIZED_BATCH_EVENTS;
    if (pass.length && (pass.length === PASS_BATCHES || events + size > PASS_EVENTS)) {
      passes.push(pass);
      pass = [];
      events = 0;
    }
    pass.push(id);
    events += size;
  }
  if (pass.length) passes.push(pass);
  return passes;
}

/** Backoff between deliveries of a message whose events had a failing step: 5 s doubling to 5 min. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

function passed(batch: Pick<EventBatch, "stepsDone">, step: string, eventId: number): boolean {
  const done = batch.stepsDone[step];
  return done === true || (done !== undefined && done.includes(eventId));
}

/**
 * A batch's progress while a pass works on it: per step, `true` (every event passed it) or the
 * ids of the events that did, as a set, so a piece's bookkeeping is linear in its events.
 */
class Progress {
  private readonly steps: Map<string, true | Set<number>>;

  constructor(readonly batch: EventBatch) {
    this.steps = new Map(Object.entries(batch.stepsDone).map(([step, done]) => [step, done === true ? true : new Set(done)]));
  }

  passed(step: string, eventId: number): boolean {
    const done = this.steps.get(step);
    return done === true || (done !== undefined && done.has(eventId));
  }

  /** The step ran for `eventId`; `ok` when it passed. */
  record(step: string, eventId: number, ok: boolean): void {
    let done = this.steps.get(step);
    if (done === true) return;
    if (!done) this.steps.set(step, (done = new Set()));
    if (!ok) return;
    done.add(eventId);
    if (done.size === this.batch.events.length) this.steps.set(step, true);
  }

  done(steps: readonly PipelineStep[]): boolean {
    return this.batch.events.length === 0 || steps.every((step) => this.steps.get(step.name) === true);
  }

  /** As stored: `true` where every event passed, else the ids that did, in order. */
  stepsDone(): EventBatch["stepsDone"] {
    return Object.fromEntries([...this.steps].map(([step, done]) => [step, done === true ? true : [...done].sort((a, b) => a - b)]));
  }
}

/**
 * Events one piece of a pass runs through the steps, unless every working step takes more (its
 * `piece`); progress is saved (and the lease renewed) after each piece.
 */
export const EVENTS_PER_PIECE = 250;
/** Wall time an invocation works before it hands what is left to a new message. */
export const PASS_BUDGET_MS = 15_000;
/** How long a pass holds the batches it took without renewing the lease. */
export const BATCH_LEASE_MS = 60_000;

interface PassOutcome {
  /** Batches with events a step failed for: retried with backoff. */
  failed: Set<number>;
  /** Batches the pass stopped short of (its time was up): handed on at once. */
  unfinished: number[];
}

/**
 * Runs the steps over the pending batches among `batchIds` of one panel, storing their events
 * as rows first when that was not done yet. Each step gets the events, oldest first, that
 * passed every earlier step and have not passed it yet; what passed is recorded before the
 * next step starts, so a retry re-runs only what did not succeed. Returns the ids of the
 * batches that must be tried again.
 */
export async function processEventBatches(
  env: Env,
  panelId: string,
  batchIds: readonly number[],
  steps: readonly PipelineStep[],
  now = Date.now(),
): Promise<Set<number>> {
  return (await runPass(env, panelId, undefined, batchIds, steps, now, now, Infinity)).failed;
}

/**
 * One pass over the batches it could take (a batch another pass holds is left to it). The
 * events go through the steps in pieces of EVENTS_PER_PIECE; after each piece the progress is
 * saved, the lease renewed and the runtime yielded to other work, and past `deadline` the pass
 * stops and reports the batches it did not finish, so one invocation never holds the runtime
 * (or one D1 transaction) for a large batch at once. The batches were recorded by `recordedBy`
 * (their nudges' send time).
 */
async function runPass(
  env: Env,
  panelId: string,
  shard: number | undefined,
  batchIds: readonly number[],
  steps: readonly PipelineStep[],
  now: number,
  recordedBy: number,
  deadline: number,
): Promise<PassOutcome> {
  const lease = randomHex(8);
  const started = Date.now();
  const clock = () => now + (Date.now() - started);
  // The batches are on the shard the nudge names (a partition's, decision 0038), else the
  // home; their events become rows there, with the contacts of new identities.
  const { panel } = await panelHome(env, panelId);
  const place = namedPanelShard(env, panel, shard);
  const db = place.db;
  // Steps with nothing to do for this panel pass its events unseen; with none left, the batches
  // are stored as rows and finished in one transaction, their events never read back.
  const working = await stepsWithWork(env, panelId, steps, recordedBy);
  // A mapped panel's batches are checked, in the statements that take them, for events of buckets
  // this shard does not hold by the cached map; those batches are handed on (reroute.ts) and taken
  // again. A cached map older than a split lets them through to the fence, which refuses them: the
  // pass fails, its caches go (handleEventsBatch) and the retry reads the map afresh.
  const mine: HeldBuckets | undefined = panel.partitions.length ? bucketRangesOn(panel.partitions, place.shard) : undefined;
  const reroute = async (misplaced: readonly number[]) => rerouteBatches(env, panelId, place, misplaced, rerouteLease(lease), now);
  if (working.size === 0) {
    const first = await finishEventBatches(db, panel, batchIds, lease, now, now + BATCH_LEASE_MS, mine);
    const created = [...first.created];
    if (first.misplaced.length) {
      await reroute(first.misplaced);
      created.push(...(await finishEventBatches(db, panel, first.misplaced, lease, now, now + BATCH_LEASE_MS)).created);
    }
    await afterNewContacts(env, panelId, created, now, place);
    return { failed: new Set(), unfinished: [] };
  }
  const taken = await takeEventBatches(db, panel, batchIds, lease, now, now + BATCH_LEASE_MS, mine);
  if (taken.misplaced.length) {
    await reroute(taken.misplaced);
    const again = await takeEventBatches(db, panel, taken.misplaced, lease, now, now + BATCH_LEASE_MS);
    taken.batches.push(...again.batches);
    taken.createdContacts.push(...again.createdContacts);
  }
  const { batches, createdContacts } = taken;
  await afterNewContacts(env, panelId, createdContacts, now, place);
  if (batches.length === 0) return { failed: new Set(), unfinished: [] };
  const failedEvents = new Set<number>();
  const errors = new Map<number, string[]>();
  const progress = new Map(batches.map((batch) => [batch.id, new Progress(batch)]));
  const progressOf = new Map<number, Progress>();
  for (const batch of batches) for (const event of batch.events) progressOf.set(event.id, progress.get(batch.id)!);
  const events: PipelineEvent[] = batches.flatMap((batch) => batch.events);
  const held = batches.map((batch) => batch.id);
  // Between pieces only the batches that moved are written; every lease is renewed.
  const moved = new Set<Progress>();
  const save = async (final: boolean) => {
    const saved = final ? [...progress.values()] : [...moved];
    moved.clear();
    await saveBatchProgress(db, panelId, saved.map((p) => progressRecord(p, steps, failedEvents, errors)), clock(), final, lease, clock() + BATCH_LEASE_MS, held);
  };

  const pieceSize = Math.min(...[...working].map((step) => step.piece ?? EVENTS_PER_PIECE));
  for (let from = 0; from < events.length; from += pieceSize) {
    const piece = events.slice(from, from + pieceSize);
    for (const [index, step] of steps.entries()) {
      const todo = piece.filter((event) => !failedEvents.has(event.id) && !progressOf.get(event.id)!.passed(step.name, event.id));
      if (todo.length === 0) continue;
      const failures = new Map<number, string>();
      if (working.has(step) && !place.home && !step.partitioned) {
        // See notRouted: the step is not run here, and the batch waits for an operator's retry.
        for (const event of todo) failures.set(event.id, notRouted(step, place.shard));
      } else if (working.has(step)) {
        try {
          for (const failure of (await step.run(env, todo, place)) ?? []) failures.set(failure.eventId, describe(failure.error));
        } catch (error) {
          for (const event of todo) failures.set(event.id, describe(error));
        }
      }
      for (const [eventId, error] of failures) {
        failedEvents.add(eventId);
        const batchId = progressOf.get(eventId)?.batch.id ?? 0;
        const batchErrors = errors.get(batchId) ?? [];
        if (batchErrors.length < 10) batchErrors.push(`event ${eventId}: ${step.name}: ${error}`);
        errors.set(batchId, batchErrors);
      }
      for (const event of todo) {
        const batchProgress = progressOf.get(event.id)!;
        batchProgress.record(step.name, event.id, !failures.has(event.id));
        moved.add(batchProgress);
      }
      // Saved before the next step runs: a crash there must not run this one again. A step
      // with nothing to do did nothing to protect; its events are saved with the next save.
      if (index < steps.length - 1 && working.has(step)) await save(false);
    }
    if (from + pieceSize >= events.length) break;
    await save(false);
    if (Date.now() >= deadline) break;
    await scheduler.wait(0);
  }
  await save(true);
  const failed = new Set(batches.filter((batch) => batch.events.some((event) => failedEvents.has(event.id))).map((batch) => batch.id));
  const unfinished = batches.filter((batch) => !failed.has(batch.id) && !progress.get(batch.id)!.done(steps)).map((batch) => batch.id);
  return { failed, unfinished };
}

/**
 * Why a step with work did not run for events stored on a shard other than the home. A step
 * `partitioned` (journeys, segments) runs there, told the shard, and works on that shard's rows;
 * the others read the panel's home. Should one of those ever have work for events stored
 * elsewhere, running it would match a partition's events against the home's rows, so the step
 * fails the events instead, and the batch, its events stored, is left failed for a retry once
 * the step is routed. The contacts a pass creates there go to the reactions with the shard
 * named (`at`).
 */
function notRouted(step: PipelineStep, shard: number): string {
  return `the ${step.name} step reads the panel's home database, and these events are stored on shard ${shard} (a partition elsewhere; decision 0038): not run`;
}

/** Contacts handed to the reactions at once: the segments step's piece, one re-check each. */
const NEW_CONTACTS_PER_REACTION = 1_000;

/**
 * The contacts a pass created for identities the panel did not have go through "after a
 * contact changed" like an API add's, together (a few statements per thousand, none when the
 * pass created none, as most do). Never throws: the events stand, and like an API add's
 * reactions a failure is logged (the contact's next change, or a segment's build, sees it);
 * a retry of the pass would not create them again.
 */
async function afterNewContacts(env: Env, panelId: string, contacts: readonly KeyedContact[], now: number, place: PanelShard): Promise<void> {
  // Created on a partition's shard other than the home: the reactions are told where (`at`).
  const at = place.home ? {} : { at: { shard: place.shard, db: place.db } };
  for (let from = 0; from < contacts.length; from += NEW_CONTACTS_PER_REACTION) {
    const piece = contacts.slice(from, from + NEW_CONTACTS_PER_REACTION);
    try {
      await afterContactsChanged(env, { panelId, contacts: piece, joinedList: false, rewritten: false, now, ...at });
    } catch (error) {
      console.error(`events: reacting to ${piece.length} contact(s) the pipeline created in panel ${panelId} failed`, error);
    }
  }
}

async function stepsWithWork(env: Env, panelId: string, steps: readonly PipelineStep[], recordedBy: number): Promise<Set<PipelineStep>> {
  const answers = await Promise.all(steps.map(async (step) => (step.hasWork ? step.hasWork(env, panelId, recordedBy) : true)));
  return new Set(steps.filter((_, i) => answers[i]));
}

function progressRecord(progress: Progress, steps: readonly PipelineStep[], failedEvents: ReadonlySet<number>, errors: ReadonlyMap<number, string[]>): BatchProgress {
  const { batch } = progress;
  const failed = batch.events.some((event) => failedEvents.has(event.id));
  return { id: batch.id, stepsDone: progress.stepsDone(), done: !failed && progress.done(steps), error: failed ? (errors.get(batch.id)?.join("; ") ?? "a step failed") : undefined };
}

/**
 * Where an event is in the pipeline, from its batch (null once the batch left the pipeline):
 * done when it passed every step, even while other events of its batch are retried.
 */
export function eventPipelineState(eventId: number, batch: EventBatchState | null, steps: readonly PipelineStep[]): EventPipelineState {
  if (batch === null) return "done";
  return steps.every((step) => passed(batch, step.name, eventId)) ? "done" : batch.state;
}

/**
 * The EVENTS queue consumer. Messages are grouped by panel; a message is acknowledged when
 * every event of the batches it names has passed every step (or the batches were handed on
 * in a new message because the invocation's time was up), and otherwise retried with backoff,
 * the batches' nudge time moved to the retry so the re-drive waits for it. After the queue's
 * own retries the message is dead-lettered, and the dead-letter consumer re-drives it.
 */
export async function handleEventsBatch(
  batch: MessageBatch<unknown>,
  env: Env,
  steps: readonly PipelineStep[],
  budgetMs = PASS_BUDGET_MS,
): Promise<void> {
  const deadline = Date.now() + budgetMs;
  type Group = {
    panelId: string;
    shard?: number;
    batchIds: Set<number>;
    sizes: Map<number, number>;
    /** When the newest nudge was sent: every batch it names was recorded by then. */
    recordedBy: number;
    messages: Array<Message<unknown> & { body: { batches: number[] } }>;
  };
  // By panel and shard: a partition's batches are taken on their own shard.
  const byPanel = new Map<string, Group>();
  for (const message of batch.messages) {
    if (!isEventsNudge(message.body)) {
      console.error(`events queue: message ${message.id} names no event batches; dropped`, message.body);
      message.ack();
      continue;
    }
    const { panel, shard } = message.body;
    const key = shard === undefined ? panel : `${panel}@${shard}`;
    const group: Group = byPanel.get(key) ?? { panelId: panel, shard, batchIds: new Set(), sizes: new Map(), recordedBy: 0, messages: [] };
    group.recordedBy = Math.max(group.recordedBy, message.timestamp.getTime());
    const sizes = message.body.events;
    message.body.batches.forEach((id, i) => {
      group.batchIds.add(id);
      if (sizes) group.sizes.set(id, sizes[i]!);
    });
    group.messages.push(message as Message<unknown> & { body: { batches: number[] } });
    byPanel.set(key, group);
  }
  for (const group of byPanel.values()) {
    const { panelId, shard } = group;
    const failed = new Set<number>();
    const unfinished: number[] = [];
    const passes = passesOf([...group.batchIds].sort((a, b) => a - b), group.sizes);
    for (const [i, slice] of passes.entries()) {
      // Every invocation makes progress: the first pass runs whatever the time.
      if ((i > 0 || unfinished.length > 0 || failed.size > 0) && Date.now() >= deadline) {
        unfinished.push(...slice);
        continue;
      }
      try {
        const outcome = await runPass(env, panelId, shard, slice, steps, Date.now(), group.recordedBy, deadline);
        outcome.failed.forEach((id) => failed.add(id));
        unfinished.push(...outcome.unfinished);
      } catch (error) {
        console.error(`events queue: processing event batches ${slice.join(", ")} of panel ${panelId} failed`, error);
        // A split's fence met with a map cached from before it: the retry reads the directory afresh.
        if (isPanelMovingError(error)) panelMovingMet();
        slice.forEach((id) => failed.add(id));
      }
    }
    if (unfinished.length) {
      // A failed send leaves them pending and free: the re-drive takes them within a minute or two.
      const sizes = unfinished.every((id) => group.sizes.has(id)) ? unfinished.map((id) => group.sizes.get(id)!) : undefined;
      await nudgeEventBatches(env.EVENTS, panelId, unfinished, sizes, shard).catch((error) => console.error(`event batches ${unfinished.join(", ")} of panel ${panelId} not handed on`, error));
    }
    for (const message of group.messages) {
      const mine = message.body.batches.filter((id) => failed.has(id));
      if (mine.length === 0) {
        message.ack();
        continue;
      }
      const delaySeconds = retryDelaySeconds(message.attempts);
      message.retry({ delaySeconds });
      await deferEventBatches(namedPanelShard(env, (await panelHome(env, panelId)).panel, shard).db, panelId, mine, Date.now() + delaySeconds * 1000).catch((error) => console.error("events queue: retry time not recorded", error));
    }
  }
}
