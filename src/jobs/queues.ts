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
import { handleListClearNudge, readListClearNudge } from "../services/lists/clear";
import { handleCronQueue } from "./cron";

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

/** The IMPORTS queue carries bulk uploads, segment exports, panel moves, campaign publish steps and list clearing steps, each one bounded step per message. */
async function handleImportsAndExports(batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext): Promise<void> {
  const exports = batch.messages.filter((message) => readExportNudge(message.body));
  if (exports.length) await handleExportMessages(exports, env);
  for (const message of batch.messages) {
    const moveId = readMoveNudge(message.body);
    if (moveId) await handleMoveNudge(env, moveId).then(() => message.ack(), () => message.retry());
    const publish = readPublishNudge(message.body);
    if (publish) {
      await handlePublishNudge(env, publish).then(
        () => message.ack(),
        (error) => {
          console.error(`IMPORTS queue: publish step of campaign ${publish.campaignId} failed, retried`, error);
          message.retry();
        },
      );
    }
    const clear = readListClearNudge(message.body);
    if (clear) {
      await handleListClearNudge(env, clear).then(
        () => message.ack(),
        (error) => {
          console.error(`IMPORTS queue: clearing step of list ${clear.listId} failed, retried`, error);
          message.retry();
        },
      );
    }
  }
  const fanOut = (body: unknown) => readExportNudge(body) || readMoveNudge(body) || readPublishNudge(body) || readListClearNudge(body);
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

export async function handleQueue(batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext): Promise<void> {
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
