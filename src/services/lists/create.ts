import { succeeded, type Result } from "../../lib/problems";
import { getList, insertList, largestListId, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { listNameTaken } from "./find";
import { mirrorLists, type MirrorShard } from "../access/partitions";

/**
 * Creates a list; names are unique in the panel regardless of case (else refused: conflict).
 * The home numbers it; `mirrors` (decision 0041) get the same row.
 */
export async function createList(db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], name: string, description: string, now: number, by?: Auditor): Promise<Result<ContactList>> {
  // A number a mirror still holds (a deleted list whose clear there has not ended) is not reused.
  const above = mirrors.length ? Math.max(...(await Promise.all(mirrors.map((m) => largestListId(m.db, panelId))))) : undefined;
  const id = await insertList(db, panelId, name, description, now, above);
  if (id === null) return listNameTaken(name);
  const list = (await getList(db, panelId, id))!;
  await mirrorLists(mirrors, panelId, [list]);
  if (by) await recordAudit(db, panelId, by, "list.created", String(id), { name, description });
  return succeeded(list);
}
