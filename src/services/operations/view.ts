import { FINDINGS_PER_KIND, LATE_PUBLISH_MS, STALLED_SENDING_MS, STUCK_IMPORT_MS, STUCK_MOVE_MS } from "../../domain/operations";
import { config } from "../../lib/config";
import { deadLettersSince, listDeadLetters, type DeadLetter } from "../../store/dead-letters";
import { allHeldConditions, lastCronTicks, listAlertSubscriptions, type CronTick, type HeldCondition } from "../../store/operations";
import {
  disabledWebhooks,
  shardUsage,
  stuckCampaigns,
  stuckImports,
  unverifiedSenderDomains,
  type DisabledWebhook,
  type StuckCampaign,
  type StuckImport,
  type UnverifiedDomain,
} from "../../store/operations-findings";
import { stuckPanelMoves, type PanelMove } from "../../store/panel-moves";
import { panelsPerShard } from "../../store/panels";
import { allShards } from "../../store/shards";

/**
 * What the operations view reads (GET /admin/v1/ops): the queues' backlogs as the runtime tells
 * them, the dead letters, the cron's last ticks, and per shard its size and what is wrong in
 * it. A shard or queue that cannot be read is reported with its error; the rest still answers.
 */

/** The queues a Worker can ask (their producer bindings); the dead-letter queue has none: its letters are recorded instead. */
export const QUEUE_BINDINGS = [
  ["IMPORTS", "imports"],
  ["EVENTS", "events"],
  ["SENDS", "sends"],
  ["JOURNEYS", "journeys"],
  ["CRON", "cron"],
] as const;

export interface QueueReading {
  binding: string;
  queue: string;
  metrics: QueueMetrics | null;
  error: string | null;
}

export interface ShardReading {
  index: number;
  panels: number;
  sizeBytes: number | null;
  contacts: number | null;
  error: string | null;
  webhooks: DisabledWebhook[];
  domains: UnverifiedDomain[];
  imports: StuckImport[];
  campaigns: StuckCampaign[];
}

export interface OperationsReading {
  region: string;
  queues: QueueReading[];
  deadLetters: { recent: Array<{ queue: string; count: number; newest: number }>; latest: DeadLetter[] };
  ticks: CronTick[];
  shards: ShardReading[];
  moves: PanelMove[];
  subscriptions: number;
  holding: HeldCondition[];
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function readQueue(env: Env, binding: string, kind: string, region: string): Promise<QueueReading> {
  const queue = `apiv2-${kind}-${region}`;
  const bound = (env as unknown as Record<string, Queue | undefined>)[binding];
  try {
    if (typeof bound?.metrics !== "function") return { binding, queue, metrics: null, error: "this runtime does not report queue metrics" };
    return { binding, queue, metrics: await bound.metrics(), error: null };
  } catch (error) {
    return { binding, queue, metrics: null, error: message(error) };
  }
}

async function readShard(db: Parameters<typeof shardUsage>[0], index: number, panels: number, now: number): Promise<ShardReading> {
  try {
    const [usage, webhooks, domains, imports, campaigns] = await Promise.all([
      shardUsage(db),
      disabledWebhooks(db, FINDINGS_PER_KIND),
      unverifiedSenderDomains(db, FINDINGS_PER_KIND),
      stuckImports(db, now - STUCK_IMPORT_MS, FINDINGS_PER_KIND),
      stuckCampaigns(db, now - LATE_PUBLISH_MS, now - STALLED_SENDING_MS, FINDINGS_PER_KIND),
    ]);
    return { index, panels, sizeBytes: usage.sizeBytes, contacts: usage.contacts, error: null, webhooks, domains, imports, campaigns };
  } catch (error) {
    return { index, panels, sizeBytes: null, contacts: null, error: message(error), webhooks: [], domains: [], imports: [], campaigns: [] };
  }
}

export async function readOperations(env: Env, now: number): Promise<OperationsReading> {
  const region = config(env).region;
  const [queues, recent, latest, ticks, counts, moves, subscriptions, holding] = await Promise.all([
    Promise.all(QUEUE_BINDINGS.map(([binding, kind]) => readQueue(env, binding, kind, region))),
    deadLettersSince(env.DB, now - 24 * 60 * 60_000),
    listDeadLetters(env.DB, 20),
    lastCronTicks(env.DB, 10),
    panelsPerShard(env.DB),
    stuckPanelMoves(env.DB, now - STUCK_MOVE_MS, FINDINGS_PER_KIND),
    listAlertSubscriptions(env.DB),
    allHeldConditions(env.DB, 200),
  ]);
  const shards = await Promise.all(allShards(env).map((shard) => readShard(shard.db, shard.index, counts.get(shard.index) ?? 0, now)));
  return { region, queues, deadLetters: { recent, latest }, ticks, shards, moves, subscriptions: subscriptions.length, holding };
}

