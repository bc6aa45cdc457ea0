import type { ShardDb } from "./shards";

/** The panel's history per UTC day (migration 0051): contacts at the day's start, events by name, sends by channel. */

export interface PanelDayRow {
  kind: "contacts" | "events" | "sends";
  day: number;
  name: string;
  n: number;
}

/** The panel's rows from the day starting at `fromDay` on, oldest first. */
export async function panelDays(db: ShardDb, panelId: string, fromDay: number): Promise<PanelDayRow[]> {
  const { results } = await db
    .prepare("SELECT kind, day, name, n FROM panel_days WHERE panel_id = ?1 AND kind IN ('contacts', 'events', 'sends') AND day >= ?2 ORDER BY kind, day, name")
    .bind(panelId, fromDay)
    .all<PanelDayRow>();
  return results;
}

/** Which of the panels already have their contact count for `day`. */
export async function panelsCountedOn(db: ShardDb, panelIds: readonly string[], day: number): Promise<Set<string>> {
  if (panelIds.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT panel_id FROM panel_days WHERE panel_id IN (SELECT value FROM json_each(?1)) AND kind = 'contacts' AND day = ?2 AND name = ''")
    .bind(JSON.stringify(panelIds), day)
    .all<{ panel_id: string }>();
  return new Set(results.map((r) => r.panel_id));
}

/** Records each panel's number of contacts as its count at the start of `day` (kept if one is there). */
export async function recordContactCounts(db: ShardDb, panelIds: readonly string[], day: number): Promise<void> {
  if (panelIds.length === 0) return;
  await db
    .prepare(
      `INSERT INTO panel_days (panel_id, kind, day, name, n)
       SELECT p.value, 'contacts', ?2, '', (SELECT COUNT(*) FROM contacts c WHERE c.panel_id = p.value) FROM json_each(?1) p WHERE true
       ON CONFLICT (panel_id, kind, day, name) DO NOTHING`,
    )
    .bind(JSON.stringify(panelIds), day)
    .run();
}
