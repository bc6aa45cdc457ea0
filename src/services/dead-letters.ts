import { readCronMessage, type QueueHandler } from "../lib/tasks";
import { getDeadLetter, noteDeadLetterAction, recordDeadLetter } from "../store/dead-letters";
import { refused, succeeded, type Result } from "../lib/problems";
import { isSendNudge, redriveDeadSend } from "./broadcasts/send";
import { isPushNudge } from "./journeys/push";
import { redriveDeadNudge } from "./journeys/queued-sends";
import { isSmsNudge } from "./journeys/sms";
import { readImportNudge, redriveDeadImport } from "./imports";
import { readJourneysNudge } from "./journeys/queue";
import { isEventsNudge } from "./pipeline/nudge";
import { redriveEventBatches } from "./pipeline/redrive";
import { readExportNudge, redriveDeadExport } from "./segments/export";

/** A dead-lettered journeys nudge is sent again after this pause (its pages stay leased until their lease runs out). */
const JOURNEYS_PAUSE_S = 30;

/** What a dead letter is and what its re-drive did. */
export interface Redrive {
  kind: string;
  panelId: string | null;
  action: string;
}

/**
 * Puts the work a dead message names back through that work's own re-drive, which keeps its
 * rules: an import counts a failed attempt, event batches count a re-drive (and fail after the
 * last), a campaign batch is nudged after a pause while the campaign sends, journey work is
 * nudged after a pause; a cron sweep is left to the next tick. Throws when the re-drive failed.
 */
export async function redriveDeadMessage(env: Env, body: unknown, at: number): Promise<Redrive> {
  const importRef = readImportNudge(body);
  const journeys = readJourneysNudge(body);
  const exportRef = readExportNudge(body);
  if (exportRef) return { kind: "segment_exports", panelId: exportRef.panelId, action: await redriveDeadExport(env, exportRef, at) };
  if (importRef) return { kind: "imports", panelId: importRef.panelId, action: await redriveDeadImport(env, importRef, at) };
  if (isEventsNudge(body)) {
    const { nudged, failed } = await redriveEventBatches(env, at, { panelId: body.panel, ids: body.batches, shard: body.shard });
    return { kind: "events", panelId: body.panel, action: `${nudged} batch(es) nudged, ${failed} marked failed` };
  }
  if (isSmsNudge(body) || isPushNudge(body)) return { kind: "sends", panelId: body.panelId, action: await redriveDeadNudge(env, body) };
  if (isSendNudge(body)) return { kind: "sends", panelId: body.panelId, action: await redriveDeadSend(env, body) };
  if (journeys) {
    await env.JOURNEYS.send(journeys, { delaySeconds: JOURNEYS_PAUSE_S });
    return { kind: "journeys", panelId: journeys.panel, action: `nudged again in ${JOURNEYS_PAUSE_S} s` };
  }
  // A sweep whose consumer died each time (it acknowledges a sweep that failed).
  if (readCronMessage(body)) return { kind: "cron", panelId: null, action: "none: the next cron tick sweeps again" };
  return { kind: "unknown", panelId: null, action: "none: no consumer reads this body" };
}

/**
 * The dead-letter queue's consumer: every message another queue gave up on after its retries
 * is recorded (`dead_letters`, with what was done), and the work it names is put back through
 * that work's own re-drive (redriveDeadMessage).
 */
export function deadLettersHandler(now: () => number = Date.now): QueueHandler {
  return async (batch, env) => {
    for (const message of batch.messages) {
      const body = message.body;
      const at = now();
      let redrive: Redrive;
      try {
        redrive = await redriveDeadMessage(env, body, at);
      } catch (error) {
        console.error(`dead-letter queue: message ${message.id} could not be re-driven; retried`, error);
        message.retry({ delaySeconds: 60 });
        continue;
      }
      const { kind, panelId, action } = redrive;
      console.error(`dead-letter queue: ${kind} message ${message.id} of panel ${panelId ?? "-"} after ${message.attempts} attempt(s): ${action}`, body);
      await recordDeadLetter(env.DB, { queue: batch.queue, kind, panelId, body: JSON.stringify(body) ?? String(body), attempts: message.attempts, action, receivedAt: at });
      message.ack();
    }
  };
}

/**
 * Re-drives a recorded dead letter again, by hand (the operations view): the same re-drive the
 * consumer ran, its outcome added to the letter's action. A body cut at 4,000 characters when
 * recorded no longer parses and is refused.
 */
export async function redriveDeadLetter(env: Env, id: number, now: number): Promise<Result<Redrive & { id: number }>> {
  const letter = await getDeadLetter(env.DB, id);
  if (!letter) return refused("not_found", [], `No dead letter with id ${id}`);
  let body: unknown;
  try {
    body = JSON.parse(letter.body);
  } catch {
    return refused("conflict", [], `Dead letter ${id}'s message was cut when recorded and cannot be re-driven`);
  }
  const redrive = await redriveDeadMessage(env, body, now);
  await noteDeadLetterAction(env.DB, id, `re-driven by hand at ${new Date(now).toISOString()}: ${redrive.action}`);
  return succeeded({ id, ...redrive });
}

export const handleDeadLetters = deadLettersHandler();
