import type { ShardDb } from "./shards";
import { isUniqueViolation } from "./sql";
import type { BucketRanges } from "../domain/partitions";
import { fencedContactCopyHere } from "./panel-move/triggers";

/** A panel's topic (migrations/shard/0078_topics.sql). */
export interface Topic {
  panelId: string;
  id: string;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

interface TopicRow {
  panel_id: string;
  id: string;
  name: string;
  description: string;
  created_at: number;
  updated_at: number;
}

const fromRow = (r: TopicRow): Topic => ({ panelId: r.panel_id, id: r.id, name: r.name, description: r.description, createdAt: r.created_at, updatedAt: r.updated_at });

/** The id of the panel's topic of that name (any ASCII case), if any. */
export async function topicIdByName(db: ShardDb, panelId: string, name: string): Promise<string | null> {
  const row = await db.prepare("SELECT id FROM topics WHERE panel_id = ? AND name = ? COLLATE NOCASE").bind(panelId, name).first<{ id: string }>();
  return row?.id ?? null;
}

/** Inserts the topic or replaces the one with its id; false when another topic of the panel has its name (two calls may race). */
export async function putTopic(db: ShardDb, t: Topic): Promise<boolean> {
  try {
    await db
      .prepare(
        `INSERT INTO topics (panel_id, id, name, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, description = excluded.description, updated_at = excluded.updated_at`,
      )
      .bind(t.panelId, t.id, t.name, t.description, t.createdAt, t.updatedAt)
      .run();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

export async function getTopic(db: ShardDb, panelId: string, id: string): Promise<Topic | null> {
  const row = await db.prepare("SELECT * FROM topics WHERE panel_id = ? AND id = ?").bind(panelId, id).first<TopicRow>();
  return row ? fromRow(row) : null;
}

/** The panel's topics by name. */
export async function listTopics(db: ShardDb, panelId: string): Promise<Topic[]> {
  const { results } = await db.prepare("SELECT * FROM topics WHERE panel_id = ? ORDER BY name COLLATE NOCASE, id").bind(panelId).all<TopicRow>();
  return results.map(fromRow);
}

/**
 * Deletes the topic and the opt-outs of it (nothing is left to opt out of); false when there was
 * none. With `buckets` (the shard's in the panel's map) a split's source's fenced copies of moved
 * contacts' opt-outs are left to its cleaning (fencedContactCopyHere; decision 0047).
 */
export async function deleteTopic(db: ShardDb, panelId: string, id: string, buckets: BucketRanges | null = null): Promise<boolean> {
  const [deleted] = await db.batch([
    db.prepare("DELETE FROM topics WHERE panel_id = ? AND id = ?").bind(panelId, id),
    db
      .prepare(`DELETE FROM topic_optouts WHERE panel_id = ?1 AND topic_id = ?2 AND NOT ${fencedContactCopyHere("topic_optouts", "?3")}`)
      .bind(panelId, id, buckets && JSON.stringify(buckets)),
  ]);
  return deleted!.meta.changes > 0;
}

/** The ids of the topics the contact left. */
export async function topicsLeft(db: ShardDb, panelId: string, contactId: number): Promise<Set<string>> {
  const { results } = await db.prepare("SELECT topic_id FROM topic_optouts WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId).all<{ topic_id: string }>();
  return new Set(results.map((r) => r.topic_id));
}

/** The topics the contact left, with when, oldest first (for its access export). */
export async function topicOptOutsOfContact(db: ShardDb, panelId: string, contactId: number): Promise<Array<{ topicId: string; name: string; leftAt: number }>> {
  const { results } = await db
    .prepare(
      `SELECT o.topic_id, t.name, o.created_at FROM topic_optouts o JOIN topics t ON t.panel_id = o.panel_id AND t.id = o.topic_id
       WHERE o.panel_id = ? AND o.contact_id = ? ORDER BY o.created_at, o.topic_id`,
    )
    .bind(panelId, contactId)
    .all<{ topic_id: string; name: string; created_at: number }>();
  return results.map((r) => ({ topicId: r.topic_id, name: r.name, leftAt: r.created_at }));
}

/** Whether the contact left the topic (a topic deleted since has no opt-outs left: false). */
export async function hasLeftTopic(db: ShardDb, panelId: string, contactId: number, topicId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS left FROM topic_optouts WHERE panel_id = ? AND contact_id = ? AND topic_id = ?").bind(panelId, contactId, topicId).first();
  return row !== null;
}

/** Of these contacts, those who left any of `topicIds`, with the ones they left. */
export async function topicsLeftByContact(db: ShardDb, panelId: string, contactIds: readonly number[], topicIds: readonly string[]): Promise<Map<number, string[]>> {
  const left = new Map<number, string[]>();
  if (contactIds.length === 0 || topicIds.length === 0) return left;
  const { results } = await db
    .prepare("SELECT contact_id, topic_id FROM topic_optouts WHERE panel_id = ?1 AND contact_id IN (SELECT value FROM json_each(?2)) AND topic_id IN (SELECT value FROM json_each(?3))")
    .bind(panelId, JSON.stringify(contactIds), JSON.stringify(topicIds))
    .all<{ contact_id: number; topic_id: string }>();
  for (const row of results) left.set(row.contact_id, [...(left.get(row.contact_id) ?? []), row.topic_id]);
  return left;
}

/** The statements that record the contact leaving (`left`) or rejoining a topic, for the caller's batch. */
export function topicOptOutStatement(db: ShardDb, panelId: string, contactId: number, topicId: string, left: boolean, now: number): D1PreparedStatement {
  return left
    ? db.prepare("INSERT INTO topic_optouts (panel_id, contact_id, topic_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING").bind(panelId, contactId, topicId, now)
    : db.prepare("DELETE FROM topic_optouts WHERE panel_id = ? AND contact_id = ? AND topic_id = ?").bind(panelId, contactId, topicId);
}

/** A topic as its panel's mirror shards hold it (decision 0041): the home's row, id and all. */
export type MirroredTopic = Omit<Topic, "panelId">;

/** The panel's topics on `db` (the home), for a mirror. */
export async function topicsToMirror(db: ShardDb, panelId: string): Promise<MirroredTopic[]> {
  return (await listTopics(db, panelId)).map(({ panelId: _, ...t }) => t);
}

/**
 * Writes `topics` into the mirror on `db` as the home has them now (made, renamed): one
 * statement for any number (one JSON parameter).
 */
export function mirrorTopicsStatement(db: ShardDb, panelId: string, topics: readonly MirroredTopic[]): D1PreparedStatement {
  const rows = topics.map((t) => [t.id, t.name, t.description, t.createdAt, t.updatedAt]);
  return db
    .prepare(
      `INSERT INTO topics (panel_id, id, name, description, created_at, updated_at)
       SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4 FROM json_each(?2) r WHERE true
       ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, description = excluded.description, updated_at = excluded.updated_at`,
    )
    .bind(panelId, JSON.stringify(rows));
}

/**
 * Drops the mirror's topics the home no longer has (`keep`: the home's ids) and their opt-outs,
 * as deleting them on the home did there; with no `keep`, every topic of the panel (a mirror made
 * afresh or left by the map, holding none of its contacts).
 */
export function dropMirroredTopicsStatements(db: ShardDb, panelId: string, keep: readonly string[] = []): D1PreparedStatement[] {
  const ids = JSON.stringify(keep);
  return [
    db.prepare("DELETE FROM topic_optouts WHERE panel_id = ?1 AND topic_id NOT IN (SELECT value FROM json_each(?2))").bind(panelId, ids),
    db.prepare("DELETE FROM topics WHERE panel_id = ?1 AND id NOT IN (SELECT value FROM json_each(?2))").bind(panelId, ids),
  ];
}

/**
 * Drops the topics `ids` from a mirror and their opt-outs there (a mirror's resync: topics the
 * home deleted), the opt-outs within `buckets` as deleteTopic's.
 */
export function dropTopicsStatements(db: ShardDb, panelId: string, ids: readonly string[], buckets: BucketRanges | null = null): D1PreparedStatement[] {
  const drop = JSON.stringify(ids);
  return [
    db
      .prepare(`DELETE FROM topic_optouts WHERE panel_id = ?1 AND topic_id IN (SELECT value FROM json_each(?2)) AND NOT ${fencedContactCopyHere("topic_optouts", "?3")}`)
      .bind(panelId, drop, buckets && JSON.stringify(buckets)),
    db.prepare("DELETE FROM topics WHERE panel_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(panelId, drop),
  ];
}
