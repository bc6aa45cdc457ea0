import { getList, listMembers, type ContactList, type ListMember } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

/** A page of a list's members in the order the contacts were created, after contact id `afterId`; null when there is no such list. */
export async function listMembersPage(
  db: ShardDb,
  panelId: string,
  listId: number,
  afterId: number,
  limit: number,
): Promise<{ list: ContactList; members: ListMember[] } | null> {
  const list = await getList(db, panelId, listId);
  if (!list) return null;
  return { list, members: await listMembers(db, panelId, list.id, afterId, limit) };
}
