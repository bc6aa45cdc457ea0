import { refused, type Result } from "../../lib/problems";
import { findListByName, getList, type ContactList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";

/** How a caller names a list: the panel screens by id, the envelope by name. */
export type ListRef = { id: number } | { name: string };

export function findList(db: ShardDb, panelId: string, ref: ListRef): Promise<ContactList | null> {
  return "id" in ref ? getList(db, panelId, ref.id) : findListByName(db, panelId, ref.name);
}

/**
 * The lists services' refusals, in their own words (field `list` for the list named, `name` for
 * a new name); the envelope and the admin API reword them as CONTRACT has each (api/lists.ts,
 * admin/lists.ts).
 */
export function noSuchList(ref: ListRef): Result<never> {
  const named = "id" in ref ? `with id ${ref.id}` : `named "${ref.name}"`;
  return refused("not_found", [{ field: "list", message: "no such list" }], `No list ${named} in this panel`);
}

export function listNameTaken(name: string): Result<never> {
  return refused("conflict", [{ field: "name", message: "a list with this name already exists" }], `name: a list named "${name}" already exists in this panel`);
}
