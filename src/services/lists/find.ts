import { findListByName, getList, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

/** How a caller names a list: the panel screens by id, the envelope by name. */
export type ListRef = { id: number } | { name: string };

export function findList(db: ShardDb, panelId: string, ref: ListRef): Promise<ContactList | null> {
  return "id" in ref ? getList(db, panelId, ref.id) : findListByName(db, panelId, ref.name);
}
