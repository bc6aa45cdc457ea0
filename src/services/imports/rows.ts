import { findPanelHome, panelHome } from "../access/shards";
import { mirrorAttributes, mirrorShards, splitByShard } from "../access/partitions";
import type { KeyedSchema } from "../../domain/contacts";
import { bomLength, cutRecords, formatCsvRecord, isBlankRecord, notCsvReason, parseRecords, type CsvRecord } from "../../domain/csv";
import { errorReportRow, newAttributesOf, planColumns, prepareRow, sameColumns, type ColumnPlan } from "../../domain/imports";
import { contactBucket } from "../../domain/partitions";
import { defineAttribute } from "../attributes/define";
import { attributesToMirror, loadAttributeSchema } from "../../store/attributes";
import {
  commitImportPart,
  commitImportStatements,
  importChunkStatements,
  importPartStatements,
  type ImportJob,
  type ImportSource,
  type ImportedRow,
  type PartStatements,
  type RefusedRowLine,
} from "../../store/imports";
import type { ShardDb } from "../../store/shards";
import type { TransferLimits } from "../../lib/transfer-limits";
import { ImportFailure } from "./errors";
import { concatBytes } from "../../lib/bytes";

/**
 * How much one chunk (one D1 batch, one checkpoint) and one queue message do. A chunk of 2,000
 * rows is about five statements (its rows in JSON arrays of about 100 K characters, three for
 * bench:import's rows; its report lines in arrays below a bound value's size; the claim, the
 * list membership, the checkpoint) and a few ms of CPU; a panel whose partitions span shards
 * adds a batch of about four per other shard its rows fall on (commitParts). A step stops
 * before its statements, every shard's, would pass `stepStatements`, under D1's 1,000 queries
 * of one invocation whatever the rows (a test counts it), or after `stepChunks`; each message
 * more costs a queue hop, a lease and a window of the file read again (a tenth of a
 * 1,000,000-row import at ten chunks a message, bench:import). The wall-clock budget hands
 * over long before the 15-minute consumer limit whatever D1's latency.
 */
export interface ImportTuning {
  chunkRows: number;
  chunkBytes: number;
  /** Bytes read from R2 at a time. */
  readBytes: number;
  /** A record longer than this fails the job (an unclosed quote swallows the rest of a file). */
  maxRecordBytes: number;
  stepChunks: number;
  /** D1 statements the chunks of one step may send; the lease, the job's reads and the heartbeat take a few more. */
  stepStatements: number;
  stepMs: number;
  /** How long a step's hold on the job lasts without renewal, and how often the step renews it. */
  leaseMs: number;
  heartbeatMs: number;
  /** Limits of the fetch phase's downloads; absent: IMPORT_DOWNLOAD_LIMITS with the environment's rate settings. */
  download?: TransferLimits;
}

export const DEFAULT_TUNING: ImportTuning = {
  chunkRows: 2000,
  chunkBytes: 512 * 1024,
  readBytes: 1024 * 1024,
  maxRecordBytes: 1024 * 1024,
  stepChunks: 200,
  stepStatements: 900,
  stepMs: 20_000,
  leaseMs: 45_000,
  heartbeatMs: 15_000,
};

/**
 * Refused rows kept for the error report; past this they are still counted in `failed`. A
 * file whose every row is wrong shows its fault in the first rows, and a cap keeps D1 and the
 * report bounded.
 */
export const MAX_REPORTED_ERRORS = 100_000;

/**
 * A report line longer than this does not repeat the row's cells (a quote left open before
 * the end of the file makes one huge field); D1 caps a value at about 1 MB.
 */
export const MAX_REPORT_LINE_CHARS = 32 * 1024;

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

function decodeRecords(bytes: Uint8Array): CsvRecord[] {
  const records: CsvRecord[] = [];
  parseRecords(decoder.decode(bytes), (record) => records.push(record));
  return records;
}

async function readRange(bucket: R2Bucket, key: string, offset: number, length: number): Promise<Uint8Array> {
  if (length <= 0) return new Uint8Array(0);
  const object = await bucket.get(key, { range: { offset, length } });
  if (!object) throw new Error(`import source ${key} is missing from R2`);
  return new Uint8Array(await object.arrayBuffer());
}

function describeSource(job: ImportJob, source: ImportSource): string {
  return job.sources.length > 1 ? `The file "${source.name}"` : "The file";
}

async function keyedSchema(env: Env, panelId: string): Promise<KeyedSchema> {
  const home = await findPanelHome(env, panelId);
  if (!home) throw new ImportFailure("The panel no longer exists");
  return { primaryKey: home.panel.primaryKey, attributes: await loadAttributeSchema(home.db, panelId) };
}

/**
 * The new attributes the job's mapping names, created once the header row is found valid with
 * them (so a file refused at its header leaves the schema as it was). Creating is idempotent,
 * so a step run twice creates nothing twice; an attribute made meanwhile with another type
 * fails the job. A panel whose partitions span shards gets them on every mirror too (decision
 * 0041): the home's attributes, all of them, one idempotent statement per mirror, so a step run
 * again after the home's write also heals a mirror left behind.
 */
async function createMappedAttributes(env: Env, job: ImportJob): Promise<void> {
  const { panel, db } = await panelHome(env, job.panelId);
  for (const [name, type] of newAttributesOf(job.mapping ?? {})) {
    const created = await defineAttribute(db, job.panelId, [], name, type);
    if (!created.ok) throw new ImportFailure(`The mapping's new attribute ${name} could not be created: ${created.problem.message ?? created.problem.fields[0]?.message}`);
  }
  const mirrors = mirrorShards(env, panel);
  if (mirrors.length) await mirrorAttributes(mirrors.map((m) => m.db), job.panelId, await attributesToMirror(db, job.panelId));
}

/**
 * Reads and checks every source's header row before any row is written (CONTRACT 2.3): not
 * binary, not empty, a valid header, and one header for all files of the job. Returns the plan
 * and the sources with where their data starts.
 */
export async function checkHeaders(env: Env, job: ImportJob, tuning: ImportTuning): Promise<{ plan: ColumnPlan; sources: ImportSource[] }> {
  const stored = await keyedSchema(env, job.panelId);
  // The columns are planned with the mapping's new attributes as if they were there already.
  const created = newAttributesOf(job.mapping ?? {}).filter(([name]) => !stored.attributes.has(name));
  const schema: KeyedSchema = { ...stored, attributes: new Map([...stored.attributes, ...created]) };
  let plan: ColumnPlan | undefined;
  const sources: ImportSource[] = [];
  for (const source of job.sources) {
    const size = source.size ?? 0;
    const what = describeSource(job, source);
    const head = await readRange(env.FILES, source.key, 0, Math.min(size, tuning.maxRecordBytes));
    const notCsv = notCsvReason(head);
    if (notCsv) throw new ImportFailure(`${what} is not a CSV file: ${notCsv}`);
    let pos = bomLength(head);
    let row = 0;
    let header: string[] | undefined;
    while (!header) {
      const cut = cutRecords(head, pos, 1, Infinity, head.length === size);
      if (cut.records === 0) {
        if (pos >= head.length && head.length === size) throw new ImportFailure(`${what} is empty`);
        throw new ImportFailure(`${what} has a header row longer than ${tuning.maxRecordBytes} bytes`);
      }
      const [record] = decodeRecords(head.subarray(pos, cut.end));
      pos = cut.end;
      row++;
      if (!isBlankRecord(record!)) header = record!.fields;
    }
    if (!plan) {
      const checked = planColumns(schema, header, job.mapping);
      if (!checked.ok) throw new ImportFailure(job.sources.length > 1 ? `${source.name}: ${checked.reason}` : checked.reason);
      plan = checked.plan;
    } else if (!sameColumns(plan.header, header)) {
      throw new ImportFailure(`${what} does not have the same header row as "${job.sources[0]!.name}"; every file of an import must`);
    }
    sources.push({ ...source, dataOffset: pos, headerRow: row });
  }
  if (created.length) await createMappedAttributes(env, job);
  return { plan: plan!, sources };
}

interface Position {
  seq: number;
  sourceIndex: number;
  byteOffset: number;
  rowNumber: number;
  total: number;
  failed: number;
}

interface PreparedChunk {
  rows: ImportedRow[];
  errorLines: RefusedRowLine[];
  records: number;
  refused: number;
  rowNumber: number;
}

function prepareChunk(job: ImportJob, plan: ColumnPlan, at: Position, bytes: Uint8Array): PreparedChunk {
  const file = job.sources.length > 1 ? job.sources[at.sourceIndex]!.name : null;
  const chunk: PreparedChunk = { rows: [], errorLines: [], records: 0, refused: 0, rowNumber: at.rowNumber };
  parseRecords(decoder.decode(bytes), (record) => {
    const row = ++chunk.rowNumber;
    if (isBlankRecord(record)) return;
    chunk.records++;
    const prepared = prepareRow(plan, record.fields, record.malformed);
    if (prepared.ok) {
      chunk.rows.push([prepared.key, prepared.attrs, contactBucket(job.panelId, prepared.key)]);
      return;
    }
    chunk.refused++;
    if (at.failed + chunk.refused > MAX_REPORTED_ERRORS) return;
    let line = formatCsvRecord(errorReportRow(file, row, prepared.columns, prepared.reasons, record.fields));
    if (line.length > MAX_REPORT_LINE_CHARS) {
      const note = `(the row is ${line.length} characters long and is not repeated here)`;
      // Reasons quote the offending cell, so they are cut too; D1 refuses values near 1 MB.
      const reasons = prepared.reasons.map((reason) => (reason.length > 500 ? `${reason.slice(0, 500)}…` : reason));
      line = formatCsvRecord(errorReportRow(file, row, prepared.columns, reasons, [note]));
    }
    chunk.errorLines.push({ row, line });
  });
  return chunk;
}

/**
 * Starts writing a chunk's parts on other shards (each one batch there, at the same time);
 * answers the contacts they created. They are written while the chunk before is still landing
 * on the home, but the home's batch of their own chunk, which claims it and moves the checkpoint
 * with these counts, waits for them: a failure before it leaves the checkpoint where it was, and
 * the chunk is read and written again, which a part's statements allow (importPartStatements;
 * its contacts then count as existing, not created). A panel without parts writes nothing here.
 */
async function commitParts(parts: ReadonlyArray<{ db: ShardDb; statements: PartStatements }>): Promise<number> {
  const landed = await Promise.all(parts.map((part) => commitImportPart(part.db, part.statements)));
  return landed.reduce((sum, part) => sum + part.created, 0);
}

/** The home's batch of a chunk, once the chunk before landed and this chunk's parts did; "stale" when the one before was. */
async function commitHomeAfter(
  before: Promise<"committed" | "stale"> | null,
  parts: Promise<number>,
  commit: (createdElsewhere: number) => Promise<"committed" | "stale">,
): Promise<"committed" | "stale"> {
  // Both settle before this answers, so a step that stops on either leaves nothing writing.
  const [previous, created] = await Promise.allSettled([before ?? ("committed" as const), parts]);
  if (previous.status === "rejected") throw previous.reason;
  if (previous.value !== "committed") return "stale";
  if (created.status === "rejected") throw created.reason;
  return commit(created.value);
}

/** `finished` carries the job's chunk count and data rows as its last checkpoint left them. */
export type RowsOutcome = { state: "finished"; seq: number; total: number } | { state: "yielded" } | { state: "stale" };

/**
 * Imports rows from the job's checkpoint on, one chunk per D1 batch, until every source is
 * read ("finished"), the step's budget is spent ("yielded": the caller queues the next step) or
 * another consumer turns out to hold the job ("stale": this one stops). Each source is read
 * from R2 in ranges of `readBytes`, so memory stays flat whatever the file's size.
 *
 * While a chunk's batch is in D1, the next chunk is read and prepared (parsing and checking
 * are the import's CPU); it is committed only once the one before landed, so checkpoints still
 * follow each other and a stale job commits nothing more.
 */
export async function importRows(env: Env, job: ImportJob, tuning: ImportTuning, deadline: number, now: () => number): Promise<RowsOutcome> {
  const { panel, db } = await panelHome(env, job.panelId);
  const plan = job.plan!;
  const at: Position = {
    seq: job.seq,
    sourceIndex: job.sourceIndex,
    byteOffset: job.byteOffset,
    rowNumber: job.rowNumber,
    total: job.total,
    failed: job.failed,
  };
  let inFlight: Promise<"committed" | "stale"> | null = null;
  const landed = async (): Promise<boolean> => {
    const commit = inFlight;
    inFlight = null;
    return commit === null || (await commit) === "committed";
  };
  /** The step stops here; the next one goes on from the last checkpoint. */
  const handOver = async (): Promise<RowsOutcome> => ((await landed()) ? { state: "yielded" } : { state: "stale" });
  let chunks = 0;
  let sent = 0;
  try {
    while (at.sourceIndex < job.sources.length) {
      const source = job.sources[at.sourceIndex]!;
      const size = source.size ?? 0;
      let buffer: Uint8Array = new Uint8Array(0);
      let readTo = at.byteOffset;
      for (;;) {
        const atEnd = readTo >= size;
        const cut = cutRecords(buffer, 0, tuning.chunkRows, tuning.chunkBytes, atEnd);
        // Bytes past the last complete record that still do not end a record: a row too long.
        const tooLong = buffer.length - cut.end >= tuning.maxRecordBytes;
        const full = cut.records >= tuning.chunkRows || cut.end >= tuning.chunkBytes || (tooLong && cut.records > 0);
        if (!atEnd && !full) {
          if (tooLong) throw new ImportFailure(`Row ${at.rowNumber + 1} is longer than ${tuning.maxRecordBytes} bytes; is a quote left open?`);
          const more = await readRange(env.FILES, source.key, readTo, Math.min(tuning.readBytes, size - readTo));
          readTo += more.length;
          buffer = concatBytes(buffer, more);
          continue;
        }
        if (cut.records === 0) break;
        const chunk = prepareChunk(job, plan, at, buffer.subarray(0, cut.end));
        // Each row to its key's partition (decision 0038 step 3): the home's in the chunk's batch,
        // each other shard's in a batch of its own there.
        const split = splitByShard(env, panel, chunk.rows, (row) => row[2]);
        const time = now();
        const statements = importChunkStatements(db, job, {
          seq: at.seq,
          sourceIndex: at.sourceIndex,
          rows: split.home,
          records: chunk.records,
          refused: chunk.refused,
          errorLines: chunk.errorLines,
          next: { sourceIndex: at.sourceIndex, byteOffset: at.byteOffset + cut.end, rowNumber: chunk.rowNumber },
          listId: job.listId,
          now: time,
        });
        const parts = split.elsewhere.map((part) => ({ db: part.db, statements: importPartStatements(part.db, job, { rows: part.items, listId: job.listId, now: time }) }));
        const count = parts.reduce((sum, part) => sum + part.statements.count, statements.count);
        // The step's budget of statements is spent: this chunk is read again by the next step.
        if (sent > 0 && sent + count > tuning.stepStatements) return handOver();
        // The parts go out now, beside the home's batch of the chunk before (a panel across
        // shards writes them in parallel): only the home's batch must follow the one before.
        const before = inFlight;
        inFlight = commitHomeAfter(before, commitParts(parts), (created) => commitImportStatements(db, statements, created));
        if (before && (await before) !== "committed") return { state: "stale" };
        sent += count;
        at.seq++;
        at.byteOffset += cut.end;
        at.rowNumber = chunk.rowNumber;
        at.total += chunk.records;
        at.failed += chunk.refused;
        buffer = buffer.subarray(cut.end);
        if (++chunks >= tuning.stepChunks || now() >= deadline) return handOver();
      }
      // This source is read; the next one starts after its header. The next chunk's checkpoint
      // records the move; until then a restart re-finds this source's end.
      const next = job.sources[at.sourceIndex + 1];
      at.sourceIndex++;
      if (next) {
        at.byteOffset = next.dataOffset ?? 0;
        at.rowNumber = next.headerRow ?? 1;
      }
    }
    return (await landed()) ? { state: "finished", seq: at.seq, total: at.total } : { state: "stale" };
  } finally {
    // Thrown while a chunk was in D1: the error in hand is the one reported; the chunk's own
    // outcome is settled (committed or not, the job's checkpoint says which) so it is never left unhandled.
    const commit: Promise<unknown> | null = inFlight;
    if (commit) await commit.catch(() => undefined);
  }
}
