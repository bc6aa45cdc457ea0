import type { ShardDb } from "../store/shards";
import { MAX_LIST_DESCRIPTION_LENGTH, MAX_LIST_NAME_LENGTH } from "../domain/lists";
import { conflict, notFound, orNotFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { rebuildSegments } from "../store/segments";
import { deleteList, emptyList, findListByName, insertList, listLists, renameList, type ContactList } from "../store/lists";
import { isoTime } from "../store/sql";
import { defineOperation, type OperationTable } from "./operation";
import { listIdParam, optionalTextParam, textParam } from "../domain/fields";

const listName = textParam(MAX_LIST_NAME_LENGTH).meta({ description: "List name, unique in the panel regardless of case" });
const listDescription = optionalTextParam(MAX_LIST_DESCRIPTION_LENGTH);

/** A list as the API shows it (CONTRACT 2.2, 4.8). */
export function listView(list: ContactList) {
  return {
    id: list.id,
    listname: list.name,
    desc: list.description,
    count: list.count,
    created_at: isoTime(list.createdAt),
    updated_at: isoTime(list.updatedAt),
  };
}

function nameTaken(name: string) {
  return conflict(`listname: a list named "${name}" already exists in this panel`, [
    { field: "listname", message: "a list with this name already exists" },
  ]);
}

function listByNameOrThrow(db: ShardDb, panelId: string, name: string): Promise<ContactList> {
  return orNotFound(findListByName(db, panelId, name), `listname: no list named "${name}" in this panel`, [{ field: "listname", message: "no such list" }]);
}

const createList = defineOperation({
  summary: "Create a list (4.6)",
  params: z.object({ listname: listName, desc: listDescription }),
  async run({ env, panel, now, db }, { listname, desc }) {
    const id = await insertList(db, panel.id, listname, desc ?? "", now);
    if (id === null) throw nameTaken(listname);
    return { listid: id };
  },
});

const editList = defineOperation({
  summary: "Rename a list and optionally change its description (4.7)",
  params: z.object({ id: listIdParam, listname: listName, desc: listDescription }),
  async run({ env, panel, now, db }, { id, listname, desc }) {
    const outcome = await renameList(db, panel.id, id, listname, desc, now);
    if (outcome.kind === "missing") throw notFound(`id: no list with id ${id} in this panel`, [{ field: "id", message: "no such list" }]);
    if (outcome.kind === "duplicate") throw nameTaken(listname);
    return { list: listView(outcome.list) };
  },
});

const getAllLists = defineOperation({
  summary: "All lists of the panel with their member counts (4.8)",
  params: z.object({}),
  async run({ env, panel, db }) {
    return { lists: (await listLists(db, panel.id)).map(listView) };
  },
});

const removeList = defineOperation({
  summary: "Delete a list by name (4.9); its contacts stay",
  params: z.object({ listname: listName }),
  async run({ env, panel, db }, { listname }) {
    const list = await listByNameOrThrow(db, panel.id, listname);
    await deleteList(db, panel.id, list.id);
    await rebuildSegments(db, panel.id, Date.now());
    return {};
  },
});

const emptyNamedList = defineOperation({
  summary: "Remove every member of a list; the contacts stay",
  params: z.object({ listname: listName }),
  async run({ env, panel, now, db }, { listname }) {
    const list = await listByNameOrThrow(db, panel.id, listname);
    const removed = await emptyList(db, panel.id, list.id, now);
    await rebuildSegments(db, panel.id, now);
    return { removed };
  },
});

export const listOperations: OperationTable = {
  add: createList,
  edit: editList,
  getall: getAllLists,
  delete: removeList,
  emptylist: emptyNamedList,
};
