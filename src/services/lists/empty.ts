import { succeeded, type Result } from "../../lib/problems";
import { emptyList as removeMembers } from "../../store/lists";
import { rebuildSegments } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { findList, noSuchList, type ListRef } from "./find";

/** Removes every member of a list (the contacts stay), then has the segments that read lists rebuilt; answers how many were removed. */
export async function emptyList(db: ShardDb, panelId: string, ref: ListRef, now: number, by?: Auditor): Promise<Result<{ removed: number }>> {
  const list = await findList(db, panelId, ref);
  if (!list) return noSuchList(ref);
  const removed = await removeMembers(db, panelId, list.id, now);
  await rebuildSegments(db, panelId, now);
  if (by) await recordAudit(db, panelId, by, "list.emptied", String(list.id), { name: list.name, removed });
  return succeeded({ removed });
}
