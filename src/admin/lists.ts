import { jobStartedAnswer, listAnswer, listDeletedAnswer, listEmptiedAnswer, listListAnswer, listMembersAnswer } from "../domain/answers/contacts";
import { parseListId } from "../domain/fields";
import { createListBody, importFromUrlBody, listMembersQuery, MAX_PANEL_UPLOAD_BYTES, renameListBody } from "../domain/panel-screens";
import { ApiError, conflict, invalidField, notFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { createList as createPanelList } from "../services/lists/create";
import { emptyList } from "../services/lists/empty";
import { importUrlIntoList, uploadIntoList } from "../services/lists/import";
import { listMembersPage } from "../services/lists/members";
import { removeList as removePanelList } from "../services/lists/remove";
import { renameList } from "../services/lists/rename";
import { listLists, type ContactList } from "../store/lists";
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

function noSuchList(raw: string | undefined) {
  return notFound(`No list with id ${raw} in this panel`);
}

function tooLarge() {
  return new ApiError(413, `file: larger than ${MAX_PANEL_UPLOAD_BYTES} bytes`, [{ field: "file", message: "too large" }]);
}

function nameTaken(name: string) {
  return conflict(`name: a list named "${name}" already exists in this panel`, [{ field: "name", message: "a list with this name already exists" }]);
}

const panelLists = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/lists",
  role: "viewer",
  response: listListAnswer,
  summary: "The panel's lists with their member counts",
  async handle({ env, path, panel, db }) {
    return { lists: (await listLists(db, panel.id)).map(listView) };
  },
});

const createList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists",
  role: "marketer",
  response: listAnswer,
  summary: "Create a list (names are unique in the panel regardless of case)",
  status: 201,
  body: createListBody,
  async handle({ env, path, body, panel, db }) {
    const outcome = await createPanelList(db, panel.id, body.name, body.description ?? "", Date.now());
    if (outcome.kind === "name_taken") throw nameTaken(body.name);
    return listView(outcome.list);
  },
});

const changeList = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/lists/:list",
  role: "marketer",
  response: listAnswer,
  summary: "Rename a list and optionally change its description",
  body: renameListBody,
  async handle({ env, path, body, panel, db }) {
    const outcome = await renameList(db, panel.id, listId(path.list), body.name, body.description, Date.now());
    if (outcome.kind === "missing") throw notFound(`No list with id ${path.list} in this panel`);
    if (outcome.kind === "duplicate") throw nameTaken(body.name);
    return listView(outcome.list);
  },
});

const removeList = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/lists/:list",
  role: "marketer",
  response: listDeletedAnswer,
  summary: "Delete a list and its memberships; the contacts stay",
  async handle({ env, caller, path, panel, db }) {
    const outcome = await removePanelList(db, panel.id, { id: listId(path.list) }, Date.now(), auditorOf(caller));
    if (outcome.kind === "missing") throw noSuchList(path.list);
    return { deleted: true };
  },
});

const uploadQuery = z.object({ name: z.string().trim().min(1).max(200).default("upload.csv") }).strict();

const uploadToList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/uploads",
  role: "marketer",
  response: jobStartedAnswer,
  summary: `Upload a CSV file (the raw request body, at most ${MAX_PANEL_UPLOAD_BYTES / 1024 / 1024} MiB) into the list: stored in R2, then imported by the bulk-upload engine; answers the job to follow at /jobs/{job}`,
  status: 202,
  query: uploadQuery,
  async handle({ request, env, path, query, panel, db }) {
    const upload = { declaredBytes: Number(request.headers.get("content-length") ?? "NaN"), body: request.body, name: query.name, maxBytes: MAX_PANEL_UPLOAD_BYTES };
    const outcome = await uploadIntoList(env, db, panel.id, listId(path.list), upload, new URL(request.url).origin);
    if (outcome.kind === "missing") throw noSuchList(path.list);
    if (outcome.kind === "too_large") throw tooLarge();
    if (outcome.kind === "no_file") throw invalidField("file", "is required: send the CSV file as the request body");
    if (outcome.kind === "empty") throw invalidField("file", "is empty");
    return { jobid: outcome.jobId };
  },
});

const panelListMembers = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/lists/:list/members",
  role: "viewer",
  response: listMembersAnswer,
  summary: "A page of the list's members, in the order the contacts were created; next_cursor pages on",
  query: listMembersQuery,
  async handle({ db, path, query, panel }) {
    const found = await listMembersPage(db, panel.id, listId(path.list), query.after ?? 0, query.limit + 1);
    if (!found) throw noSuchList(path.list);
    const page = found.members.slice(0, query.limit);
    return {
      list: listView(found.list),
      primary_key: panel.primaryKey,
      members: page.map((m) => ({ key: m.key, attributes: m.attributes, added_at: isoTime(m.addedAt) })),
      next_cursor: found.members.length > query.limit ? String(page.at(-1)!.contactId) : null,
    };
  },
});

const emptyPanelList = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/empty",
  role: "marketer",
  response: listEmptiedAnswer,
  summary: "Remove every member of the list; the contacts stay",
  async handle({ db, caller, path, panel }) {
    const outcome = await emptyList(db, panel.id, { id: listId(path.list) }, Date.now(), auditorOf(caller));
    if (outcome.kind === "missing") throw noSuchList(path.list);
    return { removed: outcome.removed };
  },
});

const importFromUrl = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/lists/:list/imports",
  role: "marketer",
  response: jobStartedAnswer,
  summary: "Import contacts into the list from a CSV file at a URL, by the bulk-upload engine (as bulkupload's path); answers the job to follow at /jobs/{job}",
  status: 202,
  body: importFromUrlBody,
  async handle({ request, env, db, path, body, panel }) {
    const outcome = await importUrlIntoList(env, db, panel.id, listId(path.list), body.url, new URL(request.url).origin);
    if (outcome.kind === "missing") throw noSuchList(path.list);
    return { jobid: outcome.jobId };
  },
});

export const listRoutes = [panelLists, createList, changeList, removeList, uploadToList, panelListMembers, emptyPanelList, importFromUrl];
