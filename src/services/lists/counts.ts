import { listMemberCounts, type ContactList } from "../../store/lists";
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
export async function summedMemberCounts(shards: readonly ShardDb[], panelId: string, ids: readonly number[]): Promise<Map<number, number>> {
  const counts = await Promise.all(shards.map((db) => listMemberCounts(db, panelId, ids)));
  if (counts.length === 1) return counts[0]!;
  const sums = new Map<number, number>();
  for (const shard of counts) for (const [id, n] of shard) sums.set(id, (sums.get(id) ?? 0) + n);
  return sums;
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
