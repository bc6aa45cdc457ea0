import { usersInWords } from "../../domain/lists";
import { refused, succeeded, type Result } from "../../lib/problems";
import { deleteSegment, getSegment, segmentUsers } from "../../store/segments";
import type { OwningShards } from "../access/partitions";
import { recordAudit, type Auditor } from "../audit/record";
import { forgetPanelSegments } from "./panel-segments";
import { noSuchSegment } from "./definitions";

/**
 * Deletes a saved segment, unless a running or paused journey or a campaign not yet done (draft,
 * scheduled, sending, paused) uses it (refused: conflict, naming them); refused (not_found) when
 * there is no such segment. `shards`: the panel's (panelOwningShards, the home first): the
 * mirrors' copies go with it, each with its members there (decision 0038). Each shard keeps to
 * the buckets its map gives it: between a split's switch and its cleaning the source's fenced
 * copies of moved members are cleaning's to delete (decision 0047); before, the delete met the
 * fence and answered 503 "nothing was changed" on every try until cleaning, when the source was
 * the home, and after the home's row had gone when it was a mirror.
 */
export async function removeSegment(shards: OwningShards, panelId: string, segmentId: string, by: Auditor): Promise<Result<true>> {
  const [{ db, buckets }, ...mirrors] = shards;
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return noSuchSegment(segmentId);
  const users = await segmentUsers(db, panelId, segment.id);
  // Named as a list in use is (services/lists/remove.ts), so both deletes read alike.
  if (users.length) return refused("conflict", [], `The segment "${segment.name}" is used by ${usersInWords(users)}; stop the journeys, and send, cancel or delete the campaigns first`);
  await deleteSegment(db, panelId, segment.id, buckets);
  forgetPanelSegments(panelId);
  // Recorded once the home's row is gone, before the mirrors: a mirror that fails leaves it for the resync, not the audit without it.
  await recordAudit(db, panelId, by, "segment.deleted", segment.id, { name: segment.name });
  await Promise.all(mirrors.map((mirror) => deleteSegment(mirror.db, panelId, segment.id, mirror.buckets)));
  return succeeded(true);
}
