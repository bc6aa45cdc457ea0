import { succeeded, type Result } from "../../lib/problems";
import { getList, listMembers, type ContactList, type ListMember } from "../../store/lists";
import { mergedContactPage, type ContactPage, type OwningShards } from "../access/partitions";
import { noSuchList } from "./find";

/**
 * A page of a list's members by contact id (the order the contacts were created on each shard),
 * after contact id `afterId`: the list as the home (`shards[0]`) has it, its members from every
 * shard holding the panel's partitions (panelOwningShards), merged by id (mergedContactPage).
 */
export async function listMembersPage(
  shards: OwningShards,
  panelId: string,
  listId: number,
  afterId: number,
  limit: number,
): Promise<Result<{ list: ContactList; members: ContactPage<ListMember> }>> {
  const list = await getList(shards[0].db, panelId, listId);
  if (!list) return noSuchList({ id: listId });
  const members = await mergedContactPage<ListMember>(panelId, shards, (db, last) => listMembers(db, panelId, list.id, last?.contactId ?? afterId, limit), (a, b) => a.contactId - b.contactId, limit);
  return succeeded({ list, members });
}
