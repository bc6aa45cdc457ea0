import { renameList as storeRename, type RenameOutcome } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

export type { RenameOutcome };

/** Renames a list and, when given, changes its description; the new name must be free in the panel. */
export function renameList(db: ShardDb, panelId: string, listId: number, name: string, description: string | undefined, now: number): Promise<RenameOutcome> {
  return storeRename(db, panelId, listId, name, description, now);
}
