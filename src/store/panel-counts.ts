import type { BucketRanges } from "../domain/partitions";
import type { ShardDb } from "./shards";
import { inBucketRanges } from "./sql";
import { fencedPanelHere } from "./panel-move/triggers";

/**
 * Stored figures of a panel (shard migration 0062): its contacts and each saved segment's
 * members as the background refresh last counted them, and its events per 15-minute slot of
 * receipt as the pipeline counts them. Requests read these instead of counting the panel.
 */

/** The subject of a panel's contact count; any other subject is a segment's id. */
export const CONTACTS = "";
/** A slot of panel_received: every time zone's midnight falls on one's start. */
export const RECEIVED_SLOT_MS = 15 * 60_000;

export interface StoredCount {
  /** Null when never counted. */
  n: number | null;
  countedAt: number | null;
}

/** The stored counts of the panel's `subjects` (contacts: CONTACTS), by subject; a subject without a row is absent. */
export async function storedCounts(db: ShardDb, panelId: string, subjects: readonly string[]): Promise<Map<string, StoredCount>> {
  if (subjects.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT subject, n, counted_at FROM panel_counts WHERE panel_id = ?1 AND subject IN (SELECT value FROM json_each(?2))")
    .bind(panelId, JSON.stringify(subjects))
    .all<{ subject: string; n: number | null; counted_at: number | null }>();
  return new Map(results.map((r) => [r.subject, { n: r.n, countedAt: r.counted_at }]));
}

/**
 * Rows counted up to a cap: `read`, how many were read (at most the cap), and `n`, those of them
 * in the shard's buckets (all of them without buckets).
 */
export interface CountedUpTo {
  read: number;
  n: number;
}

/**
 * `rows` (a SELECT of a `bucket` column `b`) counted up to `cap`. With `buckets` (the shard's
 * in the panel's map) `n` keeps to them among the same rows: between a split's switch and its
 * cleaning the source still holds copies of the moved rows, which are the target's (decision
 * 0047). Reads at most `cap` rows either way.
 */
async function countUpTo(db: ShardDb, rows: string, key: string, cap: number, buckets: BucketRanges | null): Promise<CountedUpTo> {
  const owned = buckets ? `COALESCE(SUM(${inBucketRanges("b", "?3")}), 0)` : "COUNT(*)";
  const row = await db
    .prepare(`SELECT COUNT(*) AS read, ${owned} AS n FROM (${rows} LIMIT ?2)`)
    .bind(key, cap, ...(buckets ? [JSON.stringify(buckets)] : []))
    .first<CountedUpTo>();
  return row!;
}

/** The panel's contacts, counted up to `cap` (countUpTo; without `buckets` it reads index entries only). */
export function contactsUpTo(db: ShardDb, panelId: string, cap: number, buckets: BucketRanges | null = null): Promise<CountedUpTo> {
  return countUpTo(db, `SELECT ${buckets ? "bucket" : "1"} AS b FROM contacts WHERE panel_id = ?1`, panelId, cap, buckets);
}

/** The segment's members, counted up to `cap` (countUpTo). */
export function membersUpTo(db: ShardDb, segmentId: string, cap: number, buckets: BucketRanges | null = null): Promise<CountedUpTo> {
  return countUpTo(db, `SELECT ${buckets ? "bucket" : "1"} AS b FROM segment_members WHERE segment_id = ?1`, segmentId, cap, buckets);
}

/**
 * Gives each of `panelIds` a contacts row and each of their saved segments a members row, so
 * the refresh finds them due (never counted); existing rows are kept.
 */
export async function ensureCountRows(db: ShardDb, panelIds: readonly string[]): Promise<void> {
  if (panelIds.length === 0) return;
  const panels = JSON.stringify(panelIds);
  await db.batch([
    db.prepare("INSERT INTO panel_counts (panel_id, subject) SELECT value, '' FROM json_each(?1) WHERE true ON CONFLICT DO NOTHING").bind(panels),
    db
      .prepare("INSERT INTO panel_counts (panel_id, subject) SELECT panel_id, id FROM segments WHERE panel_id IN (SELECT value FROM json_each(?1)) ON CONFLICT DO NOTHING")
      .bind(panels),
  ]);
}

/**
 * Sets the panel's stored figures on `db` to what it holds, counted at `now`: its contacts and
 * each saved segment's members. For the shard that took a partition in transit (a split,
 * decision 0047): none of its figures counted those rows yet, and the sums over the shards read
 * them past the request's cap. One statement, over the partition's index entries (as a list's
 * recount, store/lists.ts).
 */
export function recountStoredStatement(db: ShardDb, panelId: string, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO panel_counts (panel_id, subject, n, counted_at, cursor, pass_n)
       SELECT * FROM (
         SELECT ?1, '', (SELECT COUNT(*) FROM contacts WHERE panel_id = ?1), ?2, NULL, 0
         UNION ALL
         SELECT ?1, s.id, (SELECT COUNT(*) FROM segment_members m WHERE m.segment_id = s.id), ?2, NULL, 0 FROM segments s WHERE s.panel_id = ?1
       ) WHERE true
       ON CONFLICT (panel_id, subject) DO UPDATE SET n = excluded.n, counted_at = excluded.counted_at, cursor = NULL, pass_n = 0`,
    )
    .bind(panelId, now);
}

/**
 * Makes the panel's stored figures on `db` due at once, as never counted: for the shard a
 * partition left (a split), whose figures still count the rows that went. Until the refresh
 * counts them again a request past the cap reads the cap as a floor, never the rows twice.
 */
export function forgetStoredStatement(db: ShardDb, panelId: string): D1PreparedStatement {
  return db.prepare("UPDATE panel_counts SET n = NULL, counted_at = NULL, cursor = NULL, pass_n = 0 WHERE panel_id = ?").bind(panelId);
}

/**
 * Makes a segment's stored members on `db` due at once, as never counted, when its build there
 * has just ended (no rebuild queued): the figure was counted under the old definition or during
 * the build, and a request past the cap would answer it for up to `refreshMs`. Until the refresh
 * (which takes never-counted rows first) counts it again, a request reads the cap as a floor.
 */
export function forgetBuiltMembersStatement(db: ShardDb, panelId: string, segmentId: string): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE panel_counts SET n = NULL, counted_at = NULL, cursor = NULL, pass_n = 0
       WHERE panel_id = ?1 AND subject = ?2 AND EXISTS (SELECT 1 FROM segments WHERE id = ?2 AND build_cursor IS NULL)`,
    )
    .bind(panelId, segmentId);
}

/**
 * One step of the refresh: for at most `rows` due rows of `panelIds` (a pass under way first,
 * then those never counted, then the oldest counted before `staleBefore`), counts the next
 * `chunk` entries of the panel's contact index or the segment's members from the row's cursor.
 * A panel a fence holds here is left alone: a split's source holds its copies of the moved rows
 * until cleaning, which makes its figures due again (decision 0047).
 * A row with fewer than `chunk` left ends its pass: `n` becomes the pass's total and
 * `counted_at` `now`. Each subquery reads at most `chunk` index entries from a seek, so the
 * statement reads at most `rows` x 2 x `chunk` entries whatever the panels' size. Answers the
 * panels of the rows stepped, a panel once a row (fewer than `rows`: nothing more is due).
 */
export async function countStep(db: ShardDb, panelIds: readonly string[], staleBefore: number, now: number, rows: number, chunk: number): Promise<string[]> {
  if (panelIds.length === 0) return [];
  // The entry at offset chunk - 1 from the cursor, and how many there are up to chunk: NULL
  // and fewer when the pass ends here. Contacts by key (the unique index on panel_id, pk_value),
  // members by contact id (the primary key).
  const after = (column: string) => `${column} >= COALESCE(pc.cursor, '') AND (pc.cursor IS NULL OR ${column} > pc.cursor)`;
  const contacts = `FROM contacts k WHERE k.panel_id = pc.panel_id AND ${after("k.pk_value")}`;
  const members = `FROM segment_members m WHERE m.segment_id = pc.subject AND m.contact_id > COALESCE(pc.cursor, -1)`;
  const result = await db
    .prepare(
      `UPDATE panel_counts SET
         n = CASE WHEN c.last IS NULL THEN pass_n + c.k ELSE n END,
         counted_at = CASE WHEN c.last IS NULL THEN ?3 ELSE counted_at END,
         pass_n = CASE WHEN c.last IS NULL THEN 0 ELSE pass_n + c.k END,
         cursor = c.last
       FROM (
         SELECT pc.panel_id, pc.subject,
           CASE WHEN pc.subject = '' THEN (SELECT k.pk_value ${contacts} ORDER BY k.pk_value LIMIT 1 OFFSET ?5 - 1)
                ELSE (SELECT m.contact_id ${members} ORDER BY m.contact_id LIMIT 1 OFFSET ?5 - 1) END AS last,
           CASE WHEN pc.subject = '' THEN (SELECT COUNT(*) FROM (SELECT 1 ${contacts} LIMIT ?5))
                ELSE (SELECT COUNT(*) FROM (SELECT 1 ${members} LIMIT ?5)) END AS k
         FROM panel_counts pc
         WHERE pc.panel_id IN (SELECT value FROM json_each(?1))
           AND (pc.cursor IS NOT NULL OR pc.counted_at IS NULL OR pc.counted_at < ?2)
           AND NOT ${fencedPanelHere("pc")}
         ORDER BY pc.cursor IS NULL, pc.counted_at IS NOT NULL, pc.counted_at
         LIMIT ?4
       ) c
       WHERE panel_counts.panel_id = c.panel_id AND panel_counts.subject = c.subject
       RETURNING panel_counts.panel_id`,
    )
    .bind(JSON.stringify(panelIds), staleBefore, now, rows, chunk)
    .all<{ panel_id: string }>();
  return result.results.map((r) => r.panel_id);
}

/** Removes the panels' receipt and outbox slots before `before` (a seek per panel and table). */
export async function pruneReceivedSlots(db: ShardDb, panelIds: readonly string[], before: number): Promise<void> {
  if (panelIds.length === 0) return;
  const ids = JSON.stringify(panelIds);
  await db.batch([
    db.prepare("DELETE FROM panel_received WHERE panel_id IN (SELECT value FROM json_each(?1)) AND slot < ?2").bind(ids, before),
    db.prepare("DELETE FROM panel_sent WHERE panel_id IN (SELECT value FROM json_each(?1)) AND slot < ?2").bind(ids, before),
  ]);
}
