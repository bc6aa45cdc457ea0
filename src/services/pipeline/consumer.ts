import { saveBatchProgress, takeEventBatches, type BatchProgress, type EventBatch } from "../../store/event-batches";
import type { EventBatchState, EventPipelineState } from "../../store/events";
import { isEventsNudge } from "./nudge";
import type { PipelineEvent, PipelineStep } from "./steps";

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Batches taken in one pass: bounds the size of one D1 transaction (a batch holds up to 1,000
 * events) and what one pass saves as progress. A queue batch of 100 messages naming one batch
 * each (single posts) is four passes.
 */
export const BATCHES_PER_PASS = 25;

/** Backoff between deliveries of a message whose events had a failing step: 5 s doubling to 5 min. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

function passed(batch: Pick<EventBatch, "stepsDone">, step: string, eventId: number): boolean {
  const done = batch.stepsDone[step];
  return done === true || (done !== undefined && done.includes(eventId));
}

/** The steps a batch's events passed, `true` where all of them did. */
function stepsDoneAfter(batch: EventBatch, step: string, passedNow: ReadonlySet<number>): EventBatch["stepsDone"] {
  const ids = batch.events.filter((event) => passed(batch, step, event.id) || passedNow.has(event.id)).map((event) => event.id);
  return { ...batch.stepsDone, [step]: ids.length === batch.events.length ? true : ids };
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
  const batches = await takeEventBatches(env.DB, panelId, batchIds);
  if (batches.length === 0) return new Set();
  const failedEvents = new Set<number>();
  const errors = new Map<number, string[]>();
  const batchOf = new Map<number, EventBatch>();
  for (const batch of batches) for (const event of batch.events) batchOf.set(event.id, batch);
  const events: PipelineEvent[] = batches.flatMap((batch) => batch.events);

  for (const [index, step] of steps.entries()) {
    const todo = events.filter((event) => !failedEvents.has(event.id) && !passed(batchOf.get(event.id)!, step.name, event.id));
    if (todo.length === 0) continue;
    const failures = new Map<number, string>();
    try {
      for (const failure of (await step.run(env, todo)) ?? []) failures.set(failure.eventId, describe(failure.error));
    } catch (error) {
      for (const event of todo) failures.set(event.id, describe(error));
    }
    for (const [eventId, error] of failures) {
      failedEvents.add(eventId);
      const batchId = batchOf.get(eventId)?.id ?? 0;
      const batchErrors = errors.get(batchId) ?? [];
      if (batchErrors.length < 10) batchErrors.push(`event ${eventId}: ${step.name}: ${error}`);
      errors.set(batchId, batchErrors);
    }
    const passedNow = new Set(todo.filter((event) => !failures.has(event.id)).map((event) => event.id));
    for (const batch of batches) batch.stepsDone = stepsDoneAfter(batch, step.name, passedNow);
    // Saved before the next step runs: a crash there must not run this one again.
    if (index < steps.length - 1) await saveBatchProgress(env.DB, panelId, progressOf(batches, failedEvents, errors), now, false);
  }
  await saveBatchProgress(env.DB, panelId, progressOf(batches, failedEvents, errors), now, true);
  return new Set(batches.filter((batch) => batch.events.some((event) => failedEvents.has(event.id))).map((batch) => batch.id));
}

function progressOf(batches: readonly EventBatch[], failedEvents: ReadonlySet<number>, errors: ReadonlyMap<number, string[]>): BatchProgress[] {
  return batches.map((batch) => {
    const failed = batch.events.some((event) => failedEvents.has(event.id));
    return { id: batch.id, stepsDone: batch.stepsDone, done: !failed, error: failed ? errors.get(batch.id)?.join("; ") : undefined };
  });
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
 * every event of the batches it names has passed every step, and otherwise retried with
 * backoff. After the queue's own retries the message is dead-lettered, and the re-drive cron
 * takes the batches up.
 */
export async function handleEventsBatch(
  batch: MessageBatch<unknown>,
  env: Env,
  steps: readonly PipelineStep[],
): Promise<void> {
  const byPanel = new Map<string, { batchIds: Set<number>; messages: Array<Message<unknown> & { body: { batches: number[] } }> }>();
  for (const message of batch.messages) {
    if (!isEventsNudge(message.body)) {
      console.error(`events queue: message ${message.id} names no event batches; dropped`, message.body);
      message.ack();
      continue;
    }
    const group = byPanel.get(message.body.panel) ?? { batchIds: new Set(), messages: [] };
    message.body.batches.forEach((id) => group.batchIds.add(id));
    group.messages.push(message as Message<unknown> & { body: { batches: number[] } });
    byPanel.set(message.body.panel, group);
  }
  for (const [panelId, group] of byPanel) {
    const failed = new Set<number>();
    const ids = [...group.batchIds].sort((a, b) => a - b);
    for (let i = 0; i < ids.length; i += BATCHES_PER_PASS) {
      const slice = ids.slice(i, i + BATCHES_PER_PASS);
      try {
        for (const id of await processEventBatches(env, panelId, slice, steps)) failed.add(id);
      } catch (error) {
        console.error(`events queue: processing event batches ${slice.join(", ")} of panel ${panelId} failed`, error);
        slice.forEach((id) => failed.add(id));
      }
    }
    for (const message of group.messages) {
      if (!message.body.batches.some((id) => failed.has(id))) message.ack();
      else message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
