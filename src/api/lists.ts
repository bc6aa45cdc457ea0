import { MAX_LIST_DESCRIPTION_LENGTH, MAX_LIST_NAME_LENGTH } from "../domain/lists";
import { conflict, notFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { createList as createPanelList } from "../services/lists/create";
import { emptyList } from "../services/lists/empty";
import { removeList as removePanelList } from "../services/lists/remove";
import { renameList } from "../services/lists/rename";
import { listLists, type ContactList } from "../store/lists";
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

function noListNamed(name: string) {
  return notFound(`listname: no list named "${name}" in this panel`, [{ field: "listname", message: "no such list" }]);
}

const createList = defineOperation({
  summary: "Create a list (4.6)",
  params: z.object({ listname: listName, desc: listDescription }),
  async run({ env, panel, now, db }, { listname, desc }) {
    const outcome = await createPanelList(db, panel.id, listname, desc ?? "", now);
    if (outcome.kind === "name_taken") throw nameTaken(listname);
    return { listid: outcome.list.id };
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
    const outcome = await removePanelList(db, panel.id, { name: listname }, Date.now());
    if (outcome.kind === "missing") throw noListNamed(listname);
    return {};
  },
});

const emptyNamedList = defineOperation({
  summary: "Remove every member of a list; the contacts stay",
  params: z.object({ listname: listName }),
  async run({ env, panel, now, db }, { listname }) {
    const outcome = await emptyList(db, panel.id, { name: listname }, now);
    if (outcome.kind === "missing") throw noListNamed(listname);
    return { removed: outcome.removed };
  },
});

export const listOperations: OperationTable = {
  add: createList,
  edit: editList,
  getall: getAllLists,
  delete: removeList,
  emptylist: emptyNamedList,
};
