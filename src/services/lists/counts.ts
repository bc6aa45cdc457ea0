import { listLists, listMemberCounts, type ContactList } from "../../store/lists";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { mirrorShards } from "../access/partitions";

/**
 * Lists' members counted over the panel's partitions (decision 0038 step 6, 0041): each
 * shard's row of a list counts that shard's members, so a list's count is the sum of its rows
 * on the distinct shards holding the panel's partitions, one read a shard whatever the number
 * of lists.
 */

/** Each of `ids`' members summed over `shards`, one read each; a list no shard has is absent. */
export async function summedMemberCounts(shards: readonly ShardDb[], panelId: string, ids: readonly number[] | "all"): Promise<Map<number, number>> {
  return sums(await Promise.all(shards.map((db) => listMemberCounts(db, panelId, ids))));
}

function sums(counts: readonly Map<number, number>[]): Map<number, number> {
  if (counts.length === 1) return counts[0]!;
  const summed = new Map<number, number>();
  for (const shard of counts) for (const [id, n] of shard) summed.set(id, (summed.get(id) ?? 0) + n);
  return summed;
}

/**
 * The panel's lists (listLists on the home) counted over its partitions, the home's read and
 * the mirrors' counters at once: one round trip, not two (`lists/getall` on a client's path).
 */
export async function panelListsCounted(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, db: ShardDb): Promise<ContactList[]> {
  const mirrors = mirrorShards(env, panel);
  const [lists, elsewhere] = await Promise.all([listLists(db, panel.id), mirrors.length ? summedMemberCounts(mirrors.map((m) => m.db), panel.id, "all") : null]);
  return elsewhere ? lists.map((l) => ({ ...l, count: l.count + (elsewhere.get(l.id) ?? 0) })) : lists;
}

/**
 * Lists as the home read them (their home count included) with each mirror's members added.
 * A panel without mirrors answers `lists` as read, with no query.
 */
export async function withPanelCounts(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, lists: readonly ContactList[]): Promise<ContactList[]> {
  const mirrors = mirrorShards(env, panel);
  if (mirrors.length === 0 || lists.length === 0) return [...lists];
  const elsewhere = await summedMemberCounts(mirrors.map((m) => m.db), panel.id, lists.map((l) => l.id));
  return lists.map((l) => ({ ...l, count: l.count + (elsewhere.get(l.id) ?? 0) }));
}

/** One list, as withPanelCounts. */
export async function withPanelCount(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, list: ContactList): Promise<ContactList> {
  return (await withPanelCounts(env, panel, [list]))[0]!;
}
