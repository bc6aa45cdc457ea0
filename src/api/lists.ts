import { MAX_LIST_DESCRIPTION_LENGTH, MAX_LIST_NAME_LENGTH } from "../domain/lists";
import { problemError } from "../lib/http/errors";
import type { Problem, Result } from "../lib/problems";
import { z } from "../lib/z";
import { createList as createPanelList } from "../services/lists/create";
import { emptyList } from "../services/lists/empty";
import { removeList as removePanelList } from "../services/lists/remove";
import { renameList } from "../services/lists/rename";
import { apiKeyAuditor } from "../services/audit/record";
import type { ContactList } from "../store/lists";
import { mirrorShards } from "../services/access/partitions";
import { panelListsCounted, withPanelCount } from "../services/lists/counts";
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

/**
 * A lists service's refusal in the envelope's words (CONTRACT 4.6-4.9): the list is named by the
 * operation's `id` when it has one, else by `listname`, and a taken name is `listname`. The one
 * place the envelope words them; the admin API words the same refusals its own way (admin/lists.ts).
 */
function inEnvelopeWords(problem: Problem, asked: { id?: number; listname: string }): Problem {
  if (problem.kind === "conflict") {
    return { kind: "conflict", fields: [{ field: "listname", message: "a list with this name already exists" }], message: `listname: a list named "${asked.listname}" already exists in this panel` };
  }
  if (problem.kind !== "not_found") return problem;
  if (asked.id !== undefined) return { kind: "not_found", fields: [{ field: "id", message: "no such list" }], message: `id: no list with id ${asked.id} in this panel` };
  return { kind: "not_found", fields: [{ field: "listname", message: "no such list" }], message: `listname: no list named "${asked.listname}" in this panel` };
}

/** The service's value, or its refusal thrown in the envelope's words. */
function unwrapList<T>(result: Result<T>, asked: { id?: number; listname: string }): T {
  if (result.ok) return result.value;
  throw problemError(inEnvelopeWords(result.problem, asked));
}

const createList = defineOperation({
  summary: "Create a list (4.6)",
  params: z.object({ listname: listName, desc: listDescription }),
  async run({ env, panel, user, now, db }, { listname, desc }) {
    const list = unwrapList(await createPanelList(db, panel.id, mirrorShards(env, panel), listname, desc ?? "", now, apiKeyAuditor(user)), { listname });
    return { listid: list.id };
  },
});

const editList = defineOperation({
  summary: "Rename a list and optionally change its description (4.7)",
  params: z.object({ id: listIdParam, listname: listName, desc: listDescription }),
  async run({ env, panel, user, now, db }, { id, listname, desc }) {
    const list = unwrapList(await renameList(db, panel.id, mirrorShards(env, panel), id, listname, desc, now, apiKeyAuditor(user)), { id, listname });
    return { list: listView(await withPanelCount(env, panel, list)) };
  },
});

const getAllLists = defineOperation({
  summary: "All lists of the panel with their member counts (4.8)",
  params: z.object({}),
  async run({ env, panel, db }) {
    return { lists: (await panelListsCounted(env, panel, db)).map(listView) };
  },
});

const removeList = defineOperation({
  summary: "Delete a list by name (4.9); its contacts stay",
  params: z.object({ listname: listName }),
  async run({ env, panel, user, db }, { listname }) {
    unwrapList(await removePanelList(env, db, panel.id, mirrorShards(env, panel), { name: listname }, Date.now(), { by: apiKeyAuditor(user) }), { listname });
    return {};
  },
});

const emptyNamedList = defineOperation({
  summary: "Remove every member of a list; the contacts stay",
  params: z.object({ listname: listName }),
  async run({ env, panel, user, now, db }, { listname }) {
    const { removed } = unwrapList(await emptyList(env, db, panel.id, mirrorShards(env, panel), { name: listname }, now, apiKeyAuditor(user)), { listname });
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
