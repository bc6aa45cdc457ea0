import type { ShardDb } from "./shards";
import type { AttributeValue } from "../domain/attributes";
import { NEEDS_ITS_AUDIENCE } from "../domain/campaign-lifecycle";
import { listNameKey, type AudienceUser } from "../domain/lists";
import { isUniqueViolation, sqlWords } from "./sql";
import { deleteFencedHere } from "./panel-move/triggers";

export interface ContactList {
  id: number;
  name: string;
  description: string;
  count: number;
  createdAt: number;
  updatedAt: number;
}

interface ListRow {
  id: number;
  name: string;
  description: string;
  count: number;
  created_at: number;
  updated_at: number;
}

// The count is the list's maintained counter (migration 0061: triggers on list_members), not a
// COUNT over its members on each read (issue 42). A deleted list whose members are still being
// removed (deleted_at, shard migration 0071) is gone for every read: callers add LIVE_LIST.
export const LIVE_LIST = "l.deleted_at IS NULL";
export const LIST_SELECT = `SELECT l.id, l.name, l.description, l.created_at, l.updated_at, l.member_count AS count FROM lists l`;

/**
 * Lists are numbered per panel from 1 in creation order, so an id fits a signed 32-bit integer
 * (CONTRACT 10, migration 0058): a new list takes the next number above the panel's largest
 * list id below 2^31 (lists from before keep their ids, high ones included): an INSERT's
 * `SELECT ${NEXT_LIST_ID} ... FROM lists WHERE ${OF_PANEL_BELOW_2_31}`, the panel as ?1.
 */
const NEXT_LIST_ID = "COALESCE(MAX(id), 0) + 1";
const OF_PANEL_BELOW_2_31 = "panel_id = ?1 AND id < 2147483648";

function listFromRow(row: ListRow): ContactList {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    count: row.count,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The statement that creates a list, returning its id; for a caller's batch (a campaign and its
 * list). This module is the one that inserts rows of `lists` (scripts/check-writers.ts).
 */
export function insertListStatement(db: ShardDb, panelId: string, name: string, description: string, now: number, above?: number): D1PreparedStatement {
  // `above`: a number the panel's mirrors still hold (decision 0041), which the new list must pass.
  const next = above === undefined ? NEXT_LIST_ID : `MAX(${NEXT_LIST_ID}, ?7 + 1)`;
  return db
    .prepare(
      `INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at)
       SELECT ?1, ${next}, ?2, ?3, ?4, ?5, ?6 FROM lists WHERE ${OF_PANEL_BELOW_2_31} RETURNING id`,
    )
    .bind(...[panelId, name, listNameKey(name), description, now, now, ...(above === undefined ? [] : [above])]);
}

/**
 * The largest list number below 2^31 a shard holds for the panel (a mirror's, decision 0041:
 * a deleted list's row stays there until that shard's clear ends, so its number is not reused).
 */
export async function largestListId(db: ShardDb, panelId: string): Promise<number> {
  const row = await db.prepare(`SELECT COALESCE(MAX(id), 0) AS id FROM lists WHERE ${OF_PANEL_BELOW_2_31}`).bind(panelId).first<{ id: number }>();
  return row?.id ?? 0;
}

/** Returns the new list's id (numbered in the panel, above `above` when given), or null when the panel already has a list of that name. */
export async function insertList(db: ShardDb, panelId: string, name: string, description: string, now: number, above?: number): Promise<number | null> {
  try {
    const row = await insertListStatement(db, panelId, name, description, now, above).first<{ id: number }>();
    return row!.id;
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

export async function getList(db: ShardDb, panelId: string, listId: number): Promise<ContactList | null> {
  const row = await db.prepare(`${LIST_SELECT} WHERE l.panel_id = ? AND l.id = ? AND ${LIVE_LIST}`).bind(panelId, listId).first<ListRow>();
  return row ? listFromRow(row) : null;
}

export async function findListByName(db: ShardDb, panelId: string, name: string): Promise<ContactList | null> {
  const row = await db
    .prepare(`${LIST_SELECT} WHERE l.panel_id = ? AND l.name_key = ? AND ${LIVE_LIST}`)
    .bind(panelId, listNameKey(name))
    .first<ListRow>();
  return row ? listFromRow(row) : null;
}

export async function listLists(db: ShardDb, panelId: string): Promise<ContactList[]> {
  const { results } = await db.prepare(`${LIST_SELECT} WHERE l.panel_id = ? AND ${LIVE_LIST} ORDER BY l.id`).bind(panelId).all<ListRow>();
  return results.map(listFromRow);
}

/** The subset of `listIds` that are lists of this panel; the ids travel as one JSON parameter, so any number fit. */
export async function existingListIds(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<Set<number>> {
  if (listIds.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT id FROM lists l WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?)) AND " + LIVE_LIST)
    .bind(panelId, JSON.stringify(listIds))
    .all<{ id: number }>();
  return new Set(results.map((r) => r.id));
}

/** The names of those of `listIds` that are lists of this panel (a deleted list has none). */
export async function listNamesOf(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<Map<number, string>> {
  if (listIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT id, name FROM lists l WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?)) AND " + LIVE_LIST)
    .bind(panelId, JSON.stringify(listIds))
    .all<{ id: number; name: string }>();
  return new Map(results.map((r) => [r.id, r.name]));
}

/**
 * A list as its mirror on another shard holds it (decision 0041): the home's row without its
 * counter and clearing state, which each shard keeps for its own members.
 */
export interface MirroredList {
  id: number;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

/** The panel's live lists as a mirror copies them. */
export async function liveListsToMirror(db: ShardDb, panelId: string): Promise<MirroredList[]> {
  const { results } = await db
    .prepare(`SELECT l.id, l.name, l.description, l.created_at AS createdAt, l.updated_at AS updatedAt FROM lists l WHERE l.panel_id = ? AND ${LIVE_LIST} ORDER BY l.id`)
    .bind(panelId)
    .all<MirroredList>();
  return results;
}

/**
 * Writes `lists` into the mirror on `db` as the home has them now (a new list, a rename): one
 * statement for any number (one JSON parameter). The member counter and the clearing state of
 * a row the mirror already holds stay its own.
 */
export function mirrorListsStatement(db: ShardDb, panelId: string, lists: readonly MirroredList[]): D1PreparedStatement {
  const rows = lists.map((l) => [l.id, l.name, listNameKey(l.name), l.description, l.createdAt, l.updatedAt]);
  return db
    .prepare(
      `INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at)
       SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, r.value ->> 5 FROM json_each(?2) r WHERE true
       ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key, description = excluded.description, updated_at = excluded.updated_at`,
    )
    .bind(panelId, JSON.stringify(rows));
}

/**
 * Gives the live lists `ids` on `db` a name key no list takes (a control character leads it, as a
 * deleted list's does), for the statement after it in the same batch to set each list's own: a
 * mirror's resync (services/panels/mirror-resync.ts) so writes names that the mirror, behind the
 * home, may hold on other rows (two lists that swapped names).
 */
export function parkListNamesStatement(db: ShardDb, panelId: string, ids: readonly number[]): D1PreparedStatement {
  return db
    .prepare("UPDATE lists SET name_key = char(2) || 'resync ' || id WHERE panel_id = ?1 AND deleted_at IS NULL AND id IN (SELECT value FROM json_each(?2))")
    .bind(panelId, JSON.stringify(ids));
}

/**
 * Drops every list row of the panel from a shard that is not its home (a mirror made afresh,
 * or left by the map). Only for a shard holding none of the panel's contacts: no membership
 * can name the rows (setPartitionMap checks).
 */
export function dropMirroredListsStatement(db: ShardDb, panelId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM lists WHERE panel_id = ?").bind(panelId);
}

/**
 * Sets each of the panel's list rows on `db` to the members `db` holds, or with `leaving` to
 * those outside those buckets. Without it: for a shard that took a partition's memberships in
 * transit (a split, decision 0047), whose triggers counted none of them. With it: for the shard
 * the split's partition left, from its switch, while it still holds its copies of the moved
 * members until cleaning; their deletes then count nothing (shard migration 0117), so the figure
 * summed over the shards counts each member once throughout. One statement, so no membership
 * written beside it is counted twice or missed; safe to repeat.
 */
export function recountMembersStatement(db: ShardDb, panelId: string, leaving?: { first: number; last: number }): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE lists SET member_count = (SELECT COUNT(*) FROM list_members m WHERE m.panel_id = lists.panel_id AND m.list_id = lists.id AND (?2 IS NULL OR m.bucket NOT BETWEEN ?2 AND ?3))
       WHERE panel_id = ?1`,
    )
    .bind(panelId, leaving?.first ?? null, leaving?.last ?? null);
}

export type RenameOutcome = { kind: "renamed"; list: ContactList } | { kind: "missing" } | { kind: "duplicate" };

export async function renameList(
  db: ShardDb,
  panelId: string,
  listId: number,
  name: string,
  description: string | undefined,
  now: number,
): Promise<RenameOutcome> {
  try {
    const result = await db
      .prepare(
        `UPDATE lists SET name = ?, name_key = ?, description = COALESCE(?, description), updated_at = ?
         WHERE panel_id = ? AND id = ? AND deleted_at IS NULL`,
      )
      .bind(name, listNameKey(name), description ?? null, now, panelId, listId)
      .run();
    if (result.meta.changes === 0) return { kind: "missing" };
  } catch (error) {
    if (isUniqueViolation(error)) return { kind: "duplicate" };
    throw error;
  }
  return { kind: "renamed", list: (await getList(db, panelId, listId))! };
}

/** The campaign states in which its lists and segments are in use, as SQL. */
export const AUDIENCE_IN_USE = sqlWords(NEEDS_ITS_AUDIENCE);

/** Whether campaign `c`'s audience includes or excludes list ?2, as SQL. */
const AUDIENCE_NAMES_LIST = `(EXISTS (SELECT 1 FROM json_each(c.audience, '$.lists') a WHERE a.value = ?2)
  OR EXISTS (SELECT 1 FROM json_each(c.audience, '$.exclude_lists') a WHERE a.value = ?2))`;

/**
 * Who would lose the list if it went: campaigns not yet done (their own list, or an audience
 * that includes or excludes it) and journeys that a contact joining it still enters
 * (running, or paused and able to resume).
 */
export async function listUsers(db: ShardDb, panelId: string, listId: number): Promise<AudienceUser[]> {
  const [campaigns, journeys] = await db.batch<{ name: string; status: string }>([
    db
      .prepare(
        `SELECT c.name, c.status FROM campaigns c WHERE c.panel_id = ?1 AND c.status IN ${AUDIENCE_IN_USE}
           AND (c.list_id = ?2 OR ${AUDIENCE_NAMES_LIST})
         ORDER BY c.created_at, c.id`,
      )
      .bind(panelId, listId),
    db
      .prepare("SELECT name, status FROM journeys WHERE panel_id = ? AND status IN ('running', 'paused') AND trigger_type = 'list' AND trigger_key = ? ORDER BY created_at, id")
      .bind(panelId, String(listId)),
  ]);
  return [...campaigns!.results.map((r) => ({ kind: "campaign" as const, ...r })), ...journeys!.results.map((r) => ({ kind: "journey" as const, ...r }))];
}

/** The stored member counters (shard migration 0061) of the panel's lists among `listIds` (or all of them), by list id. */
export async function listMemberCounts(db: ShardDb, panelId: string, listIds: readonly number[] | "all"): Promise<Map<number, number>> {
  if (listIds !== "all" && listIds.length === 0) return new Map();
  const { results } = await (listIds === "all"
    ? db.prepare("SELECT id, member_count AS n FROM lists l WHERE panel_id = ?1 AND " + LIVE_LIST).bind(panelId)
    : db.prepare("SELECT id, member_count AS n FROM lists l WHERE panel_id = ?1 AND id IN (SELECT value FROM json_each(?2)) AND " + LIVE_LIST).bind(panelId, JSON.stringify(listIds))
  ).all<{ id: number; n: number }>();
  return new Map(results.map((r) => [r.id, r.n]));
}

/**
 * Meets a fence on this shard (its trigger refuses the statement) when a clear of the list would:
 * touches, without changing it, one of the list's memberships whose delete a move's fence
 * refuses here (`deleteFencedHere`), and nothing when there is none. Run first in a clear's batch
 * (and on every shard before any is marked), so a clear the fence refuses is not started at all:
 * the refusal's answer says nothing was changed, and a list marked as being cleared would have
 * gone on being emptied by the redrive.
 */
export function fencedMembersProbe(db: ShardDb, panelId: string, listId: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE list_members SET added_at = added_at WHERE (list_id, contact_id) IN (
         SELECT m.list_id, m.contact_id FROM list_members m WHERE m.list_id = ?2 AND m.panel_id = ?1 AND ${deleteFencedHere("m")} LIMIT 1)`,
    )
    .bind(panelId, listId);
}

/**
 * Starts removing every member of the list (`deleting`: and the list), in steps (clearListStep):
 * an emptied list loses the members it has now, a deleted one every member, and is at once gone
 * for every read, its name free (its number stays taken until its row goes with the last step).
 * Asked again while a clear runs, it starts over from the first id with the new request's terms.
 * Returns the members it had (what the request removes), or null when the panel has no such list.
 * A move's fence that would refuse the clear's steps here refuses this too, before anything is
 * written (fencedMembersProbe).
 */
export async function startClearingList(db: ShardDb, panelId: string, listId: number, now: number, deleting: boolean): Promise<number | null> {
  const [, marked] = await db.batch<{ member_count: number }>([
    fencedMembersProbe(db, panelId, listId),
    db
      .prepare(
        `UPDATE lists SET clear_after = 0, updated_at = ?3, clear_step_at = ?3,
           clear_until = CASE WHEN ?4 THEN NULL ELSE (SELECT MAX(id) FROM contacts) END,
           clear_at = CASE WHEN ?4 THEN NULL ELSE ?3 END,
           deleted_at = CASE WHEN ?4 THEN ?3 END,
           -- Out of the way of the name's next list: no list name starts with a control character.
           name_key = CASE WHEN ?4 THEN char(1) || 'deleted ' || id ELSE name_key END
         WHERE panel_id = ?1 AND id = ?2 AND deleted_at IS NULL RETURNING member_count`,
      )
      .bind(panelId, listId, now, deleting ? 1 : 0),
  ]);
  const row = marked!.results[0];
  return row ? row.member_count : null;
}

/**
 * Whether anything still names list ?2 (?3: the same number as text) of panel ?1, as SQL: a
 * campaign sent from it (campaigns.list_id references the row), a campaign not yet done whose
 * audience includes or excludes it, a journey not stopped that it triggers, an import into it
 * under way, a saved segment's list condition, a signup form offering it. A deleted list's row
 * stays (deleted, empty) while one does, so its number is not handed out to a new list (CONTRACT
 * 10 gives a new list the number after the largest row's) that they would then read as theirs:
 * a scheduled campaign mailing the new list's members, a journey entering them, an import or a
 * form filling it, a segment counting them.
 */
const NAMES_LIST = `(EXISTS (SELECT 1 FROM campaigns c WHERE c.panel_id = ?1 AND (c.list_id = ?2 OR (c.status IN ${AUDIENCE_IN_USE} AND ${AUDIENCE_NAMES_LIST})))
  OR EXISTS (SELECT 1 FROM journeys j WHERE j.panel_id = ?1 AND j.status != 'stopped' AND j.trigger_type = 'list' AND j.trigger_key = ?3)
  OR EXISTS (SELECT 1 FROM import_jobs i WHERE i.panel_id = ?1 AND i.list_id = ?2 AND i.status IN ('queued', 'running'))
  OR EXISTS (SELECT 1 FROM segments s, json_tree(s.definition) t WHERE s.panel_id = ?1 AND s.on_lists = 1 AND t.key = 'list' AND t.value = ?2)
  OR EXISTS (SELECT 1 FROM signup_forms f, json_each(f.list_ids) l WHERE f.panel_id = ?1 AND l.value = ?2))`;

/**
 * One step of a list's clearing: removes its members among the next `chunkIds` contact ids
 * (one DELETE over that range of the list's key; the counter's triggers count each row), and
 * moves the progress on in the same transaction, so a repeated or concurrent step removes
 * nothing twice. After the last step a deleted list's row goes too, unless something names it.
 * Null when there is nothing to do (the list is gone, nothing is pending, or another call took
 * this step).
 */
export async function clearListStep(db: ShardDb, panelId: string, listId: number, chunkIds: number, now: number): Promise<{ done: boolean } | null> {
  const state = await db
    .prepare(
      `SELECT clear_after AS "after", clear_until AS "until", clear_at AS "at",
         (SELECT contact_id FROM list_members WHERE list_id = ?2 AND contact_id > lists.clear_after AND panel_id = ?1 ORDER BY contact_id LIMIT 1) AS "next"
       FROM lists WHERE panel_id = ?1 AND id = ?2 AND clear_after IS NOT NULL`,
    )
    .bind(panelId, listId)
    .first<{ after: number; until: number | null; at: number | null; next: number | null }>();
  if (!state) return null;
  const last = state.next === null || (state.until !== null && state.next > state.until);
  const end = state.next === null ? state.after : state.next + chunkIds - 1;
  const to = state.until === null ? end : Math.min(state.until, end);
  const [, moved] = await db.batch<{ clear_after: number | null }>([
    db
      .prepare(
        `DELETE FROM list_members WHERE list_id = ?2 AND contact_id > ?3 AND contact_id <= ?4 AND panel_id = ?1 AND (?5 IS NULL OR added_at <= ?5)
           AND EXISTS (SELECT 1 FROM lists WHERE panel_id = ?1 AND id = ?2 AND clear_after = ?3)`,
      )
      .bind(panelId, listId, state.after, last ? state.after : to, state.at),
    db
      .prepare(
        // Done, too, once no member the clear removes is left past this step's range: a list whose
        // members span fewer ids than a step is done in one, not in a second step from the queue.
        `UPDATE lists SET clear_after = CASE WHEN ?4 OR ?3 >= clear_until
             OR NOT EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = ?2 AND m.contact_id > ?3 AND m.panel_id = ?1
                              AND (lists.clear_until IS NULL OR m.contact_id <= lists.clear_until)) THEN NULL ELSE ?3 END,
           clear_step_at = ?6
         WHERE panel_id = ?1 AND id = ?2 AND clear_after = ?5 RETURNING clear_after`,
      )
      .bind(panelId, listId, to, last ? 1 : 0, state.after, now),
    // No member is left once a deleted list's last step ran: none can join a deleted list. Its
    // row goes unless something still names its number (NAMES_LIST), which then stays taken.
    db.prepare(`DELETE FROM lists WHERE panel_id = ?1 AND id = ?2 AND deleted_at IS NOT NULL AND clear_after IS NULL AND NOT ${NAMES_LIST}`).bind(panelId, listId, String(listId)),
  ]);
  const row = moved!.results[0];
  return row ? { done: row.clear_after === null } : null;
}

/** An emptying under way on a shard (not a deletion): when it started and the last contact id it reaches. */
export interface ListEmptying {
  listId: number;
  at: number;
  until: number | null;
}

/** The panel's lists being emptied on `db` (a split's source, whose moved members the clear may not have reached). */
export async function listsBeingEmptied(db: ShardDb, panelId: string): Promise<ListEmptying[]> {
  const { results } = await db
    .prepare("SELECT id, clear_at, clear_until FROM lists WHERE panel_id = ? AND clear_after IS NOT NULL AND clear_at IS NOT NULL AND deleted_at IS NULL")
    .bind(panelId)
    .all<{ id: number; clear_at: number; clear_until: number | null }>();
  return results.map((r) => ({ listId: r.id, at: r.clear_at, until: r.clear_until }));
}

/**
 * Starts on `db` each of `emptyings` (another shard's, with their start and bound) that its copy
 * of the list has not started or passed (a later emptying there covers it: it removes every
 * membership added before its own start); answers the lists started. Repeating it starts
 * nothing twice.
 */
export function startEmptyingsStatement(db: ShardDb, panelId: string, emptyings: readonly ListEmptying[], now: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE lists SET clear_after = 0, clear_at = r.value ->> 1, clear_until = r.value ->> 2, clear_step_at = ?3
       FROM json_each(?2) r
       WHERE lists.panel_id = ?1 AND lists.id = r.value ->> 0 AND lists.deleted_at IS NULL AND (lists.clear_at IS NULL OR lists.clear_at < r.value ->> 1)
       RETURNING lists.id`,
    )
    .bind(panelId, JSON.stringify(emptyings.map((e) => [e.listId, e.at, e.until])), now);
}

/**
 * For a batch that adds the contacts of `keysJson` to the lists of `listIdsJson` (JSON arrays;
 * ?1 panel, ?2 lists, ?3 keys), put before its membership insert: drops the memberships an
 * emptying under way (`lists/emptylist`) has not reached yet, so the insert makes them anew,
 * after the clear's start, and its later steps keep them. Without it an existing member added
 * again after `emptylist` kept its old row, which a later step then removed: a client that
 * empties a list and adds its members again lost every member past the first step. Dropped and
 * added again, the member counts once, and list journeys hear of it as a new member, as when
 * the list was emptied in one step. Lists not being emptied are looked at and left.
 */
export function clearedMembershipsStatement(db: ShardDb, panelId: string, listIdsJson: string, keysJson: string): D1PreparedStatement {
  return db
    .prepare(
      // CROSS JOIN: the lists are read first, so a list not being emptied costs no look at the contacts.
      `DELETE FROM list_members WHERE panel_id = ?1 AND (list_id, contact_id) IN (
         SELECT l.id, c.id FROM lists l CROSS JOIN contacts c
         WHERE l.panel_id = ?1 AND l.id IN (SELECT value FROM json_each(?2)) AND l.clear_after IS NOT NULL AND l.clear_at IS NOT NULL
           AND c.panel_id = l.panel_id AND c.pk_value IN (SELECT value FROM json_each(?3)))
       AND added_at <= (SELECT clear_at FROM lists l WHERE l.panel_id = ?1 AND l.id = list_members.list_id)`,
    )
    .bind(panelId, listIdsJson, keysJson);
}

/**
 * Lists of the shard whose clear has not moved on since `before` (its step nudge was lost), each
 * touched so the next minute does not pick it again at once (a system scan across panels).
 */
export async function stalledListClears(db: ShardDb, before: number, now: number, limit: number): Promise<Array<{ panelId: string; listId: number }>> {
  const { results } = await db
    .prepare(
      `UPDATE lists SET clear_step_at = ?1
       WHERE (panel_id, id) IN (SELECT panel_id, id FROM lists WHERE clear_after IS NOT NULL AND clear_step_at < ?2 LIMIT ?3)
       RETURNING panel_id, id`,
    )
    .bind(now, before, limit)
    .all<{ panel_id: string; id: number }>();
  return results.map((row) => ({ panelId: row.panel_id, listId: row.id }));
}

export interface ListMember {
  contactId: number;
  key: string;
  attributes: Record<string, AttributeValue>;
  addedAt: number;
}

/** A page of the list's members in the order they were created, after contact id `afterId`: the membership key's own range. */
export async function listMembers(db: ShardDb, panelId: string, listId: number, afterId: number, limit: number): Promise<ListMember[]> {
  const { results } = await db
    .prepare(
      `SELECT c.id, c.pk_value, c.attrs, m.added_at FROM list_members m JOIN contacts c ON c.id = m.contact_id
       WHERE m.list_id = ? AND m.panel_id = ? AND m.contact_id > ? ORDER BY m.contact_id LIMIT ?`,
    )
    .bind(listId, panelId, afterId, limit)
    .all<{ id: number; pk_value: string; attrs: string; added_at: number }>();
  return results.map((row) => ({ contactId: row.id, key: row.pk_value, attributes: JSON.parse(row.attrs) as Record<string, AttributeValue>, addedAt: row.added_at }));
}

/**
 * The list's members added from `from` (exclusive) to `to`, as [added at, contact id], a page
 * after contact id `afterId` in the membership key's order (a journey simulation's list entries).
 */
export async function membersAddedBetween(db: ShardDb, panelId: string, listId: number, range: { from: number; to: number }, afterId: number, limit: number): Promise<Array<[number, number]>> {
  const { results } = await db
    .prepare("SELECT added_at, contact_id FROM list_members WHERE list_id = ?1 AND panel_id = ?2 AND contact_id > ?3 AND added_at > ?4 AND added_at <= ?5 ORDER BY contact_id LIMIT ?6")
    .bind(listId, panelId, afterId, range.from, range.to, limit)
    .all<{ added_at: number; contact_id: number }>();
  return results.map((row) => [row.added_at, row.contact_id]);
}
