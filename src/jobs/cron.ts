import { duePanels, PANELS_PER_CRON_BATCH, readCronMessage, sendAll, type CronMessage, type CronTask } from "../lib/tasks";
import { panelsOnShard, panelsOnShardAmong } from "../store/panels";
import { allShards } from "../store/shards";
import { redriveListEntries } from "../services/journeys/list-entries";
import { journeyTimers } from "../services/journeys/timers";
import { redriveStalledEvents } from "../services/pipeline/redrive";
import { publishBroadcastsTask } from "../services/broadcasts/publish";
import { redriveStalledImports } from "../services/imports";
import { segmentExportsRedrive } from "../services/segments/export";
import { panelMovesRedrive } from "../services/panels/move";
import { segmentsCron } from "../services/segments/membership";
import { sweepIdleSessions } from "../services/operators/sessions";
import { archiveOldEvents } from "../services/segments/archived-events";
import { eraseArchivedEvents } from "../services/contacts/erase";
import { housekeeping } from "../services/retention/housekeeping";
import { redriveWaitingPush } from "../services/journeys/push";
import { redriveWaitingSms } from "../services/journeys/sms";
import { emailSetupWarningTask } from "../services/channels/email/providers";
import { recheckSenderDomainsTask } from "../services/channels/email/sender-domains";
import { contactCountsCron } from "../services/overview/history";
import { listClearRedrive } from "../services/lists/clear";
import { mirrorResyncTask } from "../services/panels/mirror-resync";
import { stopCopiesTask } from "../services/panels/stop-copies";
import { controlAlertsTask, shardAlertsTask } from "../services/operations/alerts";
import { recordTick } from "../services/operations/ticks";
import { replayRedrive } from "../services/replays/replays";
import { simulationRedrive } from "../services/simulations/simulate";

/**
 * The per-minute Cron Trigger. Each task is independent; one failing does not stop the others.
 * One task a line: branches add tasks side by side.
 */
export const CRON_TASKS: CronTask[] = [
  redriveStalledEvents,
  redriveStalledImports,
  journeyTimers,
  redriveListEntries,
  publishBroadcastsTask,
  listClearRedrive,
  replayRedrive,
  simulationRedrive,
  segmentsCron,
  segmentExportsRedrive,
  panelMovesRedrive,
  sweepIdleSessions,
  redriveWaitingSms,
  redriveWaitingPush,
  archiveOldEvents,
  eraseArchivedEvents,
  housekeeping,
  mirrorResyncTask,
  stopCopiesTask,
  recheckSenderDomainsTask,
  contactCountsCron,
  controlAlertsTask,
  shardAlertsTask,
  // Logs once per isolate when real email is refused (PUBLIC_BASE_URL not https).
  emailSetupWarningTask,
];

/** Whether the tick hands the task out (per shard or per panel) instead of running it here. */
const handedOut = (task: CronTask) => task.shard !== undefined || task.panels !== undefined;

/**
 * The tick: tasks whose work is per shard or per panel are handed out, one CRON message per
 * task and shard, and make no query here; the others (a query or two on the control database,
 * or none) run here. So the tick's D1 queries do not grow with shards or panels
 * (docs/operations.md, the cron).
 */
export async function runCronTasks(env: Env, now: number, tasks: readonly CronTask[] = CRON_TASKS): Promise<void> {
  const startedAt = Date.now();
  const inline = tasks.filter((task) => !handedOut(task));
  const messages: CronMessage[] = tasks.filter(handedOut).flatMap((task) => allShards(env).map((shard) => ({ cron: task.name, shard: shard.index, now })));
  const outcomes = await Promise.allSettled([...inline.map((task) => task.run(env, now)), sendAll(env.CRON, messages)]);
  outcomes.forEach((outcome, i) => {
    if (outcome.status === "rejected") console.error(`cron task ${inline[i]?.name ?? "hand-out to the CRON queue"} failed`, outcome.reason);
  });
  // One batch on the control database: the operations view's last ticks and the cron-late alert read it.
  await recordTick(env, { scheduledAt: now, startedAt, durationMs: Date.now() - startedAt, failedTasks: outcomes.filter((o) => o.status === "rejected").length });
}

/**
 * One message's work. A shard's message runs the task's shard part, then hands out its panels
 * with work in batches (one read of the directory, then the task's `due` query per
 * PANELS_PER_DUE_CHECK panels: an idle panel costs no message); a batch's message runs the
 * task on those of its panels the directory still places on the shard.
 */
export async function runCronMessage(env: Env, message: CronMessage, tasks: readonly CronTask[] = CRON_TASKS): Promise<void> {
  const task = tasks.find((t) => t.name === message.cron);
  if (!task) throw new Error(`no cron task named "${message.cron}"`);
  const { shard, now } = message;
  if (message.panels) {
    const panels = await panelsOnShardAmong(env.DB, shard, message.panels);
    if (panels.length) await task.panels?.(env, shard, panels, now);
    return;
  }
  await task.shard?.(env, shard, now);
  if (!task.panels) return;
  const due = task.due;
  const panels = await duePanels(await panelsOnShard(env.DB, shard), due && ((chunk) => due(env, shard, chunk, now)));
  const ids = panels.map((panel) => panel.id);
  const batches: CronMessage[] = [];
  for (let i = 0; i < ids.length; i += PANELS_PER_CRON_BATCH) batches.push({ cron: task.name, shard, now, panels: ids.slice(i, i + PANELS_PER_CRON_BATCH) });
  await sendAll(env.CRON, batches);
}

/**
 * The CRON queue's consumer. A failed sweep is logged and acknowledged, as the tick's tasks
 * always were: the next tick sweeps again, so a retry would only run two sweeps at once.
 */
export async function handleCronQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = readCronMessage(message.body);
    if (!body) {
      console.error(`CRON queue: message ${message.id} names no cron work; dropped`, message.body);
    } else {
      try {
        await runCronMessage(env, body);
      } catch (error) {
        const where = body.panels ? `${body.panels.length} panel(s) of shard ${body.shard}` : `shard ${body.shard}`;
        console.error(`cron task ${body.cron} failed on ${where}; the next tick sweeps again`, error);
      }
    }
    message.ack();
  }
}
