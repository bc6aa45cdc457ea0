import { deleteSegment, getSegment, segmentUsers } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { forgetPanelSegments } from "./panel-segments";

export type RemoveSegmentOutcome = { ok: true } | { ok: false; kind: "missing" } | { ok: false; kind: "in_use"; journeys: string[]; campaigns: string[] };

/** Deletes a saved segment, unless a running or paused journey or a scheduled campaign uses it. */
export async function removeSegment(db: ShardDb, panelId: string, segmentId: string, by: Auditor): Promise<RemoveSegmentOutcome> {
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return { ok: false, kind: "missing" };
  const users = await segmentUsers(db, panelId, segment.id);
  if (users.journeys.length || users.campaigns.length) return { ok: false, kind: "in_use", ...users };
  await deleteSegment(db, panelId, segment.id);
  forgetPanelSegments(panelId);
  await recordAudit(db, panelId, by, "segment.deleted", segment.id, { name: segment.name });
  return { ok: true };
}
