import type { ShardDb } from "../shards";

/**
 * The archive's index of whose events each archived part holds (`event_archive_owner_blocks`,
 * store/event-archive.ts) stays on the shard that archived the part, and a contact's erasure
 * reads it on the contact's shard (services/contacts/erase.ts). So a split's target takes the
 * blocks of the contacts it took (decision 0047): a moved contact's erasure then finds the days
 * archived before the split and rewrites them. Only the blocks, not the parts' rows: those stay
 * with the shard that archived them, which replays read once each (a copy would read them twice).
 * Blocks of contacts the target does not hold are skipped; pairs it holds for an owner already are kept.
 */
export async function copyArchiveOwners(source: ShardDb, target: ShardDb, panelId: string, pageRows: number): Promise<number> {
  let copied = 0;
  for (let after: [string, number] = ["c:", -1]; ; ) {
    const { results } = await source
      .prepare(
        `SELECT owner, block, parts FROM event_archive_owner_blocks
         WHERE panel_id = ?1 AND (owner, block) > (?2, ?3) AND owner < 'c;' ORDER BY owner, block LIMIT ?4`,
      )
      .bind(panelId, after[0], after[1], pageRows)
      .all<{ owner: string; block: number; parts: string }>();
    if (results.length === 0) return copied;
    const { meta } = await target
      .prepare(
        `INSERT INTO event_archive_owner_blocks (panel_id, owner, block, parts)
         SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2 FROM json_each(?2) r
         WHERE EXISTS (SELECT 1 FROM contacts c WHERE c.id = CAST(substr(r.value ->> 0, 3) AS INTEGER) AND c.panel_id = ?1)
         ON CONFLICT (panel_id, owner, block) DO UPDATE SET
           parts = (SELECT json_group_array(json(value)) FROM (SELECT value FROM json_each(event_archive_owner_blocks.parts) UNION SELECT value FROM json_each(excluded.parts)))`,
      )
      .bind(panelId, JSON.stringify(results.map((r) => [r.owner, r.block, r.parts])))
      .run();
    copied += meta.changes;
    const last = results[results.length - 1]!;
    if (results.length < pageRows) return copied;
    after = [last.owner, last.block];
  }
}
