import { mergedPage, type OwningShards } from "../access/partitions";
import type { BucketRanges } from "../../domain/partitions";
import { archivedPartsOf, type PartName } from "../../store/event-archive";
import { uniqueidsOfContact } from "../../store/erasure";
import { eventFromRow, listEventsOf, type EventBatchState, type EventCursor, type EventOwner, type StoredEvent } from "../../store/events";
import type { ShardDb } from "../../store/shards";
import { archiveKey, readPartObject } from "./archive";

const DAY_MS = 86_400_000;
/** Parts read per page at most; a contact with more archived parts than this pages on. */
const PARTS_PER_PAGE = 20;

export type HistoryEvent = StoredEvent & { batch: EventBatchState | null };

const before = (e: { occurredAt: number; id: number }, cursor?: EventCursor) =>
  !cursor || e.occurredAt < cursor.occurredAt || (e.occurredAt === cursor.occurredAt && e.id < cursor.id);
const newestFirst = (a: HistoryEvent, b: HistoryEvent) => b.occurredAt - a.occurredAt || b.id - a.id;

async function partEvents(bucket: R2Bucket, panelId: string, part: PartName, owner: EventOwner): Promise<HistoryEvent[]> {
  const key = archiveKey(panelId, part);
  const object = await bucket.get(key);
  if (!object) throw new Error(`archive part ${key} is missing from R2`);
  return (await readPartObject(object))
    .filter((row) =>
      "contactId" in owner ? row.contact_id === owner.contactId : row.uniqueid === owner.uniqueid && (!owner.unjoined || (row.identity === null && row.contact_id === null)),
    )
    .map((row) => ({ ...eventFromRow(row), batch: null }));
}

/**
 * A page of a contact's (or uniqueid's) events, newest first, after `cursor`: the rows still in
 * the shard and, past them, the days moved to R2 (event retention), read transparently. The
 * archive is read only when the page reaches back to an archived day.
 */
export async function eventHistoryPage(bucket: R2Bucket, db: ShardDb, panelId: string, owner: EventOwner, limit: number, cursor?: EventCursor, buckets: BucketRanges | null = null): Promise<HistoryEvent[]> {
  const hot = await listEventsOf(db, panelId, owner, limit, cursor, buckets);
  const key = "contactId" in owner ? `c:${owner.contactId}` : `u:${owner.uniqueid}`;
  const fromDay = cursor ? Math.floor(cursor.occurredAt / DAY_MS) * DAY_MS : null;
  const parts = await archivedPartsOf(db, panelId, key, fromDay, PARTS_PER_PAGE);
  if (parts.length === 0) return hot;
  // A full page of rows newer than every archived day needs nothing from the archive.
  const oldestHot = hot.at(-1);
  if (hot.length >= limit && oldestHot && oldestHot.occurredAt >= parts[0]!.day + DAY_MS) return hot;
  const seen = new Set(hot.map((e) => e.id));
  const archived: HistoryEvent[] = [];
  for (const [i, part] of parts.entries()) {
    for (const event of await partEvents(bucket, panelId, part, owner)) {
      if (!seen.has(event.id) && before(event, cursor)) {
        seen.add(event.id);
        archived.push(event);
      }
    }
    const next = parts[i + 1];
    // Enough once the next part's day is wholly older than the page's last event.
    if (archived.length >= limit && next && next.day !== part.day) {
      const kth = [...archived].sort(newestFirst)[limit - 1]!;
      if (kth.occurredAt >= next.day + DAY_MS) break;
    }
  }
  return [...hot, ...archived].sort(newestFirst).slice(0, limit);
}

/**
 * A uniqueid's page over the panel's shards (`shards`, panelOwningShards): its anonymous events
 * are on its own partition, those recorded with an identity since on that contact's (decision
 * 0038), so each shard's page past the cursor is read and merged, each shard's rows kept to the
 * buckets its map gives it (until a split's cleaning its source's copies of the moved events
 * were listed beside the target's, decision 0047). A panel without a map reads its home.
 */
export function uniqueidHistoryPage(bucket: R2Bucket, shards: OwningShards, panelId: string, uniqueid: string, limit: number, cursor?: EventCursor): Promise<HistoryEvent[]> {
  return mergedPage(shards, (shard) => eventHistoryPage(bucket, shard.db, panelId, { uniqueid }, limit, cursor, shard.buckets), newestFirst, limit);
}

/**
 * A page of a contact's events on its shard `db`, newest first, after `cursor`. On a panel of one
 * shard (`uniqueidDb` absent: no other read) its anonymous history is among them, joined when its
 * uniqueid was linked. On a panel spread over shards, a uniqueid linked to it (anon_profiles, on
 * the contact's shard) whose own partition is on another shard (`uniqueidDb`, contactDb) kept
 * its anonymous events there unjoined (decision 0038 step 3): each such uniqueid's page past the
 * cursor is read there too and merged. Event ids are unique across shards (decision 0030), so
 * the cursor (time, id) pages on through all of them.
 */
export async function contactHistoryPage(
  bucket: R2Bucket,
  db: ShardDb,
  panelId: string,
  contactId: number,
  limit: number,
  cursor?: EventCursor,
  uniqueidDb?: (uniqueid: string) => ShardDb,
): Promise<HistoryEvent[]> {
  const own = { db, owner: { contactId } as EventOwner };
  const elsewhere = uniqueidDb
    ? (await uniqueidsOfContact(db, panelId, contactId)).flatMap((uniqueid) => {
        const there = uniqueidDb(uniqueid);
        return there === db ? [] : [{ db: there, owner: { uniqueid, unjoined: true } as EventOwner }];
      })
    : [];
  return mergedPage([own, ...elsewhere], (source) => eventHistoryPage(bucket, source.db, panelId, source.owner, limit, cursor), newestFirst, limit);
}
