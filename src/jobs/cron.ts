import type { CronTask } from "../lib/tasks";
import { redriveListEntries } from "../services/journeys/list-entries";
import { journeyTimers } from "../services/journeys/timers";
import { redriveStalledEvents } from "../services/pipeline/redrive";
import { publishBroadcastsTask } from "../services/broadcasts/publish";
import { redriveStalledImports } from "../services/imports";
import { segmentsCron } from "../services/segments/membership";
import { sweepIdleSessions } from "../services/operators/sessions";
import { emailSetupWarningTask } from "../services/channels/email/providers";
import { recheckSenderDomainsTask } from "../services/channels/email/sender-domains";

/**
 * The per-minute Cron Trigger: publish due broadcasts, fire due journey timers, re-drive
 * stalled jobs, build segments and re-check their sliding windows, sweep idle operator
 * sessions, look sender domains up again, and log once per isolate when real email is refused.
 * Each task is independent; one failing does not stop the others.
 */
export const CRON_TASKS: CronTask[] = [redriveStalledEvents, redriveStalledImports, journeyTimers, redriveListEntries, publishBroadcastsTask, segmentsCron, sweepIdleSessions, recheckSenderDomainsTask, emailSetupWarningTask];

export async function runCronTasks(env: Env, now: number, tasks: readonly CronTask[] = CRON_TASKS): Promise<void> {
  const outcomes = await Promise.allSettled(tasks.map((task) => task.run(env, now)));
  outcomes.forEach((outcome, i) => {
    if (outcome.status === "rejected") console.error(`cron task ${tasks[i]!.name} failed`, outcome.reason);
  });
}
