import { jobStartedAnswer } from "../domain/answers/contacts";
import { countedSegmentAnswer, segmentContactsAnswer, segmentCountAnswer, segmentHistoryAnswer, segmentListAnswer, segmentPageAnswer } from "../domain/answers/segments";
import type { ShardDb } from "../store/shards";
import { segmentCountBody, segmentDefinitionSchema, segmentExportQuery } from "../domain/segments";
import { conflict, fromProblems, notFound, orNotFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { countSegment, saveSegment, type SegmentOutcome } from "../services/segments/definitions";
import { startSegmentExport } from "../services/segments/export";
import { forgetPanelSegments } from "../services/segments/panel-segments";
import { deleteSegment, getSegment, listSegments, memberCount, segmentHistory, segmentMembersPage, segmentUsers, type Segment } from "../store/segments";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { audited } from "./audit";

// Saved segments (CONTRACT 9): definitions checked against the panel, counted on the spot;
// membership is kept current behind them (services/segments).

function segmentView(segment: Segment) {
  return {
    id: segment.id,
    name: segment.name,
    match: segment.match,
    // Membership is being built (after a create, an edit or a bulk upload): contacts and journeys lag the count.
    building: segment.buildCursor !== null,
    created_at: isoTime(segment.createdAt),
    updated_at: isoTime(segment.updatedAt),
  };
}

function requireSegment(db: ShardDb, panelId: string, id: string): Promise<Segment> {
  return orNotFound(getSegment(db, panelId, id), `No segment with id "${id}" in this panel`);
}

function savedOrThrow(outcome: SegmentOutcome, id?: string) {
  if ("missing" in outcome) throw notFound(`No segment with id "${id}" in this panel`);
  if (!outcome.ok) throw fromProblems(outcome.problems);
  return { ...segmentView(outcome.segment), count: outcome.count };
}

const createSegment = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments",
  role: "marketer",
  response: countedSegmentAnswer,
  summary: "Save a segment (CONTRACT 9); answers with its count, and keeps its membership current from then on",
  status: 201,
  body: segmentDefinitionSchema,
  async handle({ env, exec, caller, body, panel, db }) {
    const saved = savedOrThrow(await saveSegment(env, panel.id, body, { now: Date.now(), defer: (work) => exec.waitUntil(work) }));
    await audited({ db, caller, panel }, "segment.created", saved.id, { name: saved.name });
    return saved;
  },
});

const countPreview = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments/count",
  role: "viewer",
  response: segmentCountAnswer,
  summary: "Count the contacts an unsaved segment definition matches (a preview while editing)",
  body: segmentCountBody,
  async handle({ env, body, panel, db }) {
    const counted = await countSegment(db, panel.id, body.match);
    if (!counted.ok) throw fromProblems(counted.problems);
    return { count: counted.count };
  },
});

const listPanelSegments = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments",
  role: "viewer",
  response: segmentListAnswer,
  summary: "The panel's saved segments with their member counts",
  async handle({ env, panel, db }) {
    const segments = await listSegments(db, panel.id);
    const members = await Promise.all(segments.map((s) => memberCount(db, s.id)));
    return { segments: segments.map((s, i) => ({ ...segmentView(s), members: members[i] })) };
  },
});

const readSegment = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments/:segment",
  role: "viewer",
  response: segmentPageAnswer,
  summary: "One saved segment with its count now",
  async handle({ env, path, panel, db }) {
    const segment = await requireSegment(db, panel.id, path.segment);
    const counted = await countSegment(db, panel.id, segment.match);
    return { ...segmentView(segment), count: counted.ok ? counted.count : null, members: await memberCount(db, segment.id) };
  },
});

const replaceSegment = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/segments/:segment",
  role: "marketer",
  response: countedSegmentAnswer,
  summary: "Replace a segment's definition; its membership is built again",
  body: segmentDefinitionSchema,
  async handle({ env, exec, caller, path, body, panel, db }) {
    await requireSegment(db, panel.id, path.segment);
    const saved = savedOrThrow(await saveSegment(env, panel.id, body, { id: path.segment, now: Date.now(), defer: (work) => exec.waitUntil(work) }), path.segment);
    await audited({ db, caller, panel }, "segment.edited", saved.id, { name: saved.name });
    return saved;
  },
});

const removeSegment = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/segments/:segment",
  role: "marketer",
  status: 204,
  raw: { contentType: null, description: "Deleted" },
  summary: "Delete a segment (409 while a running or paused journey or a scheduled campaign uses it)",
  async handle({ env, caller, path, panel, db }) {
    const segment = await requireSegment(db, panel.id, path.segment);
    const users = await segmentUsers(db, panel.id, segment.id);
    if (users.journeys.length || users.campaigns.length) {
      const named = [...users.journeys.map((id) => `journey ${id}`), ...users.campaigns.map((id) => `campaign ${id}`)].join(", ");
      throw conflict(`The segment is in use (${named}); stop the journeys and let the campaigns publish first`);
    }
    await deleteSegment(db, panel.id, segment.id);
    forgetPanelSegments(panel.id);
    await audited({ db, caller, panel }, "segment.deleted", segment.id, { name: segment.name });
    return new Response(null, { status: 204 });
  },
});

const contactsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    // A contact id: up to 16 digits, as shard ranges reach (decision 0030).
    cursor: z.string().regex(/^\d{1,16}$/, { error: "must be the next_cursor of the previous page" }).optional(),
  })
  .strict();

const segmentContacts = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments/:segment/contacts",
  role: "viewer",
  response: segmentContactsAnswer,
  summary: "The segment's members (attributes), by contact; next_cursor pages on",
  query: contactsQuery,
  async handle({ env, path, query, panel, db }) {
    const segment = await requireSegment(db, panel.id, path.segment);
    const page = await segmentMembersPage(db, panel.id, segment.id, Number(query.cursor ?? 0), query.limit + 1);
    const shown = page.slice(0, query.limit);
    return { contacts: shown.map((c) => c.attributes), next_cursor: page.length > query.limit ? String(shown.at(-1)!.id) : null };
  },
});

const historyQuery = z.object({ days: z.coerce.number().int().min(1).max(366).default(30) }).strict();

const segmentSizeHistory = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments/:segment/history",
  role: "viewer",
  response: segmentHistoryAnswer,
  summary: "Entries and exits per day (UTC) over the last `days` days, and the members now",
  query: historyQuery,
  async handle({ env, path, query, panel, db }) {
    const segment = await requireSegment(db, panel.id, path.segment);
    const since = Date.now() - query.days * 86_400_000;
    return { members: await memberCount(db, segment.id), days: await segmentHistory(db, panel.id, segment.id, since) };
  },
});

const exportSegment = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments/:segment/export",
  role: "marketer",
  response: jobStartedAnswer,
  summary: "Export the segment's members as CSV (the primary key, then `attributes`, comma-separated): a background job; GET /jobs/{jobid} shows its progress and, once completed, the download link",
  status: 202,
  query: segmentExportQuery,
  async handle({ env, path, query, panel, db }) {
    const segment = await requireSegment(db, panel.id, path.segment);
    const started = await startSegmentExport(env, db, panel, segment, query.attributes, Date.now());
    if (!started.ok) throw fromProblems(started.problems);
    return { jobid: started.job.id };
  },
});

export const segmentRoutes = [createSegment, countPreview, listPanelSegments, readSegment, replaceSegment, removeSegment, segmentContacts, segmentSizeHistory, exportSegment];
