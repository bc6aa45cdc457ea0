import { newId } from "../../lib/random";
import { R2Upload } from "../../lib/r2-upload";
import { getList } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { startImport } from "../imports";

export type ListImportOutcome = { kind: "started"; jobId: string } | { kind: "missing" };

/** Imports contacts into a list from a CSV file at a URL, by the bulk-upload engine. */
export async function importUrlIntoList(env: Env, db: ShardDb, panelId: string, listId: number, url: string, origin: string): Promise<ListImportOutcome> {
  if (!(await getList(db, panelId, listId))) return { kind: "missing" };
  return { kind: "started", jobId: await startImport(env, db, { panelId, sources: [{ url }], listId, origin }) };
}

export interface ListUpload {
  /** The size the request declared (NaN when it declared none). */
  declaredBytes: number;
  body: ReadableStream<Uint8Array> | null;
  /** The file's name, shown in the job and its error report. */
  name: string;
  maxBytes: number;
}

export type ListUploadOutcome = ListImportOutcome | { kind: "too_large" } | { kind: "no_file" } | { kind: "empty" };

/**
 * Stores an uploaded CSV file in R2 as it streams in (refused past `maxBytes`, nothing kept),
 * then imports it into the list by the bulk-upload engine.
 */
export async function uploadIntoList(env: Env, db: ShardDb, panelId: string, listId: number, upload: ListUpload, origin: string): Promise<ListUploadOutcome> {
  if (!(await getList(db, panelId, listId))) return { kind: "missing" };
  if (upload.declaredBytes > upload.maxBytes) return { kind: "too_large" };
  if (!upload.body) return { kind: "no_file" };
  const key = `panel-uploads/${panelId}/${newId("upl")}.csv`;
  const stored = new R2Upload(env.FILES, key, { httpMetadata: { contentType: "text/csv" } });
  const reader = upload.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (stored.size + value.length > upload.maxBytes) {
      await reader.cancel();
      await stored.abort();
      return { kind: "too_large" };
    }
    await stored.write(value);
  }
  if (stored.size === 0) {
    await stored.abort();
    return { kind: "empty" };
  }
  await stored.close();
  return { kind: "started", jobId: await startImport(env, db, { panelId, sources: [{ key, name: upload.name }], listId, origin }) };
}
