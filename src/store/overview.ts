import type { ShardDb } from "./shards";
/** The panel's figures at a glance (the panel's Home screen). */
export interface PanelFigures {
  contacts: number;
  lists: number;
  eventsToday: number;
  sendsToday: number;
  runningJourneys: number;
  webhooksNotOperational: number;
}

export async function panelFigures(db: ShardDb, panelId: string, dayStart: number): Promise<PanelFigures> {
  const count = (sql: string, ...bindings: unknown[]) => db.prepare(sql).bind(...bindings);
  const results = await db.batch<{ n: number }>([
    count("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ?", panelId),
    count("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ?", panelId),
    count("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND received_at >= ?", panelId, dayStart),
    // Messages of every channel the outbox provider kept (campaigns and journeys alike).
    count("SELECT COUNT(*) AS n FROM outbox WHERE panel_id = ? AND created_at >= ?", panelId, dayStart),
    count("SELECT COUNT(*) AS n FROM journeys WHERE panel_id = ? AND status = 'running'", panelId),
    count("SELECT COUNT(*) AS n FROM webhooks WHERE panel_id = ? AND state <> 'operational'", panelId),
  ]);
  const n = (i: number) => results[i]!.results[0]?.n ?? 0;
  return { contacts: n(0), lists: n(1), eventsToday: n(2), sendsToday: n(3), runningJourneys: n(4), webhooksNotOperational: n(5) };
}
