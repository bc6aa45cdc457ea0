import { succeeded, type Result } from "../../lib/problems";
import { getList, listMembers, type ContactList, type ListMember } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { noSuchList } from "./find";

/** A page of a list's members in the order the contacts were created, after contact id `afterId`. */
export async function listMembersPage(
  db: ShardDb,
  panelId: string,
  listId: number,
  afterId: number,
  limit: number,
): Promise<Result<{ list: ContactList; members: ListMember[] }>> {
  const list = await getList(db, panelId, listId);
  if (!list) return noSuchList({ id: listId });
  return succeeded({ list, members: await listMembers(db, panelId, list.id, afterId, limit) });
}
