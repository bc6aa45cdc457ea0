import { panelOwningShards, shownContactPage } from "../services/access/partitions";
import { jobStartedAnswer } from "../domain/answers/contacts";
import { NEEDS } from "../domain/permissions";
import { countedSegmentAnswer, segmentContactsAnswer, segmentCountAnswer, segmentHistoryAnswer, segmentListAnswer, segmentPageAnswer } from "../domain/answers/segments";
import { segmentCountBody, segmentDefinitionSchema, segmentExportQuery } from "../domain/segments";
import { notFound, unwrap } from "../lib/http/errors";
import { SEGMENT_HISTORY_MAX_DAYS } from "../lib/config";
import { z } from "../lib/z";
import { countSegment, saveSegment, type SegmentOutcome } from "../services/segments/definitions";
import { exportSavedSegment } from "../services/segments/export";
import { segmentMembers, segmentSizeHistory as sizeHistory, segmentsWithMembers, segmentWithCount } from "../services/segments/read";
import { removeSegment as removeSavedSegment } from "../services/segments/remove";
import type { Segment } from "../store/segments";
import type { CountFigure } from "../services/overview/counts";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { auditorOf } from "./audit";

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

/** A stored member count as the answers show it. */
function membersView(members: CountFigure) {
  return { members: members.n, members_counted_at: isoTime(members.countedAt), members_at_least: members.atLeast };
}

function noSuchSegment(id: string) {
  return notFound(`No segment with id "${id}" in this panel`);
}

function savedView(outcome: SegmentOutcome) {
  const { segment, count } = unwrap(outcome);
  return { ...segmentView(segment), count: count.n, count_estimated: count.estimated };
}

const createSegment = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments",
  role: NEEDS.audience,
  response: countedSegmentAnswer,
  summary: "Save a segment (CONTRACT 9); answers with its count, and keeps its membership current from then on",
  status: 201,
  body: segmentDefinitionSchema,
  async handle({ env, exec, caller, body, panel, db }) {
    return savedView(await saveSegment(env, panel.id, body, { now: Date.now(), defer: (work) => exec.waitUntil(work), by: auditorOf(caller) }));
  },
});

const countPreview = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments/count",
  role: NEEDS.read,
  response: segmentCountAnswer,
  summary: "Count the contacts an unsaved segment definition matches (a preview while editing)",
  body: segmentCountBody,
  async handle({ env, body, panel, db }) {
    const count = unwrap(await countSegment(panelOwningShards(env, panel, db), panel.id, body.match));
    return { count: count.n, count_estimated: count.estimated };
  },
});

const listPanelSegments = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments",
  role: NEEDS.read,
  response: segmentListAnswer,
  summary: "The panel's saved segments with their member counts, as last counted (every few minutes) and when",
  async handle({ env, panel, db }) {
    return { segments: (await segmentsWithMembers(panelOwningShards(env, panel, db), panel.id)).map(({ segment, members }) => ({ ...segmentView(segment), ...membersView(members) })) };
  },
});

const readSegment = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments/:segment",
  role: NEEDS.read,
  response: segmentPageAnswer,
  summary: "One saved segment with its count now",
  async handle({ env, path, panel, db }) {
    const found = await segmentWithCount(panelOwningShards(env, panel, db), panel.id, path.segment);
    if (!found) throw noSuchSegment(path.segment);
    return { ...segmentView(found.segment), count: found.count.n, count_estimated: found.count.estimated, ...membersView(found.members) };
  },
});

const replaceSegment = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/segments/:segment",
  role: NEEDS.audience,
  response: countedSegmentAnswer,
  summary: "Replace a segment's definition; its membership is built again",
  body: segmentDefinitionSchema,
  async handle({ env, exec, caller, path, body, panel, db }) {
    return savedView(await saveSegment(env, panel.id, body, { id: path.segment, now: Date.now(), defer: (work) => exec.waitUntil(work), by: auditorOf(caller) }));
  },
});

const removeSegment = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/segments/:segment",
  role: NEEDS.audience,
  status: 204,
  raw: { contentType: null, description: "Deleted" },
  summary: "Delete a segment (409 while a running or paused journey or a draft, scheduled, sending or paused campaign uses it)",
  async handle({ env, caller, path, panel, db }) {
    unwrap(await removeSavedSegment(panelOwningShards(env, panel, db), panel.id, path.segment, auditorOf(caller)));
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
  role: NEEDS.read,
  response: segmentContactsAnswer,
  summary: "The segment's members (attributes), by contact; next_cursor pages on",
  query: contactsQuery,
  async handle({ env, path, query, panel, db }) {
    const page = await segmentMembers(panelOwningShards(env, panel, db), panel.id, path.segment, Number(query.cursor ?? 0), query.limit + 1);
    if (!page) throw noSuchSegment(path.segment);
    const { shown, nextAfter } = shownContactPage(page, query.limit);
    return { contacts: shown.map((c) => c.attributes), next_cursor: nextAfter && String(nextAfter.id) };
  },
});

const historyQuery = z.object({ days: z.coerce.number().int().min(1).max(SEGMENT_HISTORY_MAX_DAYS).default(30) }).strict();

const segmentSizeHistory = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/segments/:segment/history",
  role: NEEDS.read,
  response: segmentHistoryAnswer,
  summary: "Entries and exits per day (UTC) over the last `days` days, and the members as last counted and when",
  query: historyQuery,
  async handle({ env, path, query, panel, db }) {
    const history = await sizeHistory(panelOwningShards(env, panel, db), panel.id, path.segment, Date.now() - query.days * 86_400_000);
    if (!history) throw noSuchSegment(path.segment);
    return { ...membersView(history.members), days: history.days };
  },
});

const exportSegment = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/segments/:segment/export",
  role: NEEDS.audience,
  response: jobStartedAnswer,
  summary: "Export the segment's members as CSV (the primary key, then `attributes`, comma-separated): a background job; GET /jobs/{jobid} shows its progress and, once completed, the download link",
  status: 202,
  query: segmentExportQuery,
  async handle({ env, path, query, panel, db }) {
    const job = unwrap(await exportSavedSegment(env, db, panel, path.segment, query.attributes, Date.now()));
    return { jobid: job.id };
  },
});

export const segmentRoutes = [createSegment, countPreview, listPanelSegments, readSegment, replaceSegment, removeSegment, segmentContacts, segmentSizeHistory, exportSegment];
