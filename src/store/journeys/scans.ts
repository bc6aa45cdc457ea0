import type { ShardDb } from "../shards";
import { JOURNEY_COLUMNS, journeyFromRow, type Journey, type JourneyRow } from "./definitions";

// Entry scans of segment journeys: a cursor through the panel's contacts on one shard, kept on
// the journey row there. A panel spread over partitions (decision 0038) scans on each shard
// holding one, its copy of the journey (services/journeys/mirror.ts) carrying that shard's cursor.

/**
 * Moves the scan on from `from` (the cursor the page was read at; a concurrent scan of the
 * same page writes nothing). A finished scan that an upload marked meanwhile starts over.
 * `touch`: the row's `updated_at` (which orders the scans, journeysToScan) moves on; on the
 * panel's home only. A mirror's `updated_at` is the home's, by which the mirror refuses a copy
 * older than its row (mirrorJourneysStatements): a scan moving it on would make the mirror
 * refuse the next status change. A mirror's scans keep their order instead.
 *
 * A page within `staleMs` of the row's `updated_at` (its start or new version; on the home also
 * the page before) ran while isolates that cached the panel's live journeys may not know this
 * one: the ids it reached are kept to be looked at again (rescan_upto; all for the last page).
 */
export async function setScanCursor(db: ShardDb, journeyId: string, from: number, next: number | null, now: number, staleMs: number, touch = true): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = CASE WHEN ?2 IS NULL AND rescan_due = 1 THEN 0 ELSE ?2 END,
         rescan_due = CASE WHEN ?2 IS NULL THEN 0 ELSE rescan_due END, updated_at = CASE WHEN ?5 THEN ?3 ELSE updated_at END,
         rescan_upto = CASE WHEN ?3 < updated_at + ?6 THEN MAX(COALESCE(rescan_upto, 0), COALESCE(?2, ${Number.MAX_SAFE_INTEGER})) ELSE rescan_upto END
       WHERE id = ?4 AND status = 'running' AND scan_cursor = ?1`,
    )
    .bind(from, next, now, journeyId, touch ? 1 : 0, staleMs)
    .run();
}

/**
 * Running journeys on `db` whose scan is done and has contacts to look at again (rescan_upto),
 * once every isolate knows them: `staleMs` after the row's `updated_at`. Not those of a panel in
 * transit here (as journeysToScan).
 */
export async function journeysToRescan(db: ShardDb, now: number, staleMs: number, limit: number): Promise<Array<Journey & { rescanUpto: number }>> {
  const { results } = await db
    .prepare(
      `SELECT ${JOURNEY_COLUMNS}, rescan_upto FROM journeys WHERE rescan_upto IS NOT NULL AND updated_at <= ? AND status = 'running' AND scan_cursor IS NULL
         AND panel_id NOT IN (SELECT panel_id FROM panels_in_transit) ORDER BY updated_at LIMIT ?`,
    )
    .bind(now - staleMs, limit)
    .all<JourneyRow & { rescan_upto: number }>();
  return results.map((row) => ({ ...journeyFromRow(row), rescanUpto: row.rescan_upto }));
}

/** Moves a rescan down from `upto` to `next` (null: done) while the journey runs and no other page moved it. */
export async function setRescanUpto(db: ShardDb, journeyId: string, upto: number, next: number | null): Promise<void> {
  await db.prepare("UPDATE journeys SET rescan_upto = ?3 WHERE id = ?1 AND status = 'running' AND rescan_upto = ?2").bind(journeyId, upto, next).run();
}

/**
 * After a bulk upload: the panel's running segment journeys scan every contact again, from
 * the first; one scanning now finishes its pass, then starts over (rescan_due), so uploads
 * that come often cannot keep a large panel's scan from reaching its last contacts. `touch`:
 * as setScanCursor's.
 */
export async function restartSegmentScans(db: ShardDb, panelId: string, now: number, touch = true): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = COALESCE(scan_cursor, 0), rescan_due = CASE WHEN scan_cursor IS NULL THEN 0 ELSE 1 END,
         updated_at = CASE WHEN ?3 THEN ?1 ELSE updated_at END
       WHERE panel_id = ?2 AND status = 'running' AND trigger_type = 'segment'`,
    )
    .bind(now, panelId, touch ? 1 : 0)
    .run();
}

/**
 * The running journeys on `db` whose entry scan goes on, oldest first. Not those of a panel in
 * transit here (a move copying it here, or removing it from here, decisions 0031 and 0047): a
 * copy's rows land table by table, so a contact may be there before the instance or entry key
 * that says it entered, and a move's target would enter it again. Its scan goes on from the
 * switch, when everything the source held has landed and the source's fence keeps the moving
 * contacts from entering there.
 */
export async function journeysToScan(db: ShardDb, limit: number): Promise<Journey[]> {
  const { results } = await db
    .prepare(
      `SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE status = 'running' AND scan_cursor IS NOT NULL
         AND panel_id NOT IN (SELECT panel_id FROM panels_in_transit) ORDER BY updated_at LIMIT ?`,
    )
    .bind(limit)
    .all<JourneyRow>();
  return results.map(journeyFromRow);
}
