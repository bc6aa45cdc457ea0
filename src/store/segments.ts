import type { ShardDb } from "./shards";
import type { ActivityDefinition, ActivityParamType } from "../domain/activity";
import type { AttributeType } from "../domain/attributes";
import type { AudienceUser } from "../domain/lists";
import type { SegmentDependencies, SegmentNode } from "../domain/segments";
import type { KeyedContact } from "./contacts";
import { AUDIENCE_IN_USE } from "./lists";
import type { CompiledSegment, SegmentCatalog } from "./segment-sql";
import type { BucketRange } from "./panel-move/tables";
import type { BucketRanges } from "../domain/partitions";
import { inBucketRanges } from "./sql";
import { fencedContactCopyHere, fencedCopyHere } from "./panel-move/triggers";

/**
 * Saved segments (CONTRACT 9), their members and the log of entries and exits. Membership
 * statements embed a compiled `match` (segment-sql.ts), which binds the panel as ?1 and its
 * values as ?2; the statements' own parameters come after.
 */

export interface Segment {
  id: string;
  panelId: string;
  name: string;
  match: SegmentNode;
  dependencies: SegmentDependencies;
  version: number;
  buildCursor: number | null;
  checkedAt: number;
  createdAt: number;
  updatedAt: number;
}

interface SegmentRow {
  id: string;
  panel_id: string;
  name: string;
  definition: string;
  on_attributes: number;
  on_lists: number;
  on_events: number;
  on_sends: number;
  slides: number;
  on_sms_stops: number;
  version: number;
  build_cursor: number | null;
  checked_at: number;
  created_at: number;
  updated_at: number;
}

const COLUMNS = "id, panel_id, name, definition, on_attributes, on_lists, on_events, on_sends, slides, on_sms_stops, version, build_cursor, checked_at, created_at, updated_at";

function fromRow(row: SegmentRow): Segment {
  return {
    id: row.id,
    panelId: row.panel_id,
    name: row.name,
    match: JSON.parse(row.definition) as SegmentNode,
    dependencies: { attributes: row.on_attributes === 1, lists: row.on_lists === 1, events: row.on_events === 1, sends: row.on_sends === 1, slides: row.slides === 1, smsStops: row.on_sms_stops === 1 },
    version: row.version,
    buildCursor: row.build_cursor,
    checkedAt: row.checked_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The dependencies as the row's flag columns (FLAG_COLUMNS), in order. */
const flags = (d: SegmentDependencies) => [Number(d.attributes), Number(d.lists), Number(d.events), Number(d.sends), Number(d.slides), Number(d.smsStops)];
const FLAG_COLUMNS = "on_attributes, on_lists, on_events, on_sends, slides, on_sms_stops";

/** The panel's attribute types and activity definitions, which a compiled segment reads. */
export async function loadSegmentCatalog(db: ShardDb, panelId: string): Promise<SegmentCatalog> {
  const [attributes, activities] = await db.batch<{ name: string; type: string; id: number; params: string; created_at: number }>([
    db.prepare("SELECT name, type FROM attributes WHERE panel_id = ?").bind(panelId),
    db.prepare("SELECT id, name, params, created_at FROM activities WHERE panel_id = ?").bind(panelId),
  ]);
  return {
    attributes: new Map(attributes!.results.map((a) => [a.name, a.type as AttributeType])),
    activities: new Map(
      activities!.results.map((a): [string, ActivityDefinition] => [
        a.name.toLowerCase(),
        { id: a.id, name: a.name, params: JSON.parse(a.params) as Record<string, ActivityParamType>, createdAt: a.created_at },
      ]),
    ),
  };
}

/** Creates the segment with a full build due (from contact id 0). */
export async function insertSegment(db: ShardDb, segment: Pick<Segment, "id" | "panelId" | "name" | "match" | "dependencies">, now: number): Promise<Segment> {
  const row = await db
    .prepare(
      `INSERT INTO segments (id, panel_id, name, definition, ${FLAG_COLUMNS}, build_cursor, checked_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) RETURNING ${COLUMNS}`,
    )
    .bind(segment.id, segment.panelId, segment.name, JSON.stringify(segment.match), ...flags(segment.dependencies), now, now, now)
    .first<SegmentRow>();
  return fromRow(row!);
}

/** Replaces the definition: a new version, built again from the first contact. Null when there is no such segment. */
export async function updateSegment(
  db: ShardDb,
  panelId: string,
  id: string,
  change: Pick<Segment, "name" | "match" | "dependencies">,
  now: number,
): Promise<Segment | null> {
  const [updated] = await db.batch<SegmentRow>([
    db
      .prepare(
        `UPDATE segments SET name = ?3, definition = ?4, on_attributes = ?5, on_lists = ?6, on_events = ?7, on_sends = ?8, slides = ?9, on_sms_stops = ?10,
           version = version + 1, build_cursor = 0, rebuild_due = 0, recheck_upto = NULL, checked_at = ?11, updated_at = ?11
         WHERE panel_id = ?1 AND id = ?2 RETURNING ${COLUMNS}`,
      )
      .bind(panelId, id, change.name, JSON.stringify(change.match), ...flags(change.dependencies), now),
    // The stored member count (migration 0062) was of the old definition: counted again.
    db.prepare("UPDATE panel_counts SET n = NULL, counted_at = NULL, cursor = NULL, pass_n = 0 WHERE panel_id = ? AND subject = ?").bind(panelId, id),
  ]);
  const row = updated!.results[0];
  return row ? fromRow(row) : null;
}

export async function getSegment(db: ShardDb, panelId: string, id: string): Promise<Segment | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM segments WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<SegmentRow>();
  return row ? fromRow(row) : null;
}

export async function listSegments(db: ShardDb, panelId: string): Promise<Segment[]> {
  const { results } = await db.prepare(`SELECT ${COLUMNS} FROM segments WHERE panel_id = ? ORDER BY created_at, id`).bind(panelId).all<SegmentRow>();
  return results.map(fromRow);
}

/** Existing segment ids of the panel among `ids`. */
export async function existingSegmentIds(db: ShardDb, panelId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT id FROM segments WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify(ids))
    .all<{ id: string }>();
  return new Set(results.map((r) => r.id));
}

/**
 * What still uses the segment, campaigns first, as listUsers names a list's: campaigns not yet
 * done whose audience names it, running or paused journeys it triggers.
 */
export async function segmentUsers(db: ShardDb, panelId: string, id: string): Promise<AudienceUser[]> {
  const [campaigns, journeys] = await db.batch<{ name: string; status: string }>([
    db
      .prepare(
        `SELECT c.name, c.status FROM campaigns c WHERE c.panel_id = ?1 AND c.status IN ${AUDIENCE_IN_USE} AND c.audience IS NOT NULL
           AND (EXISTS (SELECT 1 FROM json_each(c.audience, '$.segments') s WHERE s.value = ?2)
             OR EXISTS (SELECT 1 FROM json_each(c.audience, '$.exclude_segments') s WHERE s.value = ?2))
         ORDER BY c.created_at, c.id`,
      )
      .bind(panelId, id),
    db
      .prepare("SELECT name, status FROM journeys WHERE panel_id = ? AND status IN ('running', 'paused') AND trigger_type = 'segment' AND trigger_key = ? ORDER BY created_at, id")
      .bind(panelId, id),
  ]);
  return [...campaigns!.results.map((r) => ({ kind: "campaign" as const, ...r })), ...journeys!.results.map((r) => ({ kind: "journey" as const, ...r }))];
}

/**
 * Deletes the segment, its members and its log; false when there was none. `buckets`: the
 * shard's in the panel's map, whose fenced copies outside them are left to a split's cleaning
 * (deleteSegmentsStatements).
 */
export async function deleteSegment(db: ShardDb, panelId: string, id: string, buckets: BucketRanges | null = null): Promise<boolean> {
  const results = await db.batch(deleteSegmentsStatements(db, panelId, { only: [id] }, buckets));
  return results.at(-1)!.meta.changes > 0;
}

/** How many id ranges a segment count's sample is drawn from on a panel past the cap. */
const SAMPLE_WINDOWS = 16;

/**
 * How many of the panel's contacts on this shard were read and how many of them match
 * `compiled` (a `probe`), reading at most `examine` contacts whatever the panel's size (issue
 * 42): all of them when the panel has fewer (`exact`);
 * else a sample spread over the panel's ids, the first contacts of SAMPLE_WINDOWS equal id
 * ranges between its first and last, so the oldest contacts do not stand for the panel. Both
 * read contacts_by_panel from a seek, never sorting.
 * With `buckets` (the shard's in the panel's map) only the contacts in them are counted, among
 * the same rows read: between a split's switch and its cleaning the source still holds copies
 * of the moved contacts, which are the target's (decision 0047).
 */
export async function countMatchingInSample(
  db: ShardDb,
  panelId: string,
  compiled: CompiledSegment,
  examine: number,
  buckets: BucketRanges | null = null,
): Promise<{ examined: number; hits: number; exact: boolean }> {
  const owned = buckets ? inBucketRanges("c.bucket", "?4") : "1";
  const matching = (range: string, limit: string) =>
    `SELECT (${compiled.where}) AS hit, ${owned} AS owned FROM contacts c INDEXED BY contacts_by_panel WHERE c.panel_id = ?1${range} ORDER BY c.id LIMIT ${limit}`;
  const figures = "COUNT(*) AS scanned, COALESCE(SUM(owned), 0) AS examined, COALESCE(SUM(hit AND owned), 0) AS hits";
  const ranges = buckets ? [JSON.stringify(buckets)] : [];
  const first = (await db
    .prepare(
      `SELECT ${figures},
         (SELECT MIN(id) FROM contacts INDEXED BY contacts_by_panel WHERE panel_id = ?1) AS lo,
         (SELECT MAX(id) FROM contacts INDEXED BY contacts_by_panel WHERE panel_id = ?1) AS hi
       FROM (${matching("", "?3")})`,
    )
    .bind(panelId, compiled.values, examine, ...ranges)
    .first<{ scanned: number; examined: number; hits: number; lo: number | null; hi: number | null }>())!;
  if (first.scanned < examine || first.lo === null || first.hi === null) return { examined: first.examined, hits: first.hits, exact: true };
  const windows = Math.min(SAMPLE_WINDOWS, examine);
  const span = first.hi - first.lo + 1;
  const edge = (k: number) => first.lo! + Math.floor((span * k) / windows);
  // One statement a window, in one batch: D1 refuses a compound SELECT of more than five terms.
  const rows = await db.batch<{ examined: number; hits: number }>(
    Array.from({ length: windows }, (_, k) =>
      db
        .prepare(`SELECT ${figures} FROM (${matching(` AND c.id >= ${edge(k)} AND c.id < ${edge(k + 1)}`, String(Math.floor(examine / windows)))})`)
        .bind(panelId, compiled.values, ...(buckets ? [null, ...ranges] : [])),
    ),
  );
  const sum = (figure: "examined" | "hits") => rows.reduce((total, row) => total + row.results[0]![figure], 0);
  return { examined: sum("examined"), hits: sum("hits"), exact: false };
}

/**
 * How many of the panel's contacts match `compiled` (a `probe`: each contact checked by index
 * lookups, nothing materialised), counted up to `cap`: the statement stops at the cap's match.
 * With `among`, only members of those lists and segments are read (the outer loop, so a small
 * audience in a big panel costs its own size); else the panel's contacts in order.
 */
export async function countMatchingUpTo(
  db: ShardDb,
  panelId: string,
  compiled: CompiledSegment,
  cap: number,
  among?: { lists: readonly number[]; segments: readonly string[] },
  buckets: BucketRanges | null = null,
): Promise<number> {
  const source = among
    ? `(SELECT m.contact_id AS id FROM list_members m WHERE m.panel_id = ?1 AND m.list_id IN (SELECT value FROM json_each(?4))
        UNION SELECT s.contact_id FROM segment_members s WHERE s.segment_id IN (SELECT value FROM json_each(?5))) k CROSS JOIN contacts c ON c.id = k.id`
    : "contacts c";
  // With `buckets`, only the contacts this shard owns in the panel's map (a split's source still holds copies of the moved ones).
  const owned = buckets ? ` AND ${inBucketRanges("c.bucket", "?6")}` : "";
  const row = await db
    .prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${source} WHERE c.panel_id = ?1 AND ${compiled.where}${owned} LIMIT ?3)`)
    .bind(
      panelId,
      compiled.values,
      cap,
      ...(among || buckets ? [JSON.stringify(among?.lists ?? []), JSON.stringify(among?.segments ?? [])] : []),
      ...(buckets ? [JSON.stringify(buckets)] : []),
    )
    .first<{ n: number }>();
  return row!.n;
}

/** The segment's members on this shard; with `buckets`, those in them (the shard's in the panel's map). */
export async function memberCount(db: ShardDb, segmentId: string, buckets: BucketRanges | null = null): Promise<number> {
  const owned = buckets ? ` AND ${inBucketRanges("bucket", "?2")}` : "";
  const row = await db
    .prepare(`SELECT COUNT(*) AS n FROM segment_members WHERE segment_id = ?1${owned}`)
    .bind(segmentId, ...(buckets ? [JSON.stringify(buckets)] : []))
    .first<{ n: number }>();
  return row!.n;
}

/** A page of the segment's members, by contact id after `afterId`. */
export async function segmentMembersPage(db: ShardDb, panelId: string, segmentId: string, afterId: number, limit: number): Promise<KeyedContact[]> {
  const { results } = await db
    .prepare(
      `SELECT c.id, c.pk_value, c.attrs FROM segment_members m JOIN contacts c ON c.id = m.contact_id
       WHERE m.segment_id = ?1 AND m.panel_id = ?2 AND m.contact_id > ?3 ORDER BY m.contact_id LIMIT ?4`,
    )
    .bind(segmentId, panelId, afterId, limit)
    .all<{ id: number; pk_value: string; attrs: string }>();
  return results.map((r) => ({ id: r.id, key: r.pk_value, attributes: JSON.parse(r.attrs) as KeyedContact["attributes"] }));
}

/** Where a membership statement looks: given contacts, a range of contact ids, or a subquery naming contact ids. */
export type MemberScope = { contactIds: readonly number[] } | { afterId: number; uptoId: number } | { candidates: string };

/** The scope's test on `column`; its parameters follow the statement's first four (?5, ?6). */
function scopeSql(scope: MemberScope, column: string): { sql: string; binds: unknown[] } {
  if ("contactIds" in scope) return { sql: `${column} IN (SELECT value FROM json_each(?5))`, binds: [JSON.stringify(scope.contactIds)] };
  if ("afterId" in scope) return { sql: `${column} > ?5 AND ${column} <= ?6`, binds: [scope.afterId, scope.uptoId] };
  return { sql: `${column} IN (${scope.candidates})`, binds: [] };
}

/**
 * Two statements, for the caller's batch, that bring the segment's members within `scope` in
 * line with `compiled` (a `probe`): matching contacts enter, members that no longer match (or
 * no longer exist) leave; the triggers log each and leave the journeys' entries. Nothing is
 * written unless the segment is still at `version`. The contacts are read by rowid (NOT
 * INDEXED): the planner would otherwise walk the panel's key index, every contact of the panel.
 */
export function refreshMembersStatements(
  db: ShardDb,
  segment: Pick<Segment, "id" | "panelId" | "version">,
  compiled: CompiledSegment,
  scope: MemberScope,
  now: number,
): D1PreparedStatement[] {
  const contacts = scopeSql(scope, "c.id");
  const members = scopeSql(scope, "contact_id");
  const current = "EXISTS (SELECT 1 FROM segments s WHERE s.id = ?3 AND s.version = ?4)";
  const binds = [segment.panelId, compiled.values, segment.id, segment.version, ...contacts.binds];
  return [
    db
      .prepare(
        `INSERT INTO segment_members (segment_id, contact_id, panel_id, entered_at, bucket)
         SELECT ?3, c.id, ?1, ?${binds.length + 1}, c.bucket FROM contacts c NOT INDEXED WHERE c.panel_id = ?1 AND ${contacts.sql} AND ${current} AND ${compiled.where}
         ON CONFLICT DO NOTHING`,
      )
      .bind(...binds, now),
    db
      .prepare(
        `DELETE FROM segment_members WHERE segment_id = ?3 AND ${members.sql} AND ${current}
           AND contact_id NOT IN (SELECT c.id FROM contacts c NOT INDEXED WHERE c.panel_id = ?1 AND ${contacts.sql} AND ${compiled.where})`,
      )
      .bind(...binds),
  ];
}

/**
 * Pairs to re-check: `[i, contactId]`, segment `segments[i]` and a contact. One statement
 * evaluates each pair under its own segment's match (a CASE over the compiled matches, so
 * several segments share a statement without a compound SELECT) and reads only that pair's
 * membership, where a contact-by-segment product would read every segment for every contact.
 * Binds ?1 panel, ?2 values (compileSegments, in the order of `segments`), ?3 the pairs, ?4 the
 * segment ids, ?5 now, ?6 their "id:version".
 */
export type SegmentPair = readonly [index: number, contactId: number];

const PAIR_SEGMENT = "json_extract(?4, '$[' || (p.value->>0) || ']')";

/**
 * Whether the pair's contact matches its segment now: 1 or 0 (a contact gone matches nothing).
 * Each match is the WHERE of a subquery: there SQLite stops at the first condition that fails,
 * where as a value (a CASE result) it computes every term of an AND, event counts included
 * (a pair's check took 20 µs instead of 4 in EXPLAIN-equal plans).
 */
function pairMatches(wheres: readonly string[]): string {
  return `CASE WHEN c.id IS NULL THEN 0 ELSE CASE p.value->>0 ${wheres.map((where, i) => `WHEN ${i} THEN EXISTS (SELECT 1 WHERE ${where})`).join(" ")} ELSE 0 END END`;
}

const PAIR_CONTACT = "json_each(?3) p LEFT JOIN contacts c NOT INDEXED ON c.id = p.value->>1 AND c.panel_id = ?1";
/** The pair's segment, unless it was edited since (another version): a stale definition changes nothing. */
const CURRENT_SEGMENT = `JOIN segments s ON s.id = ${PAIR_SEGMENT} AND s.id || ':' || s.version IN (SELECT value FROM json_each(?6))`;

function pairBinds(panelId: string, segments: ReadonlyArray<Pick<Segment, "id" | "version">>, values: string, pairs: readonly SegmentPair[], now: number): unknown[] {
  return [panelId, values, JSON.stringify(pairs), JSON.stringify(segments.map((s) => s.id)), now, JSON.stringify(segments.map((s) => `${s.id}:${s.version}`))];
}

/** A read: the pairs whose membership differs from their match now (`i`, `cid`, `matches`: 1 to enter, 0 to leave). */
export function differingPairsStatement(
  db: ShardDb,
  panelId: string,
  segments: ReadonlyArray<Pick<Segment, "id" | "version">>,
  compiled: { wheres: readonly string[]; values: string },
  pairs: readonly SegmentPair[],
): D1PreparedStatement {
  return db
    .prepare(
      `SELECT i, cid, matches FROM (
         SELECT p.value->>0 AS i, p.value->>1 AS cid, ${pairMatches(compiled.wheres)} AS matches,
           EXISTS (SELECT 1 FROM segment_members m WHERE m.segment_id = ${PAIR_SEGMENT} AND m.contact_id = p.value->>1) AS member
         FROM ${PAIR_CONTACT})
       WHERE matches <> member`,
    )
    .bind(panelId, compiled.values, JSON.stringify(pairs), JSON.stringify(segments.map((s) => s.id)));
}

/**
 * Two statements, for the caller's batch, that bring these pairs' memberships in line: the
 * entering ones inserted, the leaving ones deleted, each evaluated again as it is written (a
 * change since the read is seen) and only under the segment's current version.
 */
export function refreshPairsStatements(
  db: ShardDb,
  panelId: string,
  segments: ReadonlyArray<Pick<Segment, "id" | "version">>,
  compiled: { wheres: readonly string[]; values: string },
  entering: readonly SegmentPair[],
  leaving: readonly SegmentPair[],
  now: number,
): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  if (entering.length) {
    statements.push(
      db
        .prepare(
          `INSERT INTO segment_members (segment_id, contact_id, panel_id, entered_at, bucket)
           SELECT s.id, c.id, ?1, ?5, c.bucket FROM ${PAIR_CONTACT} ${CURRENT_SEGMENT} WHERE ${pairMatches(compiled.wheres)} = 1
           ON CONFLICT DO NOTHING`,
        )
        .bind(...pairBinds(panelId, segments, compiled.values, entering, now)),
    );
  }
  if (leaving.length) {
    statements.push(
      db
        .prepare(
          `DELETE FROM segment_members WHERE (segment_id, contact_id) IN (
             SELECT s.id, p.value->>1 FROM ${PAIR_CONTACT} ${CURRENT_SEGMENT} WHERE ${pairMatches(compiled.wheres)} = 0 AND ?5 IS NOT NULL)`,
        )
        .bind(...pairBinds(panelId, segments, compiled.values, leaving, now)),
    );
  }
  return statements;
}

/**
 * The last contact id of the page of `limit` contacts after `afterId`; null when there are none.
 * `down`: the first id of the page of the `limit` highest ids up to `afterId` (included).
 */
export async function contactPageEnd(db: ShardDb, panelId: string, afterId: number, limit: number, down = false): Promise<number | null> {
  const row = await db
    .prepare(`SELECT ${down ? "MIN" : "MAX"}(id) AS upto FROM (SELECT id FROM contacts WHERE panel_id = ? AND ${down ? "id <= ? ORDER BY id DESC" : "id > ? ORDER BY id"} LIMIT ?)`)
    .bind(panelId, afterId, limit)
    .first<{ upto: number | null }>();
  return row?.upto ?? null;
}

/**
 * Moves a build on from `from` (null: done, unless a rebuild was asked for meanwhile). False when
 * another pass or an edit moved it. A page built within `staleMs` of the version's save (its
 * checked_at while it builds) may have passed contacts that isolates not yet knowing the version
 * write after it: the ids it reached are kept for a re-check (recheck_upto; all of them for the
 * last page, which reaches past the last contact).
 */
export function buildCursorStatement(db: ShardDb, segment: Pick<Segment, "id" | "version">, from: number, next: number | null, now: number, staleMs: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE segments SET build_cursor = CASE WHEN ?3 IS NULL AND rebuild_due = 1 THEN 0 ELSE ?3 END,
         rebuild_due = CASE WHEN ?3 IS NULL THEN 0 ELSE rebuild_due END, updated_at = ?4,
         recheck_upto = CASE WHEN ?4 < checked_at + ?6 THEN MAX(COALESCE(recheck_upto, 0), COALESCE(?3, ${Number.MAX_SAFE_INTEGER})) ELSE recheck_upto END
       WHERE id = ?1 AND version = ?5 AND build_cursor = ?2`,
    )
    .bind(segment.id, from, next, now, segment.version, staleMs);
}

/**
 * Segments whose re-check is due: built, and every isolate knows their version (`staleMs` since
 * their save, or since the build or slide that last set checked_at). A system scan across panels.
 */
export async function segmentsToRecheck(db: ShardDb, now: number, staleMs: number, limit: number): Promise<Array<Segment & { recheckUpto: number }>> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS}, recheck_upto FROM segments WHERE recheck_upto IS NOT NULL AND checked_at <= ? AND build_cursor IS NULL ORDER BY checked_at LIMIT ?`)
    .bind(now - staleMs, limit)
    .all<SegmentRow & { recheck_upto: number }>();
  return results.map((row) => ({ ...fromRow(row), recheckUpto: row.recheck_upto }));
}

/** Moves a re-check down from `upto` to `next` (null: done), while the segment is at its version and no other pass moved it. */
export function recheckCursorStatement(db: ShardDb, segment: Pick<Segment, "id" | "version">, upto: number, next: number | null): D1PreparedStatement {
  return db.prepare("UPDATE segments SET recheck_upto = ?3 WHERE id = ?1 AND version = ?4 AND recheck_upto = ?2").bind(segment.id, upto, next, segment.version);
}

/** Segments with a build under way, least recently moved first (a system scan across panels). */
export async function segmentsToBuild(db: ShardDb, limit: number): Promise<Segment[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM segments WHERE build_cursor IS NOT NULL ORDER BY updated_at LIMIT ?`)
    .bind(limit)
    .all<SegmentRow>();
  return results.map(fromRow);
}

/** After a bulk upload: the panel's segments that read attributes or lists are built again. */
export async function rebuildSegments(db: ShardDb, panelId: string, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE segments SET build_cursor = COALESCE(build_cursor, 0), rebuild_due = CASE WHEN build_cursor IS NULL THEN 0 ELSE 1 END, updated_at = ?
       WHERE panel_id = ? AND (on_attributes = 1 OR on_lists = 1)`,
    )
    .bind(now, panelId)
    .run();
}

/** Segments whose windows slide, not re-checked since `before` (a system scan across panels). */
export async function slidingSegmentsDue(db: ShardDb, before: number, limit: number): Promise<Segment[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM segments WHERE slides = 1 AND build_cursor IS NULL AND checked_at < ? ORDER BY checked_at LIMIT ?`)
    .bind(before, limit)
    .all<SegmentRow>();
  return results.map(fromRow);
}

export function checkedAtStatement(db: ShardDb, segment: Pick<Segment, "id" | "version">, now: number): D1PreparedStatement {
  return db.prepare("UPDATE segments SET checked_at = ? WHERE id = ? AND version = ?").bind(now, segment.id, segment.version);
}

/** Entries and exits per day (UTC) over the last `days` days, oldest first. */
export async function segmentHistory(db: ShardDb, panelId: string, segmentId: string, since: number): Promise<Array<{ day: string; entered: number; exited: number }>> {
  const { results } = await db
    .prepare(
      `SELECT date(at / 1000, 'unixepoch') AS day, SUM(change = 'enter') AS entered, SUM(change = 'exit') AS exited
       FROM segment_changes WHERE segment_id = ? AND panel_id = ? AND at >= ? GROUP BY day ORDER BY day`,
    )
    .bind(segmentId, panelId, since)
    .all<{ day: string; entered: number; exited: number }>();
  return results;
}

/**
 * The saved segment's joins recorded from `from` (exclusive) to `to`, as [at, contact id, change
 * id], a page after `after` in (at, id) order (the history's index): a journey simulation's
 * segment entries. A contact that joined more than once is there once a join.
 */
export async function segmentJoinsBetween(
  db: ShardDb,
  panelId: string,
  segmentId: string,
  range: { from: number; to: number },
  after: { at: number; id: number } | null,
  limit: number,
): Promise<Array<[number, number, number]>> {
  const { results } = await db
    .prepare(
      `SELECT id, at, contact_id FROM segment_changes
       WHERE segment_id = ?1 AND panel_id = ?2 AND change = 'enter' AND at > ?3 AND at <= ?4 AND (at, id) > (?5, ?6)
       ORDER BY at, id LIMIT ?7`,
    )
    .bind(segmentId, panelId, range.from, range.to, after?.at ?? range.from, after?.id ?? 0, limit)
    .all<{ id: number; at: number; contact_id: number }>();
  return results.map((row) => [row.at, row.contact_id, row.id]);
}

export interface ContactSegment {
  id: string;
  name: string;
  enteredAt: number;
}

/** The saved segments the contact is a member of now, with when it entered each. */
export async function segmentsOfContact(db: ShardDb, panelId: string, contactId: number): Promise<ContactSegment[]> {
  const { results } = await db
    .prepare(
      `SELECT s.id, s.name, m.entered_at FROM segment_members m JOIN segments s ON s.id = m.segment_id
       WHERE m.contact_id = ?2 AND m.panel_id = ?1 ORDER BY m.entered_at, s.id`,
    )
    .bind(panelId, contactId)
    .all<{ id: string; name: string; entered_at: number }>();
  return results.map((r) => ({ id: r.id, name: r.name, enteredAt: r.entered_at }));
}

/**
 * Writes `segments` (the home's rows) into the mirror on `db` (decision 0041, for segments:
 * decision 0038's Status): definition, flags and version as the home has them, one statement
 * for any number. A segment new there, or at an older version, starts a build of that shard's
 * contacts; its stored member count there is of the old definition and is counted again (the
 * first statement). One the mirror holds at a newer version (saved after the caller read the
 * home: a resync racing an edit) is left as it is. The build state (cursor, pending rebuild,
 * sliding check) is the shard's own.
 */
export function mirrorSegmentsStatements(db: ShardDb, panelId: string, segments: readonly Segment[], now: number): D1PreparedStatement[] {
  if (segments.length === 0) return [];
  const rows = segments.map((s) => [s.id, s.name, JSON.stringify(s.match), ...flags(s.dependencies), s.version, s.createdAt, s.updatedAt]);
  const versions = JSON.stringify(segments.map((s) => [s.id, s.version]));
  return [
    // Only the segments given whose mirror is at an older version: the others keep their count there.
    db
      .prepare(
        `UPDATE panel_counts SET n = NULL, counted_at = NULL, cursor = NULL, pass_n = 0
         WHERE panel_id = ?1 AND subject IN (SELECT s.id FROM segments s JOIN json_each(?2) v ON s.id = v.value ->> 0 WHERE s.panel_id = ?1 AND s.version < v.value ->> 1)`,
      )
      .bind(panelId, versions),
    db
      .prepare(
        `INSERT INTO segments (id, panel_id, name, definition, ${FLAG_COLUMNS}, version, build_cursor, checked_at, created_at, updated_at)
         SELECT r.value ->> 0, ?1, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, r.value ->> 5, r.value ->> 6, r.value ->> 7, r.value ->> 8, r.value ->> 9, 0, ?3, r.value ->> 10, r.value ->> 11
         FROM json_each(?2) r WHERE true
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, definition = excluded.definition, on_attributes = excluded.on_attributes, on_lists = excluded.on_lists,
           on_events = excluded.on_events, on_sends = excluded.on_sends, slides = excluded.slides, on_sms_stops = excluded.on_sms_stops, updated_at = excluded.updated_at,
           build_cursor = CASE WHEN segments.version = excluded.version THEN segments.build_cursor ELSE 0 END,
           rebuild_due = CASE WHEN segments.version = excluded.version THEN segments.rebuild_due ELSE 0 END,
           checked_at = CASE WHEN segments.version = excluded.version THEN segments.checked_at ELSE ?3 END,
           recheck_upto = CASE WHEN segments.version = excluded.version THEN segments.recheck_upto END,
           version = excluded.version
         WHERE segments.panel_id = ?1 AND segments.version <= excluded.version`,
      )
      .bind(panelId, JSON.stringify(rows), now),
  ];
}

/** Which of a panel's segments a deletion takes: these ids, or every one but these. */
export type SegmentSelection = { only: readonly string[] } | { except: readonly string[] };

/**
 * Deletes the panel's segments `which` names on `db`, with their members, log, stored count and
 * journey entries there: a segment deleted on its home, on a mirror, or the mirror's segments the
 * home no longer has (`except` the home's ids; `except: []` every one, a mirror made afresh or
 * left by the map). The segment rows go last, so the batch's last answer says whether any was there.
 * With `buckets` (the shard's in the panel's map) a split's source's fenced copies of moved
 * members and entries are left to its cleaning, which deletes every row of the moved buckets
 * (fencedCopyHere; decision 0047): the delete goes through from the switch on.
 */
export function deleteSegmentsStatements(db: ShardDb, panelId: string, which: SegmentSelection, buckets: BucketRanges | null = null): D1PreparedStatement[] {
  const [test, ids] = "only" in which ? ["IN", which.only] : ["NOT IN", which.except];
  const chosen = `id ${test} (SELECT value FROM json_each(?2))`;
  const of = `SELECT id FROM segments WHERE panel_id = ?1 AND ${chosen}`;
  const bound = JSON.stringify(ids);
  const ranges = buckets && JSON.stringify(buckets);
  return [
    db.prepare(`DELETE FROM journey_list_entries WHERE panel_id = ?1 AND segment_id IN (${of}) AND NOT ${fencedContactCopyHere("journey_list_entries", "?3")}`).bind(panelId, bound, ranges),
    db.prepare(`DELETE FROM panel_counts WHERE panel_id = ?1 AND subject IN (${of})`).bind(panelId, bound),
    db.prepare(`DELETE FROM segment_members WHERE segment_id IN (${of}) AND NOT ${fencedCopyHere("segment_members", "?3")}`).bind(panelId, bound, ranges),
    db.prepare(`DELETE FROM segment_changes WHERE segment_id IN (${of})`).bind(panelId, bound),
    db.prepare(`DELETE FROM segments WHERE panel_id = ?1 AND ${chosen}`).bind(panelId, bound),
  ];
}

/**
 * Removes the exits the membership trigger logged on `db` from `since` for the panel's contacts
 * in buckets `range`: a split's source deletes the memberships that moved with its triggers
 * acting (decision 0047), and those contacts left the shard, not the segment (the history sums
 * the shards). From `since` (the switch, under the fence) no other write of their memberships
 * reaches the shard. Run while those contacts are still there (they are deleted after).
 */
export function dropMovedExitsStatement(db: ShardDb, panelId: string, range: BucketRange, since: number): D1PreparedStatement {
  return db
    .prepare(
      `DELETE FROM segment_changes WHERE at >= ?2 AND panel_id = ?1 AND change = 'exit'
       AND EXISTS (SELECT 1 FROM contacts c WHERE c.id = segment_changes.contact_id AND c.bucket BETWEEN ?3 AND ?4)`,
    )
    .bind(panelId, since, range.first, range.last);
}
