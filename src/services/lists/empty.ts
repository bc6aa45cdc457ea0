import { succeeded, type Result } from "../../lib/problems";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { clearList } from "./clear";
import { findList, noSuchList, type ListRef } from "./find";
import type { MirrorShard } from "../access/partitions";

/**
 * Removes every member of a list (the contacts stay), in bounded steps (clear.ts: a list of up to
 * FANOUT_CHUNK_IDS member ids before the answer, a larger one through the queue), then has the
 * segments that read lists rebuilt; answers how many it had, which is what goes.
 */
export async function emptyList(env: Env, db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], ref: ListRef, now: number, by?: Auditor): Promise<Result<{ removed: number }>> {
  const list = await findList(db, panelId, ref);
  if (!list) return noSuchList(ref);
  const removed = await clearList(env, db, panelId, mirrors, list.id, now, false);
  if (removed === null) return noSuchList(ref);
  if (by) await recordAudit(db, panelId, by, "list.emptied", String(list.id), { name: list.name, removed });
  return succeeded({ removed });
}
