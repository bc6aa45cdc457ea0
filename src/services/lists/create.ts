import { getList, insertList, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

export type CreateListOutcome = { kind: "created"; list: ContactList } | { kind: "name_taken" };

/** Creates a list; names are unique in the panel regardless of case. */
export async function createList(db: ShardDb, panelId: string, name: string, description: string, now: number): Promise<CreateListOutcome> {
  const id = await insertList(db, panelId, name, description, now);
  if (id === null) return { kind: "name_taken" };
  return { kind: "created", list: (await getList(db, panelId, id))! };
}
