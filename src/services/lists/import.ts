import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { R2Upload } from "../../lib/r2-upload";
import { checkMapping, type ColumnMapping } from "../../domain/imports";
import { loadAttributeSchema } from "../../store/attributes";
import { getList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { startImport } from "../imports";
import { recordAudit, type Auditor } from "../audit/record";
import { noSuchList } from "./find";

/** The import job started (to follow at /jobs/{job}). */
export type ListImportStarted = { jobId: string };

/** A mapping's refusals (invalid, each named `mapping.<header>`), or null when it fits the panel's attributes. */
async function refusedMapping(db: ShardDb, panelId: string, mapping: ColumnMapping | undefined): Promise<Result<never> | null> {
  if (!mapping) return null;
  const problems = checkMapping(await loadAttributeSchema(db, panelId), mapping);
  return problems.length ? refused("invalid", problems) : null;
}

/** Imports contacts into a list from a CSV file at a URL, by the bulk-upload engine, its columns mapped by `mapping`. */
export async function importUrlIntoList(env: Env, db: ShardDb, panelId: string, listId: number, url: string, origin: string, by?: Auditor, mapping?: ColumnMapping): Promise<Result<ListImportStarted>> {
  const list = await getList(db, panelId, listId);
  if (!list) return noSuchList({ id: listId });
  const bad = await refusedMapping(db, panelId, mapping);
  if (bad) return bad;
  const jobId = await startImport(env, db, { panelId, sources: [{ url }], listId, origin, mapping, via: "panel" });
  if (by) await recordAudit(db, panelId, by, "import.started", jobId, { list: { id: list.id, name: list.name }, source: "url", url, ...(mapping ? { mapping } : {}) });
  return succeeded({ jobId });
}

export interface ListUpload {
  /** The size the request declared (NaN when it declared none). */
  declaredBytes: number;
  body: ReadableStream<Uint8Array> | null;
  /** The file's name, shown in the job and its error report. */
  name: string;
  maxBytes: number;
  /** The columns' mapping (checked before the file is stored). */
  mapping?: ColumnMapping;
}

/**
 * Stores an uploaded CSV file in R2 as it streams in (refused past `maxBytes`, nothing kept),
 * then imports it into the list by the bulk-upload engine. Refused when there is no such list
 * (not_found), no file (invalid) or an empty one, or one past `maxBytes` (too_large).
 */
export async function uploadIntoList(env: Env, db: ShardDb, panelId: string, listId: number, upload: ListUpload, origin: string, by?: Auditor): Promise<Result<ListImportStarted>> {
  const list = await getList(db, panelId, listId);
  if (!list) return noSuchList({ id: listId });
  const bad = await refusedMapping(db, panelId, upload.mapping);
  if (bad) return bad;
  const tooLarge = () => refused<ListImportStarted>("too_large", [{ field: "file", message: "too large" }], `file: larger than ${upload.maxBytes} bytes`);
  if (upload.declaredBytes > upload.maxBytes) return tooLarge();
  if (!upload.body) return refusedField("invalid", "file", "is required: send the CSV file as the request body");
  const key = `panel-uploads/${panelId}/${newId("upl")}.csv`;
  const stored = new R2Upload(env.FILES, key, { httpMetadata: { contentType: "text/csv" } });
  const reader = upload.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (stored.size + value.length > upload.maxBytes) {
      await reader.cancel();
      await stored.abort();
      return tooLarge();
    }
    await stored.write(value);
  }
  if (stored.size === 0) {
    await stored.abort();
    return refusedField("invalid", "file", "is empty");
  }
  await stored.close();
  const jobId = await startImport(env, db, { panelId, sources: [{ key, name: upload.name }], listId, origin, mapping: upload.mapping, via: "panel" });
  if (by) await recordAudit(db, panelId, by, "import.started", jobId, { list: { id: list.id, name: list.name }, source: "upload", file: upload.name, bytes: stored.size, ...(upload.mapping ? { mapping: upload.mapping } : {}) });
  return succeeded({ jobId });
}
