import { fileNameOf } from "../../domain/broadcast";
import { isBlankRecord, notCsvReason, NOT_UTF8_REASON, parseRecords } from "../../domain/csv";
import { utf8Length } from "../../lib/bytes";
import { toHex } from "../../lib/random";
import { DEFAULT_TUNING } from "../imports/rows";
import { unzipAtMost } from "../../lib/zip";

/**
 * The contact file of a broadcast (CONTRACT 2.4): one .csv, or a .zip of .csv files inflated
 * in the request under a bound on the bytes actually produced (lib/zip.ts). CSV is read as the
 * bulk upload reads it (src/domain/csv.ts).
 */

/** Largest contact file (the download) and largest total of the CSVs inside a zip. */
export const MAX_SOURCE_BYTES = 20 * 1024 * 1024;
export const MAX_UNZIPPED_BYTES = 50 * 1024 * 1024;

export interface CsvFile {
  name: string;
  bytes: Uint8Array;
  /** Every record, the header first; blank lines are not records. */
  records: string[][];
}

export type SourceRead = { ok: true; files: CsvFile[] } | { ok: false; message: string };

/**
 * Every record, read by the same RFC 4180 reader as the bulk upload, so both count rows alike. A
 * badly quoted row is a row: the import skips and reports it, as a bulk upload's. A badly quoted
 * header, or a record longer than the import reads one (a quote left open swallowing the rest of
 * the file), which would fail the import half-way, is refused here, before anything is written.
 */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  parseRecords(text, (record) => {
    if (record.malformed && records.length === 0) throw new Error("the header row has a badly quoted field");
    if (longerThanImportReads(record.fields)) {
      throw new Error(`record ${records.length + 1} is longer than ${DEFAULT_TUNING.maxRecordBytes} bytes; is a quote left open?`);
    }
    if (!isBlankRecord(record)) records.push(record.fields);
  });
  return records;
}

/** Whether a record is longer in UTF-8 than the import reads one (encoded only when its characters could make it so). */
function longerThanImportReads(fields: readonly string[]): boolean {
  const chars = fields.reduce((sum, field) => sum + field.length + 1, 0);
  if (chars * 3 <= DEFAULT_TUNING.maxRecordBytes) return false;
  return utf8Length(fields.join(",")) > DEFAULT_TUNING.maxRecordBytes;
}

function readCsv(name: string, bytes: Uint8Array): CsvFile | string {
  const notCsv = notCsvReason(bytes);
  if (notCsv) return `${name} is not a CSV file: ${notCsv}`;
  let text: string;
  try {
    // Strict, unlike the bulk upload's per-row check: nothing of a broadcast is written before every check passes.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return `${name} ${NOT_UTF8_REASON}`;
  }
  try {
    return { name, bytes, records: parseCsv(text) };
  } catch (error) {
    return `${name} is not a readable CSV file: ${error instanceof Error ? error.message : String(error)}`;
  }
}

const isIgnoredEntry = (path: string) => path.endsWith("/") || path.startsWith("__MACOSX/") || fileNameOf(path).startsWith(".");

/** The CSV files of a download named `name`: the file itself, or each .csv inside a zip. */
export async function readContactFiles(name: string, bytes: Uint8Array): Promise<SourceRead> {
  if (!/\.zip$/i.test(name)) {
    const file = readCsv(name, bytes);
    return typeof file === "string" ? { ok: false, message: file } : { ok: true, files: [file] };
  }
  const unzipped = await unzipAtMost(bytes, {
    limit: MAX_UNZIPPED_BYTES,
    skip: isIgnoredEntry,
    refuse: (path) => (/\.csv$/i.test(path) ? null : `the zip may hold only .csv files, but it holds ${path}`),
  });
  if (!unzipped.ok) {
    if (unzipped.kind === "too_large") return { ok: false, message: `the files inside ${name} inflate to more than the ${MAX_UNZIPPED_BYTES}-byte limit` };
    if (unzipped.kind === "refused") return { ok: false, message: unzipped.message };
    return { ok: false, message: `${name} is not a readable zip file: ${unzipped.message}` };
  }
  const files: CsvFile[] = [];
  for (const entry of unzipped.entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const file = readCsv(fileNameOf(entry.path), entry.bytes);
    if (typeof file === "string") return { ok: false, message: file };
    files.push(file);
  }
  if (files.length === 0) return { ok: false, message: `${name} holds no .csv file` };
  return { ok: true, files };
}

export async function md5Hex(bytes: Uint8Array): Promise<string> {
  // workerd implements MD5 in crypto.subtle.digest as a non-standard extension.
  const digest = new Uint8Array(await crypto.subtle.digest("MD5", bytes));
  return toHex(digest);
}
