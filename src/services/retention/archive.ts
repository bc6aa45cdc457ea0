import type { CronTask } from "../../lib/tasks";
import { gunzipText, gzipText } from "../../lib/gzip";
import {
  deletePartRows,
  eventRowsOfDay,
  finishArchivePart,
  markPartVerified,
  oldestEventDay,
  panelsWithEventsBefore,
  partRows,
  recordArchivePart,
  unfinishedArchiveParts,
  type ArchivePart,
  type PartName,
} from "../../store/event-archive";
import type { EventRow } from "../../store/events";
import type { Shard, ShardDb } from "../../store/shards";
import { panelTask } from "../access/shards";

/**
 * Event retention: each panel keeps its events in its shard for `event_retention_days`
 * (default 90); older ones move to R2 as gzipped NDJSON, one object per part of a panel's UTC
 * day: `events/{panel}/{yyyy}/{mm}/{dd}/part-{N}-s{shard}.ndjson.gz`, N the part's first event
 * id, the shard the one whose rows it took (archiveKey), one event row per line as stored. Each part is recorded, written, read back and compared, and
 * only then are its rows deleted (in chunks); a crash at any point leaves a state the next run
 * takes up (store/event-archive.ts), so nothing is lost or doubled.
 *
 * Only whole days older than the window move, so a panel has work once a day; the sweep runs
 * with the per-minute cron and does a bounded amount each time.
 */
export const DEFAULT_RETENTION_DAYS = 90;
/** Events per part (object): a few hundred kB of NDJSON before compression. */
export const PART_EVENTS = 2000;
/** Rows deleted per statement once a part is verified. */
export const DELETE_CHUNK = 500;
/** Parts written per cron run, by the shard's resume and by each batch of its panels. */
export const PARTS_PER_RUN = 10;
const DAY_MS = 86_400_000;

/**
 * A part's object. The shard is in the key: a partition split (decision 0047) leaves a moved
 * event on its source and its target until cleaning, and each could archive it as the first event
 * of a part of the same day (the source no longer does: the sweep leaves its fenced copies), so
 * under the panel, day and first id alone the later write replaced the other's rows. A part
 * recorded before the shard was (null) keeps its key without it.
 */
export function archiveKey(panelId: string, { day, part, shard }: PartName): string {
  const date = new Date(day).toISOString();
  return `events/${panelId}/${date.slice(0, 4)}/${date.slice(5, 7)}/${date.slice(8, 10)}/part-${part}${shard === null ? "" : `-s${shard}`}.ndjson.gz`;
}

/** Midnight (UTC) before which a panel's events leave its shard. */
export function retentionCutoff(now: number, days: number): number {
  return Math.floor((now - days * DAY_MS) / DAY_MS) * DAY_MS;
}

/** Writes a part's object: its rows as gzipped NDJSON, one stored row per line. */
export async function putPartObject(bucket: R2Bucket, key: string, rows: readonly EventRow[], lastId: number): Promise<void> {
  const body = await gzipText(rows.map((row) => JSON.stringify(row)).join("\n") + "\n");
  await bucket.put(key, body, { httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" }, customMetadata: { events: String(rows.length), last_id: String(lastId) } });
}

/** A part's object as its rows. */
export async function readPartObject(object: R2ObjectBody): Promise<EventRow[]> {
  return (await gunzipText(await object.arrayBuffer()))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as EventRow);
}

/**
 * Writes the part's object from its rows (read again when resuming), reads it back and compares;
 * then the rows may go. Rows are deleted only after verification, so a part not yet verified
 * lacks only the rows of a contact erased meanwhile: when such rows went after they were read,
 * the part is not verified (markPartVerified) and is written once more from the rows left.
 */
async function writeAndVerify(bucket: R2Bucket, db: ShardDb, part: ArchivePart, read?: readonly EventRow[]): Promise<boolean> {
  const rows = read ?? (await partRows(db, part));
  const key = archiveKey(part.panelId, part);
  await putPartObject(bucket, key, rows, part.lastId);
  const stored = await bucket.get(key);
  if (!stored) return false;
  const lines = await readPartObject(stored);
  if (lines.length !== rows.length || lines.some((line, i) => line.id !== rows[i]!.id)) return false;
  if (await markPartVerified(db, part, rows)) return true;
  // An erasure took some of the rows read: written again from those left (once here; the resume sweep after that).
  return read !== undefined && writeAndVerify(bucket, db, part);
}

/** The rows a part holds: in the shard until verified, then in its (verified) object. */
async function rowsOfPart(bucket: R2Bucket, db: ShardDb, part: ArchivePart): Promise<EventRow[]> {
  if (part.state === "written") return partRows(db, part);
  const stored = await bucket.get(archiveKey(part.panelId, part));
  return stored ? readPartObject(stored) : [];
}

/**
 * What must follow once a part's rows left the shard: the segment re-check of their contacts
 * (segments count retained events only). Passed in, as services/segments cannot be imported
 * here (segments -> contacts -> retention); services/segments/archived-events.ts passes it.
 */
export type AfterArchived = (env: Env, db: ShardDb, panelId: string, rows: readonly EventRow[], now: number) => Promise<void>;

/** AfterArchived with the deployment given: what a sweep calls. */
type AfterPart = (db: ShardDb, panelId: string, rows: readonly EventRow[], now: number) => Promise<void>;

/**
 * Takes a part from whatever state it is in to done. `after` runs once its rows are gone and
 * before the part is done: a crash in between repeats it, which changes nothing the second time.
 */
async function completePart(bucket: R2Bucket, db: ShardDb, part: ArchivePart, now: number, after: AfterPart, read?: readonly EventRow[]): Promise<void> {
  const rows = read ?? (await rowsOfPart(bucket, db, part));
  if (part.state === "written" && !(await writeAndVerify(bucket, db, part, rows))) {
    throw new Error(`archive part ${archiveKey(part.panelId, part)} did not read back as written; its rows are kept`);
  }
  while ((await deletePartRows(db, part, DELETE_CHUNK)) === DELETE_CHUNK);
  await after(db, part.panelId, rows, now);
  await finishArchivePart(db, part);
}

/** Moves up to `budget` parts of one panel's days on shard `shard` (`db`) before its cutoff; returns how many it moved. */
export async function archivePanel(bucket: R2Bucket, { db, index: shard }: Shard, panel: { id: string; eventRetentionDays: number }, now: number, budget: number, after: AfterPart): Promise<number> {
  const cutoff = retentionCutoff(now, panel.eventRetentionDays);
  let moved = 0;
  while (moved < budget) {
    const day = await oldestEventDay(db, panel.id, cutoff);
    if (day === null) break;
    const rows = await eventRowsOfDay(db, panel.id, day, cutoff, PART_EVENTS);
    const ids = rows.map((r) => r.id);
    const part: ArchivePart = { panelId: panel.id, ids, day, part: ids[0]!, lastId: ids.at(-1)!, events: ids.length, state: "written", shard };
    await recordArchivePart(db, part, now);
    await completePart(bucket, db, part, now, after, rows);
    moved++;
  }
  return moved;
}

/** Finishes the parts of a shard a crash left half done; returns how many. */
export async function resumeArchiveParts(bucket: R2Bucket, db: ShardDb, limit: number, now: number, after: AfterPart): Promise<number> {
  const parts = await unfinishedArchiveParts(db, limit);
  for (const part of parts) await completePart(bucket, db, part, now, after);
  return parts.length;
}

/**
 * The cron sweep: on every shard, finishes what a crash left (the shard's message), then moves
 * old days of its panels with any (a message per batch of them, each with its own budget of
 * parts); a panel with nothing past its window gets no message.
 */
export function archiveTask(afterArchived: AfterArchived): CronTask {
  const withEnv = (env: Env): AfterPart => (db, panelId, rows, now) => afterArchived(env, db, panelId, rows, now);
  return panelTask("events.archive", {
    async shard(env, db, _index, now) {
      await resumeArchiveParts(env.FILES, db, PARTS_PER_RUN, now, withEnv(env));
    },
    // One query finds the panels with events before their cutoff (an idle one costs a probe or a few).
    due: (_env, db, _index, panels, now) => panelsWithEventsBefore(db, panels.map((p) => ({ id: p.id, before: retentionCutoff(now, p.eventRetentionDays) }))),
    // The batch holds panels `due` found with work; one whose work went meanwhile costs a read.
    async panels(env, db, index, panels, now) {
      let budget = PARTS_PER_RUN;
      const after = withEnv(env);
      for (const panel of panels) {
        if (budget <= 0) break;
        budget -= await archivePanel(env.FILES, { db, index }, panel, now, budget, after);
      }
    },
  });
}
