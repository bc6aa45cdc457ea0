import { loadPendingEvents, savePipelineProgress, stepKey, type PipelineProgress } from "../store/events";
import { isEventsNudge } from "./nudge";
import { PIPELINE_STEPS, type PipelineStep } from "./steps";

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Backoff between deliveries of a message whose events had a failing step: 5 s doubling to 5 min. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

/**
 * Runs the steps over the pending events among `ids` of one panel: each step gets the events
 * that passed every earlier step and have not passed it yet; what passed is recorded before
 * the next step starts, so a retry re-runs only what did not succeed. Returns the ids of the
 * events that must be tried again.
 */
export async function processEvents(
  env: Env,
  panelId: string,
  ids: readonly number[],
  steps: readonly PipelineStep[] = PIPELINE_STEPS,
  now = Date.now(),
): Promise<Set<number>> {
  if (steps.length === 0) {
    // Nothing to run: the events leave the pipeline without being read.
    await savePipelineProgress(env.DB, panelId, { eventsDone: [...ids] }, now);
    return new Set();
  }
  const { events, stepsDone } = await loadPendingEvents(env.DB, panelId, ids);
  if (events.length === 0) return new Set();
  const failed = new Set<number>();
  let unsaved: PipelineProgress = {};
  for (const step of steps) {
    const todo = events.filter((event) => !failed.has(event.id) && !stepsDone.has(stepKey(event.id, step.name)));
    if (todo.length === 0) continue;
    if (unsaved.stepsDone?.length || unsaved.stepsFailed?.length) await savePipelineProgress(env.DB, panelId, unsaved, now);
    unsaved = { stepsDone: [], stepsFailed: [] };
    const errors = new Map<number, string>();
    try {
      for (const failure of (await step.run(env, todo)) ?? []) errors.set(failure.eventId, describe(failure.error));
    } catch (error) {
      for (const event of todo) errors.set(event.id, describe(error));
    }
    for (const event of todo) {
      const error = errors.get(event.id);
      if (error === undefined) unsaved.stepsDone!.push({ eventId: event.id, step: step.name });
      else {
        failed.add(event.id);
        unsaved.stepsFailed!.push({ eventId: event.id, step: step.name, error });
      }
    }
  }
  await savePipelineProgress(
    env.DB,
    panelId,
    {
      ...unsaved,
      eventsDone: events.filter((event) => !failed.has(event.id)).map((event) => event.id),
      eventsRetrying: [...failed],
    },
    now,
  );
  return failed;
}

/**
 * The EVENTS queue consumer. Messages are grouped by panel; a message is acknowledged when
 * every event it names has passed every step, and otherwise retried with backoff. After the
 * queue's own retries the message is dead-lettered, and the re-drive cron takes the events up.
 */
export async function handleEventsBatch(
  batch: MessageBatch<unknown>,
  env: Env,
  _exec: ExecutionContext,
  steps: readonly PipelineStep[] = PIPELINE_STEPS,
): Promise<void> {
  const byPanel = new Map<string, { ids: Set<number>; messages: Array<Message<unknown> & { body: { ids: number[] } }> }>();
  for (const message of batch.messages) {
    if (!isEventsNudge(message.body)) {
      console.error(`events queue: message ${message.id} names no events; dropped`, message.body);
      message.ack();
      continue;
    }
    const group = byPanel.get(message.body.panel) ?? { ids: new Set(), messages: [] };
    message.body.ids.forEach((id) => group.ids.add(id));
    group.messages.push(message as Message<unknown> & { body: { ids: number[] } });
    byPanel.set(message.body.panel, group);
  }
  for (const [panelId, group] of byPanel) {
    let failed: Set<number> | null;
    try {
      failed = await processEvents(env, panelId, [...group.ids], steps);
    } catch (error) {
      console.error(`events queue: processing events of panel ${panelId} failed`, error);
      failed = null;
    }
    for (const message of group.messages) {
      if (failed !== null && !message.body.ids.some((id) => failed.has(id))) message.ack();
      else message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
