import type { ShardDb } from "./shards";
/**
 * Journey entries left by contacts joining a list (migration 0011: a trigger on list_members
 * writes them). A consumer leases a page, enters the contacts, then deletes the page; a page
 * whose consumer died is leased again once its lease ran out.
 */

export interface ListEntry {
  id: number;
  panelId: string;
  journeyId: string;
  listId: number;
  contactId: number;
  /** Set for an entry left by a contact entering a saved segment (migration 0030); listId is 0 then. */
  segmentId: string | null;
}

interface ListEntryRow {
  id: number;
  panel_id: string;
  journey_id: string;
  list_id: number;
  contact_id: number;
  segment_id: string | null;
}

// Two statements rather than an optional filter: SQLite would not use the contact index for
// `(? IS NULL OR contact_id = ?)`, and a contact's lookup must not walk an upload's backlog.
const LEASE_SQL = {
  panel: `SELECT id FROM journey_list_entries WHERE panel_id = ?1 AND leased_until <= ?2 ORDER BY id LIMIT ?4`,
  contact: `SELECT id FROM journey_list_entries WHERE panel_id = ?1 AND contact_id = ?5 AND leased_until <= ?2 LIMIT ?4`,
};

/** Leases up to `limit` free entries of the panel (or of one of its contacts), oldest first. */
export async function leaseListEntries(
  db: ShardDb,
  panelId: string,
  options: { contactId?: number; limit: number; now: number; leaseMs: number },
): Promise<ListEntry[]> {
  const pick = options.contactId === undefined ? LEASE_SQL.panel : LEASE_SQL.contact;
  const { results } = await db
    .prepare(
      `UPDATE journey_list_entries SET leased_until = ?3
       WHERE id IN (${pick}) AND leased_until <= ?2
       RETURNING id, panel_id, journey_id, list_id, contact_id, segment_id`,
    )
    .bind(panelId, options.now, options.now + options.leaseMs, options.limit, ...(options.contactId === undefined ? [] : [options.contactId]))
    .all<ListEntryRow>();
  return results
    .map((r) => ({ id: r.id, panelId: r.panel_id, journeyId: r.journey_id, listId: r.list_id, contactId: r.contact_id, segmentId: r.segment_id }))
    .sort((a, b) => a.id - b.id);
}

/**
 * Frees the panel's entries held on `db` at a move's switch (its target): a lease copied there was
 * taken on the source by a consumer that either finished before the fence (its delete is copied
 * too) or failed on it, and would otherwise hold the entry until the lease ran out. An entry taken
 * twice enters once (its key). Held entries are a consumer's page or a few; the panel's backlog
 * is read once to find them, at the switch only.
 */
export async function freeListEntryLeases(db: ShardDb, panelId: string, now: number): Promise<number> {
  const { meta } = await db.prepare("UPDATE journey_list_entries SET leased_until = 0 WHERE panel_id = ? AND leased_until > ?").bind(panelId, now).run();
  return meta.changes ?? 0;
}

export async function deleteListEntries(db: ShardDb, panelId: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .prepare("DELETE FROM journey_list_entries WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify(ids))
    .run();
}

/**
 * Panels with entries no consumer holds, for the cron's re-drive of lost nudges. It walks the
 * distinct panels of the index, one probe each, instead of reading every entry (a large
 * upload leaves a million). Like the event re-drive, it reads across panels but names panels
 * only.
 */
export async function panelsWithFreeListEntries(db: ShardDb, now: number, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `WITH RECURSIVE panels(id) AS (
         SELECT (SELECT MIN(panel_id) FROM journey_list_entries)
         UNION ALL
         SELECT (SELECT MIN(panel_id) FROM journey_list_entries WHERE panel_id > panels.id) FROM panels WHERE panels.id IS NOT NULL)
       SELECT id FROM panels
       WHERE id IS NOT NULL
         AND EXISTS (SELECT 1 FROM journey_list_entries e WHERE e.panel_id = panels.id AND e.leased_until <= ?1)
       LIMIT ?2`,
    )
    .bind(now, limit)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** The panel's entries no consumer holds, counted up to `cap`. */
export async function countFreeListEntries(db: ShardDb, panelId: string, now: number, cap: number): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM (SELECT 1 FROM journey_list_entries WHERE panel_id = ? AND leased_until <= ? LIMIT ?)")
    .bind(panelId, now, cap)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
