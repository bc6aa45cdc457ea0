import type { ShardDb } from "./shards";
/**
 * The panel's small figures at a glance (the panel's Home screen): each reads a table with a
 * row per list, journey or webhook, or the per-slot receipt counts (migration 0062), never the
 * panel's contacts or events; the contacts figure is stored (services/overview/counts.ts).
 */
export interface PanelFigures {
  lists: number;
  eventsToday: number;
  sendsToday: number;
  runningJourneys: number;
  webhooksNotOperational: number;
}

/** Events received and messages sent since `dayStart`: per-shard slot counts, summed over a panel's shards by the reader. */
export interface TodayFigures {
  eventsToday: number;
  sendsToday: number;
}

function todayStatements(db: ShardDb, panelId: string, dayStart: number): D1PreparedStatement[] {
  return [
    // dayStart, a zone's midnight, is a slot's start: the slots from it on are today's.
    db.prepare("SELECT COALESCE(SUM(n), 0) AS n FROM panel_received WHERE panel_id = ? AND slot >= ?").bind(panelId, dayStart),
    // Messages of every channel the outbox provider kept (campaigns and journeys alike).
    // Counted per 15-minute slot as the outbox keeps them (shard migration 0071), not a count of the day's rows.
    db.prepare("SELECT COALESCE(SUM(n), 0) AS n FROM panel_sent WHERE panel_id = ? AND slot >= ?").bind(panelId, dayStart),
  ];
}

const firstN = (results: D1Result<{ n: number }>[], i: number) => results[i]!.results[0]?.n ?? 0;

export async function panelFigures(db: ShardDb, panelId: string, dayStart: number): Promise<PanelFigures> {
  const count = (sql: string, ...bindings: unknown[]) => db.prepare(sql).bind(...bindings);
  const results = await db.batch<{ n: number }>([
    count("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND deleted_at IS NULL", panelId),
    ...todayStatements(db, panelId, dayStart),
    count("SELECT COUNT(*) AS n FROM journeys WHERE panel_id = ? AND status = 'running'", panelId),
    count("SELECT COUNT(*) AS n FROM webhooks WHERE panel_id = ? AND state <> 'operational'", panelId),
  ]);
  const n = (i: number) => firstN(results, i);
  return { lists: n(0), eventsToday: n(1), sendsToday: n(2), runningJourneys: n(3), webhooksNotOperational: n(4) };
}

/** Only the day's figures, for a shard holding some of a panel's partitions but not its configuration (a mirror, decision 0041). */
export async function todayFigures(db: ShardDb, panelId: string, dayStart: number): Promise<TodayFigures> {
  const results = await db.batch<{ n: number }>(todayStatements(db, panelId, dayStart));
  return { eventsToday: firstN(results, 0), sendsToday: firstN(results, 1) };
}
