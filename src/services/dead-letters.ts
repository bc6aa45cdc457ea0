import { readCronMessage, type QueueHandler } from "../lib/tasks";
import { recordDeadLetter } from "../store/dead-letters";
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

/**
 * The dead-letter queue's consumer: every message another queue gave up on after its retries
 * is recorded (`dead_letters`, with what was done), and the work it names is put back through
 * that work's own re-drive, which keeps its rules: an import counts a failed attempt, event
 * batches count a re-drive (and fail after the last), a campaign batch is nudged after a
 * pause while the campaign sends, journey work is nudged after a pause; a cron sweep is left
 * to the next tick.
 */
export function deadLettersHandler(now: () => number = Date.now): QueueHandler {
  return async (batch, env) => {
    for (const message of batch.messages) {
      const body = message.body;
      const at = now();
      let kind = "unknown";
      let panelId: string | null = null;
      let action: string;
      try {
        const importRef = readImportNudge(body);
        const journeys = readJourneysNudge(body);
        const exportRef = readExportNudge(body);
        if (exportRef) {
          [kind, panelId] = ["segment_exports", exportRef.panelId];
          action = await redriveDeadExport(env, exportRef, at);
        } else if (importRef) {
          [kind, panelId] = ["imports", importRef.panelId];
          action = await redriveDeadImport(env, importRef, at);
        } else if (isEventsNudge(body)) {
          [kind, panelId] = ["events", body.panel];
          const { nudged, failed } = await redriveEventBatches(env, at, { panelId: body.panel, ids: body.batches });
          action = `${nudged} batch(es) nudged, ${failed} marked failed`;
        } else if (isSmsNudge(body) || isPushNudge(body)) {
          [kind, panelId] = ["sends", body.panelId];
          action = await redriveDeadNudge(env, body);
        } else if (isSendNudge(body)) {
          [kind, panelId] = ["sends", body.panelId];
          action = await redriveDeadSend(env, body);
        } else if (journeys) {
          [kind, panelId] = ["journeys", journeys.panel];
          await env.JOURNEYS.send(journeys, { delaySeconds: JOURNEYS_PAUSE_S });
          action = `nudged again in ${JOURNEYS_PAUSE_S} s`;
        } else if (readCronMessage(body)) {
          // A sweep whose consumer died each time (it acknowledges a sweep that failed).
          kind = "cron";
          action = "none: the next cron tick sweeps again";
        } else {
          action = "none: no consumer reads this body";
        }
      } catch (error) {
        console.error(`dead-letter queue: message ${message.id} could not be re-driven; retried`, error);
        message.retry({ delaySeconds: 60 });
        continue;
      }
      console.error(`dead-letter queue: ${kind} message ${message.id} of panel ${panelId ?? "-"} after ${message.attempts} attempt(s): ${action}`, body);
      await recordDeadLetter(env.DB, { queue: batch.queue, kind, panelId, body: JSON.stringify(body) ?? String(body), attempts: message.attempts, action, receivedAt: at });
      message.ack();
    }
  };
}

export const handleDeadLetters = deadLettersHandler();
