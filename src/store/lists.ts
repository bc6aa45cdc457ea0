import type { ShardDb } from "./shards";
import type { AttributeValue } from "../domain/attributes";
import { NEEDS_ITS_AUDIENCE } from "../domain/campaign-lifecycle";
import { listNameKey } from "../domain/lists";
import { isUniqueViolation, sqlWords } from "./sql";

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
// COUNT over its members on each read (issue 42).
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
export function insertListStatement(db: ShardDb, panelId: string, name: string, description: string, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at)
       SELECT ?1, ${NEXT_LIST_ID}, ?2, ?3, ?4, ?5, ?6 FROM lists WHERE ${OF_PANEL_BELOW_2_31} RETURNING id`,
    )
    .bind(panelId, name, listNameKey(name), description, now, now);
}

/** Returns the new list's id (numbered in the panel), or null when the panel already has a list of that name. */
export async function insertList(db: ShardDb, panelId: string, name: string, description: string, now: number): Promise<number | null> {
  try {
    const row = await insertListStatement(db, panelId, name, description, now).first<{ id: number }>();
    return row!.id;
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

export async function getList(db: ShardDb, panelId: string, listId: number): Promise<ContactList | null> {
  const row = await db.prepare(`${LIST_SELECT} WHERE l.panel_id = ? AND l.id = ?`).bind(panelId, listId).first<ListRow>();
  return row ? listFromRow(row) : null;
}

export async function findListByName(db: ShardDb, panelId: string, name: string): Promise<ContactList | null> {
  const row = await db
    .prepare(`${LIST_SELECT} WHERE l.panel_id = ? AND l.name_key = ?`)
    .bind(panelId, listNameKey(name))
    .first<ListRow>();
  return row ? listFromRow(row) : null;
}

export async function listLists(db: ShardDb, panelId: string): Promise<ContactList[]> {
  const { results } = await db.prepare(`${LIST_SELECT} WHERE l.panel_id = ? ORDER BY l.id`).bind(panelId).all<ListRow>();
  return results.map(listFromRow);
}

/** The subset of `listIds` that are lists of this panel; the ids travel as one JSON parameter, so any number fit. */
export async function existingListIds(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<Set<number>> {
  if (listIds.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT id FROM lists WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify(listIds))
    .all<{ id: number }>();
  return new Set(results.map((r) => r.id));
}

/** The names of those of `listIds` that are lists of this panel (a deleted list has none). */
export async function listNamesOf(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<Map<number, string>> {
  if (listIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT id, name FROM lists WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify(listIds))
    .all<{ id: number; name: string }>();
  return new Map(results.map((r) => [r.id, r.name]));
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
         WHERE panel_id = ? AND id = ?`,
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

/** Deletes the list and its memberships; the contacts themselves stay. */
export async function deleteList(db: ShardDb, panelId: string, listId: number): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM list_members WHERE panel_id = ? AND list_id = ?").bind(panelId, listId),
    db.prepare("DELETE FROM lists WHERE panel_id = ? AND id = ?").bind(panelId, listId),
  ]);
}

/** The campaign states in which its lists and segments are in use, as SQL. */
export const AUDIENCE_IN_USE = sqlWords(NEEDS_ITS_AUDIENCE);

/** A campaign or journey that names a list, with its status. */
export interface ListUser {
  kind: "campaign" | "journey";
  name: string;
  status: string;
}

/**
 * Who would lose the list if it went: campaigns not yet done (their own list, or an audience
 * that includes or excludes it) and journeys that a contact joining it still enters
 * (running, or paused and able to resume).
 */
export async function listUsers(db: ShardDb, panelId: string, listId: number): Promise<ListUser[]> {
  const [campaigns, journeys] = await db.batch<{ name: string; status: string }>([
    db
      .prepare(
        `SELECT c.name, c.status FROM campaigns c WHERE c.panel_id = ?1 AND c.status IN ${AUDIENCE_IN_USE}
           AND (c.list_id = ?2 OR EXISTS (SELECT 1 FROM json_each(c.audience, '$.lists') l WHERE l.value = ?2)
             OR EXISTS (SELECT 1 FROM json_each(c.audience, '$.exclude_lists') l WHERE l.value = ?2))
         ORDER BY c.created_at, c.id`,
      )
      .bind(panelId, listId),
    db
      .prepare("SELECT name, status FROM journeys WHERE panel_id = ? AND status IN ('running', 'paused') AND trigger_type = 'list' AND trigger_key = ? ORDER BY created_at, id")
      .bind(panelId, String(listId)),
  ]);
  return [...campaigns!.results.map((r) => ({ kind: "campaign" as const, ...r })), ...journeys!.results.map((r) => ({ kind: "journey" as const, ...r }))];
}

/** The stored member counters (shard migration 0061) of the panel's lists among `listIds`, by list id. */
export async function listMemberCounts(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<Map<number, number>> {
  if (listIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT id, member_count AS n FROM lists WHERE panel_id = ?1 AND id IN (SELECT value FROM json_each(?2))")
    .bind(panelId, JSON.stringify(listIds))
    .all<{ id: number; n: number }>();
  return new Map(results.map((r) => [r.id, r.n]));
}

/**
 * Removes every member of the list; returns how many were removed: the counter as the batch (one
 * transaction) found it, since the delete's `changes` also counts the counter triggers' updates.
 */
export async function emptyList(db: ShardDb, panelId: string, listId: number, now: number): Promise<number> {
  const [held] = await db.batch<{ n: number }>([
    db.prepare("SELECT member_count AS n FROM lists WHERE panel_id = ? AND id = ?").bind(panelId, listId),
    db.prepare("DELETE FROM list_members WHERE panel_id = ? AND list_id = ?").bind(panelId, listId),
    db.prepare("UPDATE lists SET updated_at = ? WHERE panel_id = ? AND id = ?").bind(now, panelId, listId),
  ]);
  return held!.results[0]?.n ?? 0;
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
