import { refused, succeeded, type Result } from "../../lib/problems";
import { usersInWords } from "../../domain/lists";
import { listUsers } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { clearList } from "./clear";
import { findList, noSuchList, type ListRef } from "./find";
import type { MirrorShard } from "../access/partitions";

export interface RemoveListOptions {
  /** Who deletes it, for the audit log. */
  by?: Auditor;
  /**
   * Refuse (conflict, naming them) while a campaign not yet done (draft, scheduled, sending,
   * paused) or a running or paused journey uses the list: the panel's delete. The envelope's `lists/delete` does not
   * refuse (CONTRACT 4.9 names no such failure).
   */
  refuseInUse?: boolean;
}

/**
 * Deletes a list and its memberships (the contacts stay), then has the segments that read lists
 * rebuilt: the list is gone at once, its memberships go in bounded steps (clear.ts).
 */
export async function removeList(env: Env, db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], ref: ListRef, now: number, options: RemoveListOptions = {}): Promise<Result<true>> {
  const list = await findList(db, panelId, ref);
  if (!list) return noSuchList(ref);
  if (options.refuseInUse) {
    const users = await listUsers(db, panelId, list.id);
    if (users.length) return refused("conflict", [], `The list "${list.name}" is used by ${usersInWords(users)}; stop the journeys, and send, cancel or delete the campaigns first`);
  }
  if ((await clearList(env, db, panelId, mirrors, list.id, now, true)) === null) return noSuchList(ref);
  if (options.by) await recordAudit(db, panelId, options.by, "list.deleted", String(list.id), { name: list.name });
  return succeeded(true);
}
