import { saveBatchProgress, takeEventBatches, type BatchProgress, type EventBatch } from "../store/event-batches";
import { isEventsNudge } from "./nudge";
import { PIPELINE_STEPS, type PipelineEvent, type PipelineStep } from "./steps";

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Backoff between deliveries of a message whose events had a failing step: 5 s doubling to 5 min. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

function passed(batch: EventBatch, step: string, eventId: number): boolean {
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
  steps: readonly PipelineStep[] = PIPELINE_STEPS,
  now = Date.now(),
): Promise<Set<number>> {
  const batches = await takeEventBatches(env.DB, panelId, batchIds);
  if (batches.length === 0) return new Set();
  const failedEvents = new Set<number>();
  const errors: string[] = [];
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
      if (errors.length < 10) errors.push(`event ${eventId}: ${step.name}: ${error}`);
    }
    const passedNow = new Set(todo.filter((event) => !failures.has(event.id)).map((event) => event.id));
    for (const batch of batches) batch.stepsDone = stepsDoneAfter(batch, step.name, passedNow);
    // Saved before the next step runs: a crash there must not run this one again.
    if (index < steps.length - 1) await saveBatchProgress(env.DB, panelId, progressOf(batches, failedEvents, errors), now, false);
  }
  await saveBatchProgress(env.DB, panelId, progressOf(batches, failedEvents, errors), now, true);
  return new Set(batches.filter((batch) => batch.events.some((event) => failedEvents.has(event.id))).map((batch) => batch.id));
}

function progressOf(batches: readonly EventBatch[], failedEvents: ReadonlySet<number>, errors: readonly string[]): BatchProgress[] {
  return batches.map((batch) => {
    const failed = batch.events.some((event) => failedEvents.has(event.id));
    return { id: batch.id, stepsDone: batch.stepsDone, done: !failed, error: failed ? errors.join("; ") : undefined };
  });
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
  _exec: ExecutionContext,
  steps: readonly PipelineStep[] = PIPELINE_STEPS,
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
    let failed: Set<number> | null;
    try {
      failed = await processEventBatches(env, panelId, [...group.batchIds], steps);
    } catch (error) {
      console.error(`events queue: processing event batches of panel ${panelId} failed`, error);
      failed = null;
    }
    for (const message of group.messages) {
      if (failed !== null && !message.body.batches.some((id) => failed.has(id))) message.ack();
      else message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
