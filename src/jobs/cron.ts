import type { CronTask } from "../lib/tasks";
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
  segmentsCron,
  segmentExportsRedrive,
  panelMovesRedrive,
  sweepIdleSessions,
  redriveWaitingSms,
  redriveWaitingPush,
  archiveOldEvents,
  eraseArchivedEvents,
  housekeeping,
  recheckSenderDomainsTask,
  contactCountsCron,
  // Logs once per isolate when real email is refused (PUBLIC_BASE_URL not https).
  emailSetupWarningTask,
];

export async function runCronTasks(env: Env, now: number, tasks: readonly CronTask[] = CRON_TASKS): Promise<void> {
  const outcomes = await Promise.allSettled(tasks.map((task) => task.run(env, now)));
  outcomes.forEach((outcome, i) => {
    if (outcome.status === "rejected") console.error(`cron task ${tasks[i]!.name} failed`, outcome.reason);
  });
}
