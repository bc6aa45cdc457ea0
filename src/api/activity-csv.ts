import type { IRequest } from "itty-router";
import { csvRecordGroups, isBlankRecord, NOT_UTF8, NOT_UTF8_REASON, headerFormatProblem, type CsvRecord } from "../domain/csv";
import { decodedBody } from "../lib/http/body";
import { invalidField } from "../lib/http/errors";
import { multipartBoundary, MultipartError, multipartFileBytes } from "../lib/http/multipart";
import { newRequestId } from "../lib/http/respond";
import { catalogForClient, failure, idempotencyKey, parseActivityEvent, parseUploadEvent } from "./activity";
import { ActivityBatch, MAX_CSV_BYTES, MAX_CSV_ROWS, type BatchSource } from "./activity-batch";

/**
 * CSV batch activity (CONTRACT 10): `POST /v1/activity/batchactivity/{client_id}` with a CSV
 * file in the multipart field `data` (or `file`), one event per row. The file is read as it
 * arrives (lib/http/multipart.ts, domain/csv.ts) and handed to the batch core group by group;
 * only the events to record are kept, never the file. Answered as the batch endpoint, `index`
 * being the data row's number (1 = the first row after the header). A cell of an array
 * parameter holds the array's JSON (`[{"prid":12}]`), read as the JSON routes' value.
 */

/** Room in the request for the multipart framing and any small fields around the file. */
const MAX_CSV_BODY_BYTES = MAX_CSV_BYTES + 64 * 1024;
const FILE_FIELDS = ["data", "file"] as const;
/** Rows validated together: the catalog is checked per group, and parsing work stays bounded. */
const GROUP_ROWS = 1000;

/** Header columns that are members of the event; every other column is a parameter. */
const EVENT_COLUMNS = ["activity_name", "activityid", "identity", "uniqueid", "timestamp", "cts", "activity_source", "asset_id"] as const;

/** How the header's columns map to an event's members. */
interface CsvPlan {
  /** Per column: the event member it fills, or the parameter it names (`param` true). */
  columns: Array<{ name: string; param: boolean }>;
  /** activity_name given: events name their activity (as the upload route); else by activityid. */
  byName: boolean;
}

function planOf(header: CsvRecord): CsvPlan {
  const formatProblem = headerFormatProblem(header.fields);
  if (formatProblem) throw invalidField("data", formatProblem);
  const columns = header.fields.map((raw) => {
    const name = raw.trim();
    const lower = name.toLowerCase();
    return (EVENT_COLUMNS as readonly string[]).includes(lower) ? { name: lower, param: false } : { name, param: true };
  });
  const has = (name: string) => columns.some((c) => !c.param && c.name === name);
  if (!has("activity_name") && !has("activityid")) throw invalidField("data", "the header must name the activity column: activity_name or activityid");
  if (!has("identity") && !has("uniqueid")) throw invalidField("data", "the header must name the contact column: identity or uniqueid");
  const empty = columns.findIndex((c) => c.name === "");
  if (empty !== -1) throw invalidField("data", `header column ${empty + 1} has no name`);
  // As a bulk upload's header: a column named twice would leave which cell counts to chance (the last one won).
  const twice = columns.findIndex((c, i) => columns.findIndex((d) => d.param === c.param && d.name === c.name) !== i);
  if (twice !== -1) throw invalidField("data", `header column ${twice + 1} (${columns[twice]!.name}) appears more than once`);
  return { columns, byName: has("activity_name") };
}

/** A row as the JSON event the batch routes parse; an empty cell is absent. */
function eventOf(plan: CsvPlan, fields: readonly string[]): Record<string, unknown> {
  const event: Record<string, unknown> = {};
  const params: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    const cell = fields[i]!;
    if (cell === "") continue;
    const column = plan.columns[i]!;
    if (column.param) params[column.name] = cell;
    else event[column.name] = cell;
  }
  event.activity_params = params;
  return event;
}

/** The file's bytes, refused (413) once they pass MAX_CSV_BYTES. */
async function* atMostCsvBytes(pieces: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const piece of pieces) {
    size += piece.length;
    if (size > MAX_CSV_BYTES) throw invalidField("data", `must be a file of at most ${MAX_CSV_BYTES} bytes`, 413);
    yield piece;
  }
}

/** POST /{v1|apiv2}/activity/batchactivity/{client_id} */
export async function handleActivityCsv(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const catalog = await catalogForClient(request, env);
    const key = idempotencyKey(request);
    const boundary = multipartBoundary(request.headers.get("content-type"));
    const body = decodedBody(request);
    if (boundary === null || !body) throw invalidField("data", "is required: send multipart/form-data with the CSV file in the field data (or file)");
    if (Number(request.headers.get("content-length") ?? "NaN") > MAX_CSV_BODY_BYTES) {
      throw invalidField("data", `must be a file of at most ${MAX_CSV_BYTES} bytes`, 413);
    }
    let plan: CsvPlan | undefined;
    let batch: ActivityBatch | undefined;
    let lines = 0;
    let rows = 0;
    try {
      const file = atMostCsvBytes(multipartFileBytes(body, boundary, FILE_FIELDS));
      for await (const records of csvRecordGroups(file, GROUP_ROWS, MAX_CSV_BYTES)) {
        const items: unknown[] = [];
        const indexes: number[] = [];
        const refused: Array<{ index: number; message: string }> = [];
        for (const record of records) {
          if (!plan) {
            // Blank lines before the header are skipped, as a bulk upload skips them.
            if (isBlankRecord(record)) continue;
            plan = planOf(record);
            const source: BatchSource = plan.byName
              ? { catalog, key, fromCells: true, parse: parseUploadEvent, ref: (input) => input.activity_name! }
              : { catalog, key, fromCells: true, parse: parseActivityEvent, ref: (input) => input.activityid! };
            batch = new ActivityBatch(env, source);
            continue;
          }
          // `index` is the row's place after the header; blank rows keep their place but are not rows to the limit.
          const index = ++lines;
          if (isBlankRecord(record)) continue;
          if (++rows > MAX_CSV_ROWS) throw invalidField("data", `must hold at most ${MAX_CSV_ROWS} rows after the header`);
          if (record.malformed) refused.push({ index, message: "is not valid CSV: text after a closing quote, or a quote left open" });
          else if (record.fields.length > plan.columns.length) refused.push({ index, message: `has ${record.fields.length} cells; the header names ${plan.columns.length} columns` });
          else if (record.fields.some((cell) => cell.includes(NOT_UTF8))) refused.push({ index, message: NOT_UTF8_REASON });
          else {
            items.push(eventOf(plan, record.fields));
            indexes.push(index);
          }
        }
        for (const { index, message } of refused) batch?.reject(index, "row", message);
        if (items.length) await batch!.add(items, indexes);
      }
    } catch (error) {
      if (error instanceof MultipartError) throw invalidField("data", `could not be read: ${error.message}`);
      if (error instanceof RangeError) throw invalidField("data", error.message);
      throw error;
    }
    if (!batch) throw invalidField("data", "is empty: a CSV file with a header row and one event per row is required");
    if (batch.size === 0) throw invalidField("data", "holds no rows after the header");
    return await batch.answer(requestId, exec);
  } catch (error) {
    return failure(requestId, error);
  }
}
