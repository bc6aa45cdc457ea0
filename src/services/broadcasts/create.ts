import { mirrorLists, mirrorShards } from "../access/partitions";
import { isoTime } from "../../store/sql";
import { recordAudit, type Auditor } from "../audit/record";
import type { ShardDb } from "../../store/shards";
import { checkCsvHeaders, fileNameOf, rowcountInFileName, type BroadcastRequest } from "../../domain/broadcast";
import type { KeyedSchema } from "../../domain/contacts";
import { refused, succeeded, type Problem, type Result } from "../../lib/problems";
import { readAtMost } from "../../lib/bytes";
import { newId } from "../../lib/random";
import { fetchOutbound, OutboundError } from "../../lib/outbound";
import { limitTransfer, REQUEST_DOWNLOAD_LIMITS, transferLimitsFor } from "../../lib/transfer-limits";
import type { Panel } from "../../store/panels";
import { insertCampaignWithList, setCampaignImport, type NewCampaign } from "../../store/campaigns/definitions";
import { findListByName, getList, largestListId } from "../../store/lists";
import { MAX_SOURCE_BYTES, md5Hex, readContactFiles, type CsvFile } from "./contacts-source";
import { startContactImport } from "./contact-import";
import { senderStanding } from "../channels/email/sender-domains";

/** Largest HTML body fetched from `source_file`. */
export const MAX_HTML_BYTES = 2 * 1024 * 1024;

export interface CreatedBroadcast {
  campaignId: string;
  listId: number;
  sendAt: number;
  importJobId: string;
  /** Said to the caller when the outbox accepts a sender domain a real provider would refuse. */
  senderNote: string | null;
}

/** Who creates the broadcast, and when. */
export interface BroadcastContext {
  env: Env;
  panel: Panel;
  /** The panel's shard. */
  db: ShardDb;
  schema: KeyedSchema;
  requestId: string;
  now: number;
  /** Who to name in the audit log for the campaign published (the API user whose key called). */
  by?: Auditor;
  /** The service's origin as the caller reached it, for the contact import's error report link. */
  origin?: string;
}

/** Refused when the input broke a rule (invalid) or its list name is taken (conflict). */
export type BroadcastOutcome = Result<CreatedBroadcast>;

/** Thrown inside this module only, to stop at the first broken rule; the exported functions answer it as a Result. */
class Refused extends Error {
  constructor(readonly problem: Problem) {
    super(problem.fields[0]?.message);
  }
}

function invalidField(field: string, message: string): Refused {
  return new Refused({ kind: "invalid", fields: [{ field, message }] });
}

const sourceField = "data.contacts_upload_source";

/**
 * The file at `url`, within the request-time download limits (a deadline and a minimum rate);
 * a source that is too slow, breaks mid-body or never answers refuses `field`.
 */
async function download(env: Env, url: string, field: string, limit: number): Promise<Uint8Array> {
  const limits = transferLimitsFor(env, REQUEST_DOWNLOAD_LIMITS);
  const startedAt = Date.now();
  try {
    const response = await fetchOutbound(env, url, { method: "GET" }, { timeoutMs: limits.deadlineMs, headersTimeoutMs: limits.headersMs, maxRedirects: 3 });
    if (!response.ok) {
      await response.body?.cancel();
      throw invalidField(field, `could not be downloaded: the server answered HTTP ${response.status}`);
    }
    const body = response.body && limitTransfer(response.body, limits, new URL(response.url || url).host, startedAt);
    const bytes = await readAtMost(body, limit);
    if (!bytes) throw invalidField(field, `the file is larger than the ${limit}-byte limit`);
    return bytes;
  } catch (error) {
    if (error instanceof OutboundError) throw invalidField(field, `could not be downloaded: ${error.message}`);
    throw error;
  }
}

/** The row-count rule: each CSV's name is `<name>_<rows>.csv` and it has that many records, header included. */
function checkRowcounts(files: readonly CsvFile[]): void {
  for (const file of files) {
    const expected = rowcountInFileName(file.name);
    if (expected === null) {
      throw invalidField(sourceField, `check_rowcount is 1, so the file name must end in _<rows>.csv, but it is ${file.name}`);
    }
    if (expected !== file.records.length) {
      throw invalidField(
        sourceField,
        `check_rowcount: ${file.name} has ${file.records.length} rows (header included) but its name says ${expected}`,
      );
    }
  }
}

/** Reads and checks the contact files: every rule of CONTRACT 2.4 about them, before any write. */
async function loadContactFiles(ctx: BroadcastContext, request: BroadcastRequest): Promise<CsvFile[]> {
  const bytes = await download(ctx.env, request.contactsSource, sourceField, MAX_SOURCE_BYTES);
  if (request.md5 !== null) {
    const actual = await md5Hex(bytes);
    if (actual !== request.md5) {
      throw invalidField("data.contacts_upload_source_file_md5", `does not match the file: its MD5 is ${actual}`);
    }
  }
  const read = await readContactFiles(fileNameOf(request.contactsSource), bytes);
  if (!read.ok) throw invalidField(sourceField, read.message);
  const headers = checkCsvHeaders(
    read.files.map((f) => ({ name: f.name, header: f.records[0] ?? [] })),
    (name) => ctx.schema.attributes.has(name),
    ctx.schema.primaryKey,
  );
  if (!headers.ok) throw invalidField(sourceField, headers.message);
  // All checks before anything is written (CONTRACT 2.4): a campaign to no one is refused now, not failed by its import later.
  if (read.files.every((file) => file.records.length <= 1)) throw invalidField(sourceField, "holds a header row but no contacts");
  if (request.checkRowcount) checkRowcounts(read.files);
  return read.files;
}

async function loadHtml(env: Env, source: { sourceHtml: string | null; sourceFile: string | null }, field: string): Promise<string> {
  if (source.sourceHtml !== null) return source.sourceHtml;
  const bytes = await download(env, source.sourceFile!, field, MAX_HTML_BYTES);
  let html: string;
  try {
    html = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw invalidField(field, "is not UTF-8 text");
  }
  if (html.trim() === "") throw invalidField(field, "is empty");
  return html;
}

/** Where a campaign's files are kept in R2: its HTML body, and a broadcast's contact files. */
function campaignFiles(panelId: string, campaignId: string): string {
  return `broadcasts/${panelId}/${campaignId}`;
}

/** What every campaign takes from its request, whichever way it names its recipients. */
type CampaignBasics = Pick<BroadcastRequest, "campaignName" | "subject" | "senderName" | "senderEmail" | "tags" | "scheduleLocal" | "sendAt">;

/** A new campaign as its row is written: a fresh id, the request's fields, and where its body goes. */
export function newCampaign(ctx: { panel: Panel; requestId: string; now: number }, request: CampaignBasics): NewCampaign {
  const id = newId("cmp");
  return {
    id,
    panelId: ctx.panel.id,
    name: request.campaignName,
    subject: request.subject,
    senderName: request.senderName,
    senderEmail: request.senderEmail,
    tags: request.tags,
    scheduleLocal: request.scheduleLocal,
    sendAt: request.sendAt,
    bodyKey: `${campaignFiles(ctx.panel.id, id)}/body.html`,
    requestId: ctx.requestId,
    createdAt: ctx.now,
  };
}

/** Keeps the campaign's HTML body where its row says (`bodyKey`). */
export function putCampaignBody(env: Env, campaign: NewCampaign, html: string): Promise<unknown> {
  return env.FILES.put(campaign.bodyKey, html, { httpMetadata: { contentType: "text/html; charset=utf-8" } });
}

/** A campaign's HTML body: given, or downloaded from `sourceFile` under the rules of 4.10 (`field` names it in a refusal). */
export async function readHtmlBody(
  env: Env,
  source: { sourceHtml: string | null; sourceFile: string | null },
  field: string,
): Promise<Result<string>> {
  try {
    return succeeded(await loadHtml(env, source, field));
  } catch (error) {
    if (error instanceof Refused) return refused(error.problem.kind, error.problem.fields);
    throw error;
  }
}

function listTaken(name: string): Refused {
  return new Refused({ kind: "conflict", fields: [{ field: "data.list_name", message: `a list named "${name}" already exists in this panel` }] });
}

/**
 * 4.10 for a request that passed its schema: checks what the schema cannot see (the list name,
 * the contact files, the HTML body), then writes: the files to R2, the list and the campaign
 * to D1, and the import.
 */
export async function createBroadcast(ctx: BroadcastContext, request: BroadcastRequest): Promise<BroadcastOutcome> {
  try {
    return succeeded(await checkThenCreate(ctx, request));
  } catch (error) {
    if (error instanceof Refused) return refused(error.problem.kind, error.problem.fields);
    throw error;
  }
}

async function checkThenCreate(ctx: BroadcastContext, request: BroadcastRequest): Promise<CreatedBroadcast> {
  const { env, db, panel, now } = ctx;
  const sender = await senderStanding(env, db, panel.id, request.senderEmail);
  if (sender.refusal) throw invalidField("data.sender_email_id", sender.refusal);
  if (await findListByName(db, panel.id, request.listName)) throw listTaken(request.listName);

  const [files, html] = await Promise.all([loadContactFiles(ctx, request), loadHtml(ctx.env, request, "data.source_file")]);

  const campaign = newCampaign(ctx, request);
  const folder = campaignFiles(panel.id, campaign.id);
  const sources = files.map((file, i) => ({ name: file.name, r2Key: `${folder}/contacts/${i}-${file.name}` }));
  await Promise.all([
    putCampaignBody(env, campaign, html),
    ...files.map((file, i) => env.FILES.put(sources[i]!.r2Key, file.bytes, { httpMetadata: { contentType: "text/csv" } })),
  ]);
  // The campaign's list is mirrored on every other shard of the panel's partitions (decision
  // 0041): its import writes each contact's membership on the contact's shard, and each shard
  // publishes its own members (decision 0038 step 4).
  const mirrors = mirrorShards(env, panel);
  const above = mirrors.length ? Math.max(...(await Promise.all(mirrors.map((m) => largestListId(m.db, panel.id))))) : undefined;
  const listId = await insertCampaignWithList(db, campaign, request.listName, `Contacts of campaign ${request.campaignName}`, above);
  if (listId === null) throw listTaken(request.listName);
  if (mirrors.length) await mirrorLists(mirrors, panel.id, [(await getList(db, panel.id, listId))!]);
  const handle = await startContactImport(env, db, { panelId: panel.id, listId, schema: ctx.schema, sources, now, origin: ctx.origin });
  await setCampaignImport(db, panel.id, campaign.id, handle.jobId);
  if (ctx.by) {
    await recordAudit(db, panel.id, ctx.by, "campaign.published", campaign.id, {
      name: request.campaignName,
      send_at: isoTime(request.sendAt),
      list: { id: listId, name: request.listName },
      import_job: handle.jobId,
    });
  }
  return { campaignId: campaign.id, listId, sendAt: request.sendAt, importJobId: handle.jobId, senderNote: sender.note };
}
