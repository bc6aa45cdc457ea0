import { succeeded, type Result } from "../../lib/problems";
import { renameList as storeRename, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { listNameTaken, noSuchList } from "./find";

/** Renames a list and, when given, changes its description; the new name must be free in the panel. */
export async function renameList(db: ShardDb, panelId: string, listId: number, name: string, description: string | undefined, now: number): Promise<Result<ContactList>> {
  const outcome = await storeRename(db, panelId, listId, name, description, now);
  if (outcome.kind === "missing") return noSuchList({ id: listId });
  if (outcome.kind === "duplicate") return listNameTaken(name);
  return succeeded(outcome.list);
}
