import { listMemberCounts, type ContactList } from "../../store/lists";
import type { Panel } from "../../store/panels";
import { mirrorShards } from "../access/partitions";

/**
 * Lists with their members counted over the panel's partitions (decision 0038 step 6, 0041):
 * each shard's row of a list counts that shard's members, so the count is the home's plus each
 * mirror's, one read per mirror shard whatever the number of lists. A panel without mirrors
 * answers `lists` as read, with no query.
 */
export async function withPanelCounts(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, lists: readonly ContactList[]): Promise<ContactList[]> {
  const mirrors = mirrorShards(env, panel);
  if (mirrors.length === 0 || lists.length === 0) return [...lists];
  const ids = lists.map((l) => l.id);
  const counts = await Promise.all(mirrors.map((m) => listMemberCounts(m.db, panel.id, ids)));
  return lists.map((l) => ({ ...l, count: counts.reduce((sum, shard) => sum + (shard.get(l.id) ?? 0), l.count) }));
}

/** One list, as withPanelCounts. */
export async function withPanelCount(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, list: ContactList): Promise<ContactList> {
  return (await withPanelCounts(env, panel, [list]))[0]!;
}
