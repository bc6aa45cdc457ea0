import { existingListIds } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

/** Those of `listIds` that name no list of the panel, in the order given. */
export async function missingLists(db: ShardDb, panelId: string, listIds: readonly number[]): Promise<number[]> {
  if (listIds.length === 0) return [];
  const found = await existingListIds(db, panelId, listIds);
  return listIds.filter((id) => !found.has(id));
}
