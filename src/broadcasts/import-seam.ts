import { canonicalAttributeName, checkTextValue, type AttributeValue } from "../domain/attributes";
import type { KeyedSchema } from "../domain/contacts";
import { normalisePrimaryKey } from "../domain/primary-key";
import { upsertContact } from "../store/contacts";
import { parseCsv } from "./contacts-source";

/**
 * SEAM (bulk import). The broadcast hands its contact files to the import machinery through
 * startContactImport and asks after it with contactImportStatus, and nowhere else. Until the
 * bulk-upload engine (a background job with state in D1) is merged, this does the simplest
 * correct thing: it reads the already validated CSVs from R2 and upserts their rows one by one
 * into the new list within the call (fine for small files only), skipping invalid rows as the
 * bulk upload does. To switch: start the engine's job here (`startImport(env, { panelId,
 * sources, listId })`) and return its job id; make contactImportStatus read that job's state.
 * The publish cron already waits while the status is "running" and fails the campaign on
 * "failed".
 */
export interface ContactImportRequest {
  panelId: string;
  listId: number;
  schema: KeyedSchema;
  /** The validated CSV files, stored in R2 (header row first). */
  sources: ReadonlyArray<{ name: string; r2Key: string }>;
  now: number;
}

export interface ContactImportHandle {
  /** The import job's id; null when the import already finished within the call. */
  jobId: string | null;
  imported: number;
  failed: number;
}

export type ContactImportStatus = "running" | "completed" | "failed";

export async function startContactImport(env: Pick<Env, "DB" | "FILES">, request: ContactImportRequest): Promise<ContactImportHandle> {
  let imported = 0;
  let failed = 0;
  for (const source of request.sources) {
    const object = await env.FILES.get(source.r2Key);
    if (!object) throw new Error(`contact file ${source.r2Key} is missing from R2`);
    const [header = [], ...rows] = parseCsv(new Uint8Array(await object.arrayBuffer()));
    const names = header.map(canonicalAttributeName);
    for (const row of rows) {
      const values = rowValues(request.schema, names, row);
      if (!values) {
        failed++;
        continue;
      }
      await upsertContact(env.DB, request.panelId, values.key, values.attributes, request.now, request.listId);
      imported++;
    }
  }
  return { jobId: null, imported, failed };
}

export async function contactImportStatus(_env: Pick<Env, "DB">, _panelId: string, jobId: string | null): Promise<ContactImportStatus> {
  // Imports run within the call for now (see above), so a campaign's import is always done.
  return jobId === null ? "completed" : "failed";
}

function rowValues(schema: KeyedSchema, names: readonly string[], row: readonly string[]): { key: string; attributes: Record<string, AttributeValue> } | null {
  if (row.length !== names.length) return null;
  const attributes: Record<string, AttributeValue> = {};
  let key: string | null = null;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const cell = row[i]!;
    const type = schema.attributes.get(name);
    if (!type) return null;
    if (name === schema.primaryKey) {
      const normalised = normalisePrimaryKey(name, type, type === "integer" ? Number(cell) : cell);
      if (!normalised.ok) return null;
      key = normalised.value;
      attributes[name] = normalised.value;
      continue;
    }
    if (cell.trim() === "") continue;
    const checked = checkTextValue(type, cell);
    if (!checked.ok) return null;
    attributes[name] = checked.value;
  }
  return key === null ? null : { key, attributes };
}
