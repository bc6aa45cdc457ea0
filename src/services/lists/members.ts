import { succeeded, type Result } from "../../lib/problems";
import { getList, listMembers, type ContactList, type ListMember } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { mergedContactPage } from "../access/partitions";
import { noSuchList } from "./find";

/**
 * A page of a list's members by contact id (the order the contacts were created on each shard),
 * after contact id `afterId`: the list as the home (`shards[0]`) has it, its members from every
 * shard holding the panel's partitions (panelShards), merged by id, `limit` at most a shard.
 */
export async function listMembersPage(
  shards: readonly [ShardDb, ...ShardDb[]],
  panelId: string,
  listId: number,
  afterId: number,
  limit: number,
): Promise<Result<{ list: ContactList; members: ListMember[] }>> {
  const list = await getList(shards[0], panelId, listId);
  if (!list) return noSuchList({ id: listId });
  const members = await mergedContactPage(shards, (db) => listMembers(db, panelId, list.id, afterId, limit), (a, b) => a.contactId - b.contactId, limit);
  return succeeded({ list, members });
}
