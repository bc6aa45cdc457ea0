import { succeeded, type Result } from "../../lib/problems";
import { deleteList } from "../../store/lists";
import { rebuildSegments } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { findList, noSuchList, type ListRef } from "./find";

/** Deletes a list and its memberships (the contacts stay), then has the segments that read lists rebuilt. */
export async function removeList(db: ShardDb, panelId: string, ref: ListRef, now: number, by?: Auditor): Promise<Result<true>> {
  const list = await findList(db, panelId, ref);
  if (!list) return noSuchList(ref);
  await deleteList(db, panelId, list.id);
  await rebuildSegments(db, panelId, now);
  if (by) await recordAudit(db, panelId, by, "list.deleted", String(list.id), { name: list.name });
  return succeeded(true);
}
