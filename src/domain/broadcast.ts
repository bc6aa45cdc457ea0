import { decodeOrKeep } from "../lib/uri";
import { canonicalAttributeName } from "./attributes";
import { isEmailAddress, parseAddressList } from "./email";
import type { FieldProblem } from "./problems";
import { formatLocalIso, instantOf, parseLocalDateTime } from "./time";

/**
 * The rules of an email broadcast request (spec 2.5, CONTRACT 2.4) that need no I/O. Checks
 * that read the network or the database (list name free, the files themselves) build on the
 * helpers below.
 */

export const MAX_TAGS = 5;
export const MAX_CAMPAIGN_TEXT = 500;
/** notify_me recipients at most. */
export const MAX_NOTIFY_ADDRESSES = 20;

export interface BroadcastRequest {
  contactsSource: string;
  md5: string | null;
  checkRowcount: boolean;
  listName: string;
  campaignName: string;
  subject: string;
  senderName: string;
  senderEmail: string;
  tags: string[];
  scheduleLocal: string;
  sendAt: number;
  sourceFile: string | null;
  /** The decoded HTML of `source_code`. */
  sourceHtml: string | null;
  notify: string[];
}

export type CheckedBroadcast = { ok: true; request: BroadcastRequest } | { ok: false; problems: FieldProblem[] };

function text(data: Record<string, unknown>, name: string): string | undefined {
  const value = data[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "number") return String(value);
  return typeof value === "string" ? value.trim() : undefined;
}

/** Decodes standard or URL-safe base64 (line breaks allowed) as UTF-8; null when it is not base64 or not UTF-8. */
export function decodeBase64Utf8(input: string): string | null {
  const compact = input.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
  if (compact === "" || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) return null;
  try {
    const binary = atob(compact.padEnd(Math.ceil(compact.length / 4) * 4, "="));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
}

function splitTags(value: unknown): string[] | null {
  if (value === undefined || value === null || value === "") return [];
  if (Array.isArray(value)) return value.every((t) => typeof t === "string") ? value.map((t: string) => t.trim()).filter(Boolean) : null;
  if (typeof value !== "string") return null;
  return value
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
}

export interface RequestCheckOptions {
  timezone: string;
  now: number;
  leadMinutes: number;
}

/**
 * Every rule of the request itself, each failure naming its field and rule, all reported at
 * once. What it cannot see (the files, the list names taken) is checked by the caller.
 */
export function checkBroadcastRequest(data: Record<string, unknown>, options: RequestCheckOptions): CheckedBroadcast {
  const problems: FieldProblem[] = [];
  const problem = (name: string, message: string) => problems.push({ field: `data.${name}`, message });

  const required = (name: string, max = MAX_CAMPAIGN_TEXT): string => {
    const value = text(data, name);
    if (value === undefined) problem(name, "is required");
    else if (value === "") problem(name, "must not be empty");
    else if (value.length > max) problem(name, `must be at most ${max} characters`);
    return value ?? "";
  };

  const contactsSource = required("contacts_upload_source", 2048);
  if (contactsSource && !/\.(csv|zip)$/i.test(pathOf(contactsSource))) {
    problem("contacts_upload_source", "must be the URL of a .csv file or of a .zip of .csv files");
  }
  const listName = required("list_name", 200);
  const campaignName = required("campaign_name");
  const subject = required("subject_line", 998);
  const senderName = required("sender_name", 200);
  const senderEmail = required("sender_email_id", 254).toLowerCase();
  if (senderEmail && !isEmailAddress(senderEmail)) problem("sender_email_id", "must be an email address");

  const md5Raw = text(data, "contacts_upload_source_file_md5");
  const md5 = md5Raw === undefined || md5Raw === "" ? null : md5Raw.toLowerCase();
  if (md5 !== null && !/^[0-9a-f]{32}$/.test(md5)) problem("contacts_upload_source_file_md5", "must be an MD5 digest: 32 hex characters");
  const rowcountRaw = text(data, "check_rowcount");
  if (rowcountRaw !== undefined && rowcountRaw !== "" && rowcountRaw !== "1" && rowcountRaw !== "0") {
    problem("check_rowcount", 'must be "1" (row count in the file name) or absent');
  }
  const checkRowcount = rowcountRaw === "1";
  if (checkRowcount && md5 !== null) {
    problem("check_rowcount", "must not be combined with contacts_upload_source_file_md5: pass one or the other");
  }

  const tags = splitTags(data.tags);
  if (tags === null) problem("tags", "must be text: labels separated by commas");
  else if (tags.length > MAX_TAGS) problem("tags", `at most ${MAX_TAGS} tags are allowed, not ${tags.length}`);
  else if (tags.some((t) => t.length > 100)) problem("tags", "each tag must be at most 100 characters");

  const scheduleLocal = required("schedule_date", 19);
  let sendAt = 0;
  if (scheduleLocal) {
    const clock = parseLocalDateTime(scheduleLocal);
    if (!clock.ok) problem("schedule_date", clock.reason);
    else {
      sendAt = instantOf(clock.value, options.timezone);
      const earliest = options.now + options.leadMinutes * 60_000;
      if (sendAt < earliest) {
        problem(
          "schedule_date",
          `must be at least ${options.leadMinutes} minutes ahead (in the panel's time zone ${options.timezone}); the earliest allowed is ${formatLocal(earliest, options.timezone)}`,
        );
      }
    }
  }

  const sourceFile = text(data, "source_file") || null;
  const sourceCode = text(data, "source_code") || null;
  let sourceHtml: string | null = null;
  if (sourceFile === null && sourceCode === null) problem("source_file", "one of source_file (URL of the HTML body) and source_code (base64 HTML) is required");
  else if (sourceFile !== null && sourceCode !== null) problem("source_code", "must not be combined with source_file: pass exactly one of them");
  else if (sourceCode !== null) {
    sourceHtml = decodeBase64Utf8(sourceCode);
    if (sourceHtml === null) problem("source_code", "must be the HTML body encoded in base64 (UTF-8)");
    else if (sourceHtml.trim() === "") problem("source_code", "decodes to an empty body");
  }

  const notifyRaw = required("notify_me", 2048);
  const notify = notifyRaw ? parseAddressList(notifyRaw, MAX_NOTIFY_ADDRESSES) : null;
  if (notify && !notify.ok) problem("notify_me", notify.reason);

  if (problems.length) return { ok: false, problems };
  return {
    ok: true,
    request: {
      contactsSource,
      md5,
      checkRowcount,
      listName,
      campaignName,
      subject,
      senderName,
      senderEmail,
      tags: tags ?? [],
      scheduleLocal,
      sendAt,
      sourceFile,
      sourceHtml,
      notify: notify?.ok ? notify.value : [],
    },
  };
}

/** The addresses of notify_me when they are usable, even if the rest of the request is not. */
export function notifyAddresses(data: unknown): string[] {
  if (typeof data !== "object" || data === null) return [];
  const value = (data as Record<string, unknown>).notify_me;
  if (typeof value !== "string") return [];
  const addresses = parseAddressList(value, MAX_NOTIFY_ADDRESSES);
  return addresses.ok ? addresses.value : [];
}

function pathOf(url: string): string {
  try {
    return decodeOrKeep(new URL(url).pathname);
  } catch {
    return url;
  }
}

/** The file name at the end of a URL or zip entry path. */
export function fileNameOf(pathOrUrl: string): string {
  const path = /^https?:/i.test(pathOrUrl) ? pathOf(pathOrUrl) : pathOrUrl;
  return path.split("/").pop() ?? path;
}

/** The row count embedded in `<name>_<rows>.csv`, or null when the name has none. */
export function rowcountInFileName(name: string): number | null {
  const match = /_(\d+)\.csv$/i.exec(name);
  return match ? Number(match[1]) : null;
}

/** `YYYY-MM-DD HH:mm:SS` in the zone: the schedule_date form. */
function formatLocal(epochMs: number, timeZone: string): string {
  return formatLocalIso(epochMs, timeZone).replace("T", " ");
}

export type HeaderCheck = { ok: true; header: string[] } | { ok: false; message: string };

/**
 * The header rows of every CSV of the upload: identical across files (same names, same
 * order), known to the panel's schema and holding the primary key.
 */
export function checkCsvHeaders(
  files: ReadonlyArray<{ name: string; header: string[] }>,
  known: (name: string) => boolean,
  primaryKey: string,
): HeaderCheck {
  const first = files[0];
  if (!first) return { ok: false, message: "the upload holds no .csv file" };
  const canonical = (header: string[]) => header.map((h) => canonicalAttributeName(h));
  const expected = canonical(first.header);
  for (const file of files.slice(1)) {
    const header = canonical(file.header);
    if (header.length !== expected.length || header.some((h, i) => h !== expected[i])) {
      return {
        ok: false,
        message: `every csv file must have the same header: ${file.name} has "${file.header.join(",")}" but ${first.name} has "${first.header.join(",")}"`,
      };
    }
  }
  const empty = expected.filter((h) => h === "");
  if (empty.length) return { ok: false, message: `the csv header of ${first.name} has an empty column name` };
  const duplicates = expected.filter((h, i) => expected.indexOf(h) !== i);
  if (duplicates.length) return { ok: false, message: `the csv header names ${duplicates.join(", ")} more than once` };
  const unknown = first.header.filter((h) => !known(canonicalAttributeName(h)));
  if (unknown.length) {
    return { ok: false, message: `the csv header has attributes that do not exist in the panel: ${unknown.join(", ")}` };
  }
  if (!expected.includes(primaryKey)) return { ok: false, message: `the csv header must contain the panel's primary key ${primaryKey}` };
  return { ok: true, header: expected };
}
