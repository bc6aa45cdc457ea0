import { succeeded, type Result } from "../../lib/problems";
import { getList, insertList, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { listNameTaken } from "./find";

/** Creates a list; names are unique in the panel regardless of case (else refused: conflict). */
export async function createList(db: ShardDb, panelId: string, name: string, description: string, now: number, by?: Auditor): Promise<Result<ContactList>> {
  const id = await insertList(db, panelId, name, description, now);
  if (id === null) return listNameTaken(name);
  if (by) await recordAudit(db, panelId, by, "list.created", String(id), { name, description });
  return succeeded((await getList(db, panelId, id))!);
}
