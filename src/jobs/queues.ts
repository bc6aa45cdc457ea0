import type { QueueHandler } from "../lib/tasks";
import { handleEventsBatch } from "../services/pipeline/consumer";
import { PIPELINE_STEPS } from "../services/pipeline-steps";
import { handleSendsQueue } from "../services/broadcasts/send";
import { handleJourneysQueue } from "../services/journeys/queue";
import { handleImportQueue } from "../services/imports";
import { handleDeadLetters } from "../services/dead-letters";
import { handleExportMessages, readExportNudge } from "../services/segments/export";
import { handleMoveNudge, readMoveNudge } from "../services/panels/move";
import { handlePublishNudge, readPublishNudge } from "../services/broadcasts/publish";
import { handleAbReleaseNudge, readAbReleaseNudge } from "../services/broadcasts/ab-decision";
import { handleUnsentNudge, readUnsentNudge } from "../services/broadcasts/unsent";
import { handleListClearNudge, readListClearNudge } from "../services/lists/clear";
import { handleReplayNudge, readReplayNudge } from "../services/replays/replays";
import { handleSimulationNudge, readSimulationNudge } from "../services/simulations/simulate";
import { handleCronQueue } from "./cron";
import { logLine, logLinesOn } from "../lib/observability/log";
import { countingD1 } from "../store/d1-count";
import { metrics } from "../lib/observability/metrics";
import { errorClass, observing, type Observation } from "../lib/observability/context";
import { newTraceparent } from "../lib/observability/trace";

/**
 * Queue consumers. A message is a nudge naming work recorded in D1 (DESIGN), so a lost or
 * repeated message never loses or doubles work. Queue names carry the region
 * (`apiv2-imports-india`); the handler is chosen by the middle part.
 */
export type QueueKind = "imports" | "events" | "sends" | "journeys" | "cron" | "dlq";

/** One handler per queue. */
export const QUEUE_HANDLERS: Partial<Record<QueueKind, QueueHandler>> = {
  events: (batch, env) => handleEventsBatch(batch, env, PIPELINE_STEPS),
  sends: handleSendsQueue,
  imports: handleImportsAndExports,
  journeys: handleJourneysQueue,
  cron: handleCronQueue,
  dlq: handleDeadLetters,
};

/** Acks the message of a step once it is done; retries it when the step failed. */
async function oneStep(message: Message<unknown>, step: Promise<unknown>, name: string): Promise<void> {
  try {
    await step;
    message.ack();
  } catch (error) {
    console.error(`IMPORTS queue: ${name} failed, retried`, error);
    message.retry();
  }
}

/** The IMPORTS queue carries bulk uploads, segment exports, panel moves, campaign publish steps, A/B releases and pages of unsent batches, list clearing steps, webhook replay steps and journey simulation steps, each one bounded step per message. */
async function handleImportsAndExports(batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext): Promise<void> {
  const exports = batch.messages.filter((message) => readExportNudge(message.body));
  if (exports.length) await handleExportMessages(exports, env);
  for (const message of batch.messages) {
    const moveId = readMoveNudge(message.body);
    if (moveId) await oneStep(message, handleMoveNudge(env, moveId), `move ${moveId}`);
    const publish = readPublishNudge(message.body);
    if (publish) await oneStep(message, handlePublishNudge(env, publish), `publish step of campaign ${publish.campaignId}`);
    const release = readAbReleaseNudge(message.body);
    if (release) await oneStep(message, handleAbReleaseNudge(env, release), `A/B release of campaign ${release.campaignId} on shard ${release.shard}`);
    const unsent = readUnsentNudge(message.body);
    if (unsent) await oneStep(message, handleUnsentNudge(env, unsent), `unsent batches of campaign ${unsent.campaignId} after batch ${unsent.after}`);
    const clear = readListClearNudge(message.body);
    if (clear) await oneStep(message, handleListClearNudge(env, clear), `clearing step of list ${clear.listId}`);
    const replay = readReplayNudge(message.body);
    if (replay) await oneStep(message, handleReplayNudge(env, replay), `step of webhook replay ${replay.replayId}`);
    const simulation = readSimulationNudge(message.body);
    if (simulation) await oneStep(message, handleSimulationNudge(env, simulation), `step of journey simulation ${simulation.simulationId}`);
  }
  const fanOut = (body: unknown) => readExportNudge(body) || readMoveNudge(body) || readPublishNudge(body) || readAbReleaseNudge(body) || readUnsentNudge(body) || readListClearNudge(body) || readReplayNudge(body) || readSimulationNudge(body);
  const imports = batch.messages.filter((message) => !fanOut(message.body));
  if (imports.length === 0) return;
  const part: MessageBatch<unknown> = {
    queue: batch.queue,
    metadata: batch.metadata,
    messages: imports,
    ackAll: () => imports.forEach((message) => message.ack()),
    retryAll: (options) => imports.forEach((message) => message.retry(options)),
  };
  await handleImportQueue(part, env, exec);
}

export function queueKind(queueName: string): QueueKind | undefined {
  const kind = /^apiv2-(imports|events|sends|journeys|cron|dlq)-/.exec(queueName)?.[1];
  return kind as QueueKind | undefined;
}

/** Every batch, handled or not, leaves one JSON log line and one queue_batch data point (lib/observability). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext): Promise<void> {
  const started = Date.now();
  const counted = countingOutcomes(batch);
  // The batch's own trace: the provider and webhook calls its work makes carry it (traceparent).
  const traceparent = newTraceparent();
  let failure: unknown;
  const logging = logLinesOn(env);
  const observation: Observation = { traceparent };
  try {
    await observing(observation, () => dispatch(counted.batch, logging ? countingD1(env) : env, exec));
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    // A message neither acked nor retried follows the batch: acked when the handler returned, retried when it threw.
    const { acked, retried } = counted.totals(failure === undefined);
    const durationMs = Date.now() - started;
    if (logging) logLine({
      kind: "queue_batch",
      queue: batch.queue,
      traceId: traceparent.split("-")[1]!,
      messages: batch.messages.length,
      acked,
      retried,
      durationMs,
      d1Statements: observation.d1Statements ?? 0,
      errorClass: failure === undefined ? null : errorClass(failure),
    });
    metrics(env).queueBatch(batch.queue, batch.messages.length, acked, retried, durationMs);
  }
}

async function dispatch(batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext): Promise<void> {
  const kind = queueKind(batch.queue);
  const handler = kind ? QUEUE_HANDLERS[kind] : undefined;
  if (!handler) {
    // Unknown work is kept (retried, then dead-lettered), never silently acknowledged.
    console.error(`no consumer for queue ${batch.queue}; ${batch.messages.length} message(s) retried`);
    batch.retryAll();
    return;
  }
  await handler(batch, env, exec);
}

/**
 * The batch with each message's last ack or retry noted, for the log line. Messages are the
 * runtime's own objects, passed on as they are; only ack/retry are wrapped around them.
 */
function countingOutcomes(batch: MessageBatch<unknown>) {
  const outcomes = new Map<Message<unknown>, "ack" | "retry">();
  const messages = batch.messages.map((message) => {
    const ack = message.ack.bind(message);
    const retry = message.retry.bind(message);
    return new Proxy(message, {
      get(target, property) {
        if (property === "ack") return () => (outcomes.set(message, "ack"), ack());
        if (property === "retry") return (options?: QueueRetryOptions) => (outcomes.set(message, "retry"), retry(options));
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  });
  const wrapped: MessageBatch<unknown> = {
    queue: batch.queue,
    metadata: batch.metadata,
    messages,
    ackAll: () => (batch.messages.forEach((message) => outcomes.set(message, "ack")), batch.ackAll()),
    retryAll: (options) => (batch.messages.forEach((message) => outcomes.set(message, "retry")), batch.retryAll(options)),
  };
  return {
    batch: wrapped,
    totals(returned: boolean) {
      let acked = 0;
      let retried = 0;
      for (const message of batch.messages) {
        const outcome = outcomes.get(message) ?? (returned ? "ack" : "retry");
        if (outcome === "ack") acked += 1;
        else retried += 1;
      }
      return { acked, retried };
    },
  };
}
