import { recordAudit, type Auditor } from "../audit/record";
import { succeeded, type Result } from "../../lib/problems";
import type { ShardDb } from "../../store/shards";
import { missingLists } from "../contacts/lists";
import { noSuchLists } from "../contacts/refusals";
import { startImport } from "./index";

export interface BulkUpload {
  panelId: string;
  /** The hosted CSV file (an outbound URL the caller checked). */
  url: string;
  listId: number | null;
  notifyEmails: readonly string[];
  callbackUrl: string | null;
  origin: string;
  now: number;
}

/**
 * Contacts imported from a hosted CSV file in the background (CONTRACT 4.5 bulkupload): the
 * list, when one is named, must be the panel's; answers the job's id at once.
 */
export async function startBulkUpload(env: Pick<Env, "IMPORTS">, db: ShardDb, by: Auditor, upload: BulkUpload): Promise<Result<{ jobId: string }>> {
  const missing = await missingLists(db, upload.panelId, upload.listId === null ? [] : [upload.listId]);
  if (missing.length) return noSuchLists(missing);
  const jobId = await startImport(env, db, {
    panelId: upload.panelId,
    sources: [{ url: upload.url }],
    listId: upload.listId,
    notifyEmails: upload.notifyEmails,
    callbackUrl: upload.callbackUrl,
    origin: upload.origin,
    via: "api",
    now: upload.now,
  });
  // One entry per job, not per contact: an import changes the panel's data wholesale.
  await recordAudit(db, upload.panelId, by, "import.started", jobId, { list: upload.listId === null ? null : { id: upload.listId }, source: "api", url: upload.url });
  return succeeded({ jobId });
}
