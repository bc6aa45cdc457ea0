import type { ShardDb } from "../shards";
import { JOURNEY_COLUMNS, journeyFromRow, type Journey, type JourneyRow } from "./definitions";

// Entry scans of segment journeys: a cursor through the panel's contacts, kept on the journey row.

/**
 * Moves the scan on from `from` (the cursor the page was read at; a concurrent scan of the
 * same page writes nothing). A finished scan that an upload marked meanwhile starts over.
 */
export async function setScanCursor(db: ShardDb, journeyId: string, from: number, next: number | null, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = CASE WHEN ?2 IS NULL AND rescan_due = 1 THEN 0 ELSE ?2 END,
         rescan_due = CASE WHEN ?2 IS NULL THEN 0 ELSE rescan_due END, updated_at = ?3
       WHERE id = ?4 AND status = 'running' AND scan_cursor = ?1`,
    )
    .bind(from, next, now, journeyId)
    .run();
}

/**
 * After a bulk upload: the panel's running segment journeys scan every contact again, from
 * the first; one scanning now finishes its pass, then starts over (rescan_due), so uploads
 * that come often cannot keep a large panel's scan from reaching its last contacts.
 */
export async function restartSegmentScans(db: ShardDb, panelId: string, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = COALESCE(scan_cursor, 0), rescan_due = CASE WHEN scan_cursor IS NULL THEN 0 ELSE 1 END, updated_at = ?
       WHERE panel_id = ? AND status = 'running' AND trigger_type = 'segment'`,
    )
    .bind(now, panelId)
    .run();
}

export async function journeysToScan(db: ShardDb, limit: number): Promise<Journey[]> {
  const { results } = await db
    .prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE status = 'running' AND scan_cursor IS NOT NULL ORDER BY updated_at LIMIT ?`)
    .bind(limit)
    .all<JourneyRow>();
  return results.map(journeyFromRow);
}
