import { jobStartedAnswer, listAnswer, listDeletedAnswer, listEmptiedAnswer, listListAnswer, listMembersAnswer } from "../domain/answers/contacts";
import { NEEDS } from "../domain/permissions";
import { parseListId } from "../domain/fields";
import { createListBody, importFromUrlBody, listMembersQuery, MAX_PANEL_UPLOAD_BYTES, renameListBody, uploadQuery } from "../domain/panel-screens";
import { invalidField, problemError } from "../lib/http/errors";
import type { Problem, Result } from "../lib/problems";
import { createList as createPanelList } from "../services/lists/create";
import { emptyList } from "../services/lists/empty";
import { importUrlIntoList, uploadIntoList } from "../services/lists/import";
import { listMembersPage } from "../services/lists/members";
import { removeList as removePanelList } from "../services/lists/remove";
import { renameList } from "../services/lists/rename";
import type { ContactList } from "../store/lists";
import { mirrorShards, panelOwningShards, shownContactPage } from "../services/access/partitions";
import { panelListsCounted, withPanelCount } from "../services/lists/counts";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { auditorOf } from "./audit";

function listView(list: ContactList) {
  return { id: list.id, name: list.name, description: list.description, count: list.count, created_at: isoTime(list.createdAt), updated_at: isoTime(list.updatedAt) };
}

function listId(raw: string | undefined): number {
  const id = parseListId(raw ?? "");
  if (id === null) throw invalidField("list", "must be a list id");
  return id;
}

/**
 * A lists service's refusal in the admin API's words: a missing list is named by the path's
 * `:list` as given, with no field (CONTRACT); the service's other words stand. The one place the
 * admin API words them; the envelope words the same refusals its own way (api/lists.ts).
 */
function inPanelWords(problem: Problem, rawListId: string | undefined): Problem {
  if (problem.kind === "not_found") return { kind: "not_found", fields: [], message: `No list with id ${rawListId} in this panel` };
  return problem;
}

/** The service's value, or its refusal thrown in the admin API's words. */
function unwrapList<T>(result: Result<T>, rawListId?: string): T {
  if (result.ok) return result.value;
  throw problemError(inPanelWords(result.problem, rawListId));
}

const panelLists = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/lists",
  role: NEEDS.read,
  response: listListAnswer,
  summary: "The panel's lists with their member counts",
  async handle({ env, path, panel, db }) {
    return { lists: (await panelListsCounted(env, panel, db)).map(listView) };
  },
});

const createList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists",
  role: NEEDS.audience,
  response: listAnswer,
  summary: "Create a list (names are unique in the panel regardless of case)",
  status: 201,
  body: createListBody,
  async handle({ env, caller, body, panel, db }) {
    return listView(unwrapList(await createPanelList(db, panel.id, mirrorShards(env, panel), body.name, body.description ?? "", Date.now(), auditorOf(caller))));
  },
});

const changeList = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/lists/:list",
  role: NEEDS.audience,
  response: listAnswer,
  summary: "Rename a list and optionally change its description",
  body: renameListBody,
  async handle({ env, caller, path, body, panel, db }) {
    const list = unwrapList(await renameList(db, panel.id, mirrorShards(env, panel), listId(path.list), body.name, body.description, Date.now(), auditorOf(caller)), path.list);
    return listView(await withPanelCount(env, panel, list));
  },
});

const removeList = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/lists/:list",
  role: NEEDS.audience,
  response: listDeletedAnswer,
  summary: "Delete a list and its memberships; the contacts stay. Refused (409, naming them) while a draft, scheduled, sending or paused campaign or a running or paused journey uses the list",
  async handle({ env, caller, path, panel, db }) {
    unwrapList(await removePanelList(env, db, panel.id, mirrorShards(env, panel), { id: listId(path.list) }, Date.now(), { by: auditorOf(caller), refuseInUse: true }), path.list);
    return { deleted: true };
  },
});

const uploadToList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/uploads",
  role: NEEDS.audience,
  response: jobStartedAnswer,
  summary: `Upload a CSV file (the raw request body, at most ${MAX_PANEL_UPLOAD_BYTES / 1024 / 1024} MiB) into the list: stored in R2, then imported by the bulk-upload engine; \`mapping\` (JSON text) sends each CSV header to an attribute, a new attribute or nowhere (an unknown attribute is a 400 naming the column); answers the job to follow at /jobs/{job}`,
  status: 202,
  query: uploadQuery,
  async handle({ request, env, caller, path, query, panel, db }) {
    const upload = { declaredBytes: Number(request.headers.get("content-length") ?? "NaN"), body: request.body, name: query.name, maxBytes: MAX_PANEL_UPLOAD_BYTES, mapping: query.mapping };
    const { jobId } = unwrapList(await uploadIntoList(env, db, panel.id, listId(path.list), upload, new URL(request.url).origin, auditorOf(caller)), path.list);
    return { jobid: jobId };
  },
});

const panelListMembers = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/lists/:list/members",
  role: NEEDS.read,
  response: listMembersAnswer,
  summary: "A page of the list's members, in the order the contacts were created; next_cursor pages on",
  query: listMembersQuery,
  async handle({ env, db, path, query, panel }) {
    const found = unwrapList(await listMembersPage(panelOwningShards(env, panel, db), panel.id, listId(path.list), query.after ?? 0, query.limit + 1), path.list);
    const { shown: page, nextAfter } = shownContactPage(found.members, query.limit);
    return {
      list: listView(await withPanelCount(env, panel, found.list)),
      primary_key: panel.primaryKey,
      members: page.map((m) => ({ key: m.key, attributes: m.attributes, added_at: isoTime(m.addedAt) })),
      next_cursor: nextAfter && String(nextAfter.contactId),
    };
  },
});

const emptyPanelList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/empty",
  role: NEEDS.audience,
  response: listEmptiedAnswer,
  summary: "Remove every member of the list; the contacts stay",
  async handle({ env, db, caller, path, panel }) {
    const { removed } = unwrapList(await emptyList(env, db, panel.id, mirrorShards(env, panel), { id: listId(path.list) }, Date.now(), auditorOf(caller)), path.list);
    return { removed };
  },
});

const importFromUrl = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/imports",
  role: NEEDS.audience,
  response: jobStartedAnswer,
  summary: "Import contacts into the list from a CSV file at a URL, by the bulk-upload engine (as bulkupload's path); `mapping` sends each CSV header to an attribute, a new attribute or nowhere (an unknown attribute is a 400 naming the column); answers the job to follow at /jobs/{job}",
  status: 202,
  body: importFromUrlBody,
  async handle({ request, env, caller, db, path, body, panel }) {
    const { jobId } = unwrapList(await importUrlIntoList(env, db, panel.id, listId(path.list), body.url, new URL(request.url).origin, auditorOf(caller), body.mapping), path.list);
    return { jobid: jobId };
  },
});

export const listRoutes = [panelLists, createList, changeList, removeList, uploadToList, panelListMembers, emptyPanelList, importFromUrl];
