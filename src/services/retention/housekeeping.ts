import { config, type Config } from "../../lib/config";
import {
  campaignPartToPrune,
  campaignToPrune,
  deleteAuditEntriesBefore,
  deleteCampaignMessages,
  deleteContactSendsBefore,
  deleteExpiredSignups,
  deleteFormAttemptsBefore,
  deleteFinishedInstances,
  deleteInstanceMessages,
  deleteInstancePoints,
  deleteInstanceStepRuns,
  finishedInstancesBefore,
  deleteGuidsBefore,
  deleteImportJobs,
  deleteOutboxRows,
  deleteSegmentChangesBefore,
  finishedImportsBefore,
  markCampaignMessagesPruned,
  markCampaignPartPruned,
  outboxBefore,
  stampUntimedGuids,
} from "../../store/housekeeping";
import type { ShardDb } from "../../store/shards";
import { keepAbResults, keepPartAbResults } from "../../store/campaigns/ab-tests";
import { shardTask } from "../access/shards";
import { refreshPanelCounts } from "../overview/counts";
import { panelsHoldingContactsOn } from "../../store/panel-partitions";
import { fillBuckets } from "./buckets";
import { MAX_CAP_DAYS } from "../../domain/message-rules";
import { FORM_RATE_WINDOW_MS } from "../../domain/signup-forms";

/**
 * Housekeeping defaults (docs/operations.md: retention). Import jobs (their row, refused rows
 * and error report) are kept this long after they finished, unless a scheduled campaign still
 * waits for theirs; outbox messages (row and .eml) this long after they were written. Webhook
 * attempt logs keep the last 10,000 attempts per webhook (the dispatcher trims them as it
 * records). Campaign recipient rows, event guids, finished journey instances, segment changes
 * and audit entries are pruned by age, their windows vars (config `retentionDays`;
 * docs/operations.md: bounded storage); sends counted for frequency caps after MAX_CAP_DAYS.
 */
export const HOUSEKEEPING = { importJobDays: 30, outboxDays: 30 } as const;
/** Rows removed per kind, per shard, per cron run. */
const PAGE = 200;
/**
 * Rows one pruning statement removes: a few thousand index-ordered rows, milliseconds of work,
 * far under D1's 30 s per statement whatever the table's size.
 */
export const PRUNE_CHUNK = 2000;
/** Pruning statements per kind, per shard, per cron run: up to 8.6 M rows a day per kind. */
const PRUNE_STATEMENTS = 3;
const DAY_MS = 86_400_000;

/** Runs `prune` (one bounded statement) until it removes less than a chunk or the run's budget is spent. */
async function inChunks(prune: () => Promise<number>): Promise<number> {
  let removed = 0;
  for (let i = 0; i < PRUNE_STATEMENTS; i++) {
    const n = await prune();
    removed += n;
    if (n < PRUNE_CHUNK) break;
  }
  return removed;
}

/**
 * Where a shard's recipient rows come due for pruning: the campaigns it homes (from their
 * finish), and the parts it holds of campaigns homed elsewhere (a panel's partitions on several
 * shards, decision 0038 step 4; from the end of their publishing there).
 */
interface RecipientRows {
  next(db: ShardDb, before: number): Promise<string | null>;
  /** Before the rows go: what is read from them and kept with the campaign. */
  keep?(db: ShardDb, campaignId: string): Promise<void>;
  markPruned(db: ShardDb, campaignId: string, now: number): Promise<void>;
}

const HOMED_CAMPAIGNS: RecipientRows = {
  next: campaignToPrune,
  // An A/B test published before shard migration 0113 reads its tallies from the messages: kept
  // with the campaign before they go (a later one's counters outlive them, decision 0057).
  keep: keepAbResults,
  markPruned: markCampaignMessagesPruned,
};

// A part's share of such a test's tallies is kept with it the same way (decision 0038 step 4).
const CAMPAIGN_PARTS: RecipientRows = { next: campaignPartToPrune, keep: keepPartAbResults, markPruned: markCampaignPartPruned };

/** Removes the recipient rows that came due before the window, one campaign after another. */
async function pruneRecipientRows(db: ShardDb, rows: RecipientRows, before: number, now: number): Promise<void> {
  for (let statements = 0; statements < PRUNE_STATEMENTS; ) {
    const campaign = await rows.next(db, before);
    if (campaign === null) return;
    await rows.keep?.(db, campaign);
    let n: number;
    do {
      n = await deleteCampaignMessages(db, campaign, PRUNE_CHUNK);
      statements++;
    } while (n === PRUNE_CHUNK && statements < PRUNE_STATEMENTS);
    if (n === PRUNE_CHUNK) return;
    await rows.markPruned(db, campaign, now);
  }
}

/** Instances one journey pruning pass takes (one statement removes them, at most a chunk). */
const INSTANCES_PER_PASS = 500;
/** Statements journey pruning makes per shard per run: its rows are spread over four tables. */
const JOURNEY_STATEMENTS = 4 * PRUNE_STATEMENTS;

/**
 * Removes instances that ended before `before`, a pass of the oldest at a time: their messages,
 * step runs and points (each statement at most a chunk), then the instances. A pass the run's
 * budget cuts short is taken up by the next run (the same instances are still the oldest).
 */
async function pruneJourneyInstances(db: ShardDb, before: number): Promise<void> {
  let statements = 0;
  const drain = async (prune: () => Promise<number>): Promise<boolean> => {
    while (statements < JOURNEY_STATEMENTS) {
      statements++;
      if ((await prune()) < PRUNE_CHUNK) return true;
    }
    return false;
  };
  while (statements < JOURNEY_STATEMENTS) {
    const ids = await finishedInstancesBefore(db, before, INSTANCES_PER_PASS);
    if (ids.length === 0) return;
    const cleared =
      (await drain(() => deleteInstanceMessages(db, ids, PRUNE_CHUNK))) &&
      (await drain(() => deleteInstanceStepRuns(db, ids, PRUNE_CHUNK))) &&
      (await drain(() => deleteInstancePoints(db, ids, PRUNE_CHUNK)));
    if (!cleared) return;
    statements++;
    await deleteFinishedInstances(db, ids);
    if (ids.length < INSTANCES_PER_PASS) return;
  }
}

/** Prunes every kind with a configured window on one shard, the expired double opt-in signups and the form limits' ended counts. */
export async function pruneShard(db: ShardDb, days: Config["retentionDays"], now: number): Promise<void> {
  const before = (d: number) => now - d * DAY_MS;
  await pruneRecipientRows(db, HOMED_CAMPAIGNS, before(days.campaignMessages), now);
  await pruneRecipientRows(db, CAMPAIGN_PARTS, before(days.campaignMessages), now);
  await inChunks(() => stampUntimedGuids(db, now, PRUNE_CHUNK));
  await inChunks(() => deleteGuidsBefore(db, before(days.eventGuids), PRUNE_CHUNK));
  await pruneJourneyInstances(db, before(days.journeyInstances));
  await inChunks(() => deleteSegmentChangesBefore(db, before(days.segmentChanges), PRUNE_CHUNK));
  await inChunks(() => deleteAuditEntriesBefore(db, before(days.auditLog), PRUNE_CHUNK));
  // Past the longest cap's window a counted send limits nothing (decision 0040).
  await inChunks(() => deleteContactSendsBefore(db, before(MAX_CAP_DAYS), PRUNE_CHUNK));
  // Double opt-in signups whose link expired: no window to configure, the link's own end is it.
  await inChunks(() => deleteExpiredSignups(db, now, PRUNE_CHUNK));
  // Signup form counts whose window ended: they limit nothing any more (decision 0049).
  await inChunks(() => deleteFormAttemptsBefore(db, now - FORM_RATE_WINDOW_MS, PRUNE_CHUNK));
}

export const housekeeping = shardTask("housekeeping", async (env, db, index, now) => {
  const { retentionDays } = config(env);
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
  await pruneShard(db, retentionDays, now);
  // The stored figures screens read (contacts, segment members), a bounded step per run; a
  // panel's part on a shard holding some of its partitions is counted there, and readers sum.
  await refreshPanelCounts(db, await panelsHoldingContactsOn(env.DB, index), now);
  // Buckets of rows made before shard migration 0070 (decision 0038), a few bounded steps per run.
  await fillBuckets(env, db, index, now);
});
