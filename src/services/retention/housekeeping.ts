import type { CronTask } from "../../lib/tasks";
import { deleteImportJobs, deleteOutboxRows, finishedImportsBefore, outboxBefore } from "../../store/housekeeping";
import { forEachShard } from "../access/shards";

/**
 * Housekeeping defaults (docs/operations.md: retention). Import jobs (their row, refused rows
 * and error report) are kept this long after they finished, unless a scheduled campaign still
 * waits for theirs; outbox messages (row and .eml) this long after they were written. Webhook
 * attempt logs keep the last 10,000 attempts per webhook (the dispatcher trims them as it
 * records). Journey instances are kept: their rows are what makes an entry happen once.
 */
export const HOUSEKEEPING = { importJobDays: 30, outboxDays: 30 } as const;
/** Rows removed per kind, per shard, per cron run. */
const PAGE = 200;
const DAY_MS = 86_400_000;

export const housekeeping: CronTask = {
  name: "housekeeping",
  async run(env, now) {
    await forEachShard(env, "housekeeping", async (db) => {
      const jobs = await finishedImportsBefore(db, now - HOUSEKEEPING.importJobDays * DAY_MS, PAGE);
      const reports = jobs.flatMap((j) => (j.errorReportKey ? [j.errorReportKey] : []));
      // Objects first: a crash leaves rows whose object is gone, which the next run removes.
      if (reports.length) await env.FILES.delete(reports);
      if (jobs.length) await deleteImportJobs(db, jobs.map((j) => j.id));
      const messages = await outboxBefore(db, now - HOUSEKEEPING.outboxDays * DAY_MS, PAGE);
      if (messages.length) {
        await env.FILES.delete(messages.map((m) => m.r2Key));
        await deleteOutboxRows(db, messages.map((m) => m.id));
      }
    });
  },
};
