import { sendAll } from "../../lib/tasks";

/**
 * A message on the EVENTS queue names recorded event batches, it does not carry them
 * (DESIGN: a message is a nudge naming work recorded in D1). A call's events are one batch,
 * or a few when they are large, so one message names them all; a re-drive names up to
 * BATCHES_PER_MESSAGE per message, so a consumer invocation (100 messages) stays within
 * D1's queries per invocation.
 */
const BATCHES_PER_MESSAGE = 5;

export interface EventsNudge {
  panel: string;
  batches: number[];
}

export function isEventsNudge(body: unknown): body is EventsNudge {
  if (typeof body !== "object" || body === null) return false;
  const { panel, batches } = body as Record<string, unknown>;
  return typeof panel === "string" && Array.isArray(batches) && batches.every((id) => Number.isSafeInteger(id));
}

export async function nudgeEventBatches(queue: Queue, panelId: string, batchIds: readonly number[]): Promise<void> {
  const messages: EventsNudge[] = [];
  for (let i = 0; i < batchIds.length; i += BATCHES_PER_MESSAGE) messages.push({ panel: panelId, batches: batchIds.slice(i, i + BATCHES_PER_MESSAGE) });
  if (messages.length === 1) await queue.send(messages[0]);
  else await sendAll(queue, messages);
}
