import { succeeded, type Result } from "../../lib/problems";
import { changedValues } from "../../domain/audit";
import { getList, renameList as storeRename, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { listNameTaken, noSuchList } from "./find";
import { mirrorLists, type MirrorShard } from "../access/partitions";

/** Renames a list and, when given, changes its description; the new name must be free in the panel. `mirrors` (decision 0041) follow. */
export async function renameList(db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], listId: number, name: string, description: string | undefined, now: number, by?: Auditor): Promise<Result<ContactList>> {
  // Read first only to tell the audit log what the list was called.
  const before = by ? await getList(db, panelId, listId) : null;
  const outcome = await storeRename(db, panelId, listId, name, description, now);
  if (outcome.kind === "missing") return noSuchList({ id: listId });
  if (outcome.kind === "duplicate") return listNameTaken(name);
  await mirrorLists(mirrors, panelId, [outcome.list]);
  if (by) {
    const was = { name: before?.name ?? null, description: before?.description ?? null };
    await recordAudit(db, panelId, by, "list.renamed", String(listId), changedValues(was, { name: outcome.list.name, description: outcome.list.description }));
  }
  return succeeded(outcome.list);
}
