import { jobStartedAnswer, listAnswer, listDeletedAnswer, listEmptiedAnswer, listListAnswer, listMembersAnswer } from "../domain/answers/contacts";
import type { ShardDb } from "../store/shards";
import { parseListId } from "../domain/fields";
import { createListBody, importFromUrlBody, listMembersQuery, MAX_PANEL_UPLOAD_BYTES, renameListBody } from "../domain/panel-screens";
import { ApiError, conflict, invalidField, notFound } from "../lib/http/errors";
import { newId } from "../lib/random";
import { R2Upload } from "../lib/r2-upload";
import { z } from "../lib/z";
import { startImport } from "../services/imports";
import { rebuildSegments } from "../store/segments";
import { deleteList, emptyList, getList, insertList, listLists, listMembers, renameList, type ContactList } from "../store/lists";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { audited } from "./audit";

function listView(list: ContactList) {
  return { id: list.id, name: list.name, description: list.description, count: list.count, created_at: isoTime(list.createdAt), updated_at: isoTime(list.updatedAt) };
}

function listId(raw: string | undefined): number {
  const id = parseListId(raw ?? "");
  if (id === null) throw invalidField("list", "must be a list id");
  return id;
}

async function requireList(db: ShardDb, panelId: string, raw: string | undefined): Promise<ContactList> {
  const list = await getList(db, panelId, listId(raw));
  if (!list) throw notFound(`No list with id ${raw} in this panel`);
  return list;
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
    const id = await insertList(db, panel.id, body.name, body.description ?? "", Date.now());
    if (id === null) throw nameTaken(body.name);
    return listView((await getList(db, panel.id, id))!);
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
    const list = await requireList(db, panel.id, path.list);
    await deleteList(db, panel.id, list.id);
    await rebuildSegments(db, panel.id, Date.now());
    await audited({ db, caller, panel }, "list.deleted", String(list.id), { name: list.name });
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
    const list = await requireList(db, panel.id, path.list);
    const declared = Number(request.headers.get("content-length") ?? "NaN");
    if (declared > MAX_PANEL_UPLOAD_BYTES) throw new ApiError(413, `file: larger than ${MAX_PANEL_UPLOAD_BYTES} bytes`, [{ field: "file", message: "too large" }]);
    if (!request.body) throw invalidField("file", "is required: send the CSV file as the request body");
    const key = `panel-uploads/${panel.id}/${newId("upl")}.csv`;
    const upload = new R2Upload(env.FILES, key, { httpMetadata: { contentType: "text/csv" } });
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (upload.size + value.length > MAX_PANEL_UPLOAD_BYTES) {
        await reader.cancel();
        await upload.abort();
        throw new ApiError(413, `file: larger than ${MAX_PANEL_UPLOAD_BYTES} bytes`, [{ field: "file", message: "too large" }]);
      }
      await upload.write(value);
    }
    if (upload.size === 0) {
      await upload.abort();
      throw invalidField("file", "is empty");
    }
    await upload.close();
    const jobId = await startImport(env, db, { panelId: panel.id, sources: [{ key, name: query.name }], listId: list.id, origin: new URL(request.url).origin });
    return { jobid: jobId };
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
    const list = await requireList(db, panel.id, path.list);
    const found = await listMembers(db, panel.id, list.id, query.after ?? 0, query.limit + 1);
    const page = found.slice(0, query.limit);
    return {
      list: listView(list),
      primary_key: panel.primaryKey,
      members: page.map((m) => ({ key: m.key, attributes: m.attributes, added_at: isoTime(m.addedAt) })),
      next_cursor: found.length > query.limit ? String(page.at(-1)!.contactId) : null,
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
    const list = await requireList(db, panel.id, path.list);
    const now = Date.now();
    const removed = await emptyList(db, panel.id, list.id, now);
    await rebuildSegments(db, panel.id, now);
    await audited({ db, caller, panel }, "list.emptied", String(list.id), { name: list.name, removed });
    return { removed };
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
    const list = await requireList(db, panel.id, path.list);
    const jobId = await startImport(env, db, { panelId: panel.id, sources: [{ url: body.url }], listId: list.id, origin: new URL(request.url).origin });
    return { jobid: jobId };
  },
});

export const listRoutes = [panelLists, createList, changeList, removeList, uploadToList, panelListMembers, emptyPanelList, importFromUrl];
