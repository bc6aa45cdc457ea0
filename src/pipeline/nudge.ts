/**
 * A message on the EVENTS queue names stored events, it does not carry them (DESIGN: a
 * message is a nudge naming work recorded in D1). One message names up to 100 events of one
 * panel, so a 1,000-event batch is ten messages and one sendBatch call.
 */
export interface EventsNudge {
  panel: string;
  ids: number[];
}

const IDS_PER_MESSAGE = 100;
// Queues accept at most 100 messages per sendBatch call.
const MESSAGES_PER_SEND = 100;

export function isEventsNudge(body: unknown): body is EventsNudge {
  if (typeof body !== "object" || body === null) return false;
  const { panel, ids } = body as Record<string, unknown>;
  return typeof panel === "string" && Array.isArray(ids) && ids.every((id) => Number.isSafeInteger(id));
}

export async function nudgeEvents(queue: Queue, panelId: string, ids: readonly number[]): Promise<void> {
  const messages: EventsNudge[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_MESSAGE) messages.push({ panel: panelId, ids: ids.slice(i, i + IDS_PER_MESSAGE) });
  if (messages.length === 1) {
    await queue.send(messages[0]);
    return;
  }
  for (let i = 0; i < messages.length; i += MESSAGES_PER_SEND) {
    await queue.sendBatch(messages.slice(i, i + MESSAGES_PER_SEND).map((body) => ({ body })));
  }
}
