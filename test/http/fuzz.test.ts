import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN_ROUTES } from "../../src/admin";
import { OPERATIONS } from "../../src/api/registry";
import { parseRecords } from "../../src/domain/csv";
import { solveChallenge } from "../../src/domain/sign-in-challenge";
import { defineActivity, pipelineSettled } from "../support/activity";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { broadcastData, host, notificationsOf, outbox, publish, rawMessage, scheduleIn, waitForCampaign, waitForImport } from "../support/broadcasts";
import { publishTxt, uniqueDomain, verifyDkim } from "../support/dns";
import { decodeUnstructured, headerFields, parseMailbox, unsubscribeUris } from "../support/mime";
import { generateVapidKeys, sendWebPush } from "../../src/services/channels/push/web-push";
import { browserKeys, decryptPush } from "../support/push";
import { placesNaming } from "../support/erasure";
import { recordEvents } from "../../src/services/pipeline/record";
import { admin, apiFor, call, contactsOf, createPanel, fetchWith, jobFinished, keptMail, receiver, STRICT, type TestPanel, panelData } from "../support/helpers";
import { downloadErrorReport, importCsv, quietEnv, runToEnd, TIGHT_DOWNLOADS, TINY } from "../support/imports";
import { challengeFor, signInFrom } from "../support/operators";
import { createWebhook, dispatcherEnv } from "../support/webhooks";

/**
 * A few hundred generated malformed requests across every envelope operation and every admin
 * route. Each must answer below 500, every 4xx in its documented shape naming what is wrong,
 * and none may change anything: a digest of the panel's tables is the same before and after
 * each request. Then one family per defect of issue 41 that a request can reach (names that
 * resolve inside, hostile download sources, sign-in guessing, reset links, refused broadcasts,
 * mistyped API paths, formula-like cells). The generator is seeded (FUZZ_SEED=<n> npx vitest
 * run test/http/fuzz.test.ts repeats a run); a failure prints the seed and the request.
 */

const DEFAULT_SEED = 1313;
const SEED = Number(env.FUZZ_SEED) || DEFAULT_SEED;
const PER_OPERATION = 14;
const PER_ADMIN_ROUTE = 5;

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    pick<T>(items: readonly T[]): T {
      return items[Math.floor(next() * items.length)]!;
    },
    chance: (p: number) => next() < p,
  };
}
type Random = ReturnType<typeof prng>;

const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
const BAD_UTF8 = "Caf%C3%28%FF";

/** Values that are wrong wherever a JSON object of contact attributes or a broadcast request is expected. */
const BAD_OBJECTS = [
  "",
  "not json",
  "[1,2,3]",
  "null",
  "42",
  '"text"',
  "{}",
  "{",
  deep(40),
  '{"__proto__":{"EMAIL":"a@example.com"},"EMAIL":"p@example.com"}',
  '{"EMAIL":"no-at-sign"}',
  '{"EMAIL":"ok@example.com","AGE":"thirty"}',
  '{"EMAIL":"ok@example.com","NO_SUCH_ATTRIBUTE":1}',
  `{"EMAIL":"${"x".repeat(3000)}@example.com"}`,
  '{"EMAIL":"ok@example.com","NAME":{"nested":true}}',
];
/** Names that no list, activity or panel may have. */
const BAD_NAMES = ["", "   ", "a\u0000b", "line\nbreak", "esc\u001b[31m", "x".repeat(300), "\u007f"];
const BAD_IDS = ["0", "-1", "2147483648", "1.5", "abc", "1,x", "", Array.from({ length: 101 }, (_, i) => i + 1).join(",")];
const BAD_URLS = ["", "ftp://example.com/a.csv", "http://user:pw@example.com/a.csv", "not a url", "javascript:alert(1)", `https://example.com/${"a".repeat(3000)}.csv`];

interface Generated {
  label: string;
  request: Request;
  /** A read: it may succeed (malformed extras are ignored); it still must change nothing. */
  reads?: boolean;
  /** The failure shape the route documents. */
  shape: "envelope" | "broadcast" | "admin";
}

const BASE = "https://api.test";
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const JSON_TYPE = { "content-type": "application/json" };

function encodeForm(params: Record<string, string>, rnd: Random): string {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${v === BAD_UTF8 || rnd.chance(0.05) ? BAD_UTF8 : encodeURIComponent(v)}`)
    .join("&");
}

/** One request to an envelope operation with one certain defect, sent in a random way. */
function envelopeRequest(rnd: Random, type: string, activity: string, apikey: string): Generated {
  const params: Record<string, string> = {};
  const kind = `${type}/${activity}`;
  const defect = rnd.int(6);
  // Operations that change state get their required parameter broken; reading ones may get anything.
  const breakRequired = () => {
    if (kind === "contact/add" || kind === "contact/update" || kind === "email_broadcast/upload_contact_and_publish") params.data = rnd.pick(BAD_OBJECTS);
    else if (kind === "contact/delete") {
      params.data = rnd.pick(["missing@example.com", "", "{", deep(40)]);
      params.listid = rnd.pick(BAD_IDS);
    } else if (kind === "contact/bulkupload") params.path = rnd.pick(BAD_URLS);
    else if (kind === "lists/add") params.listname = rnd.pick(BAD_NAMES);
    else if (kind === "lists/edit") {
      params.id = rnd.pick(BAD_IDS);
      params.listname = rnd.pick(["Renamed", ...BAD_NAMES]);
    } else if (kind === "lists/delete" || kind === "lists/emptylist") params.listname = rnd.pick([...BAD_NAMES, "No such list"]);
    else params.data = rnd.pick([...BAD_OBJECTS, "job_nope", "missing@example.com"]);
  };
  breakRequired();
  if (rnd.chance(0.3)) params[rnd.pick(["desc", "notifyemail", "callback", "listid", "extra"])] = rnd.pick([...BAD_NAMES, ...BAD_URLS, BAD_UTF8]);
  const shape = type === "email_broadcast" ? "broadcast" : "envelope";
  const reads = ["contact/view", "contact/bulkstatus", "lists/getall"].includes(kind);
  const query = `type=${encodeURIComponent(type)}&activity=${encodeURIComponent(activity)}&apikey=${encodeURIComponent(defect === 5 ? "wrong-key" : apikey)}`;
  const url = `${BASE}/apiv2?${query}`;
  switch (rnd.int(7)) {
    case 0:
      return { label: `${kind} query ${JSON.stringify(params)}`, shape, reads, request: new Request(`${url}&${encodeForm(params, rnd)}`) };
    case 1:
      return { label: `${kind} form ${JSON.stringify(params)}`, shape, reads, request: new Request(url, { method: "POST", headers: FORM, body: encodeForm(params, rnd) }) };
    case 2: {
      const form = new FormData();
      for (const [k, v] of Object.entries(params)) form.append(k, v);
      return { label: `${kind} multipart ${JSON.stringify(params)}`, shape, reads, request: new Request(url, { method: "POST", body: form }) };
    }
    case 3: {
      // Members as JSON values where the text parses, else as the text.
      const members = Object.fromEntries(Object.entries(params).map(([k, v]) => { try { return [k, JSON.parse(v)]; } catch { return [k, v]; } }));
      return { label: `${kind} json ${JSON.stringify(members).slice(0, 300)}`, shape, reads, request: new Request(url, { method: "POST", headers: JSON_TYPE, body: JSON.stringify(members) }) };
    }
    case 4: {
      const body = rnd.pick(["{", "[]", '"x"', deep(50), `{"data":${deep(33)}}`, '{"__proto__":{"listname":"x"}}', "{\"listname\":\"a\u0000\"}"]);
      return { label: `${kind} raw json ${body.slice(0, 80)}`, shape, reads, request: new Request(url, { method: "POST", headers: JSON_TYPE, body }) };
    }
    case 5: {
      const bytes = new Uint8Array([...new TextEncoder().encode('{"listname":"Caf'), 0xc3, 0x28, ...new TextEncoder().encode('","data":"x"}')]);
      return { label: `${kind} invalid UTF-8 body`, shape, reads, request: new Request(url, { method: "POST", headers: JSON_TYPE, body: bytes }) };
    }
    default: {
      const big = "x".repeat(1024 * 1024 + 10);
      return { label: `${kind} oversized body`, shape, reads, request: new Request(url, { method: "POST", headers: FORM, body: `listname=${big}` }) };
    }
  }
}

/** Ids of real objects of the panel, so routes reach their handlers, and ids that exist nowhere. */
interface Fixture {
  panel: TestPanel;
  userId: string;
  webhookId: string;
  activityId: string;
}

const MUTATING_WITHOUT_BODY = new Set(["POST", "DELETE"]);

function adminRequest(rnd: Random, route: (typeof ADMIN_ROUTES)[number], fixture: Fixture): Generated {
  const realIds: Record<string, string> = { panel: fixture.panel.id, user: fixture.userId, id: fixture.webhookId, activity: fixture.activityId, name: "SHOE_SIZE", key: "a@example.com", uniqueid: "visitor-1" };
  // A route with no body that changes state gets an object id that does not exist (its panel may be real).
  const unknownObject = MUTATING_WITHOUT_BODY.has(route.method) && !route.body;
  const path = route.path.replace(/:(\w+)/g, (_m, name: string) => {
    const onlyPanel = !/:(?!panel)\w+/.test(route.path);
    if (name === "panel") return (unknownObject && onlyPanel) || rnd.chance(0.15) ? rnd.pick(["pnl_nope", "%E0%A4%A", "x".repeat(300)]) : fixture.panel.id;
    if (unknownObject || rnd.chance(0.4)) return encodeURIComponent(rnd.pick([`${name}_nope`, "0", "a\u0000b", "%%", "x".repeat(300)]));
    return encodeURIComponent(realIds[name] ?? `${name}_nope`);
  });
  const label = `${route.method} ${path}`;
  const headers: Record<string, string> = { authorization: "Bearer test-admin-token", ...JSON_TYPE };
  let query = "";
  if (route.query) query = `?${rnd.pick(["limit=abc", "limit=-1", "limit=1000000", "cursor=%FF%FE", "limit=1.5", "channel=" + "x".repeat(500), "kind=a%00b", "cursor=bm9wZQ"])}`;
  if (!route.body) {
    if (route.method === "GET" && !route.query && !/_nope|%|\u0000|xxxx/.test(path)) {
      // A GET without query and with real ids has nothing to break but its auth.
      delete headers.authorization;
      headers.authorization = rnd.pick(["Bearer wrong", "Basic dGVzdA==", ""]);
    }
    return { label: `${label}${query}`, shape: "admin", request: new Request(`${BASE}/admin/v1${path}${query}`, { method: route.method, headers }) };
  }
  const bodies = [
    "",
    "{",
    "[]",
    "null",
    '"text"',
    deep(40),
    '{"__proto__":{"name":"x"},"name":"Shop"}',
    `{"unknown_member_${rnd.int(1000)}":1}`,
    '{"name":"a\\u0000b","label":"a\\u0007b","email":"x@example.com","type":"string"}',
    `{"name":"${"x".repeat(5000)}","email":"${"a".repeat(10_000)}@example.com","label":"${"y".repeat(500)}"}`,
    '{"name":1,"email":true,"type":[],"api_mode":"yes","disabled":"no","status":7,"events":{},"url":5,"params":[],"steps":"x","trigger":null}',
  ];
  const pick = rnd.int(bodies.length + 1);
  const body: BodyInit =
    pick === bodies.length ? new Uint8Array([...new TextEncoder().encode('{"name":"Sh'), 0xff, ...new TextEncoder().encode('op"}')]) : bodies[pick]!;
  const shown = typeof body === "string" ? body.slice(0, 80) : "invalid UTF-8 bytes";
  return { label: `${label} body ${shown}`, shape: "admin", request: new Request(`${BASE}/admin/v1${path}${query}`, { method: route.method, headers, body }) };
}

/** The tables that hold a panel's rows: the control database's (users, roles), then its shard's. */
async function panelTables(): Promise<{ controlTables: string[]; shardTables: Set<string> }> {
  const tablesOf = async (db: D1Database) =>
    (await db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%panel_id%' ORDER BY name").all<{ name: string }>()).results
      .map((r) => r.name)
      .filter((name) => /^[a-z_0-9]+$/.test(name));
  const shardTables = new Set(await tablesOf(panelData));
  return { controlTables: (await tablesOf(env.DB)).filter((name) => !shardTables.has(name)), shardTables };
}

/**
 * Every table that holds the panel's data, read whole: the same digest means nothing changed.
 * `tables` from panelTables(), read once per run: no request changes the schema, and the
 * digest runs after each of several hundred requests.
 */
async function digest(panelId: string, { controlTables, shardTables }: { controlTables: string[]; shardTables: Set<string> }): Promise<string> {
  const reads = [
    ...(await env.DB.batch([
      env.DB.prepare("SELECT * FROM panels WHERE id = ?").bind(panelId),
      env.DB.prepare("SELECT COUNT(*) AS n FROM panels"),
      ...controlTables.map((table) => env.DB.prepare(`SELECT * FROM ${table} WHERE panel_id = ?`).bind(panelId)),
    ])),
    ...(await panelData.batch([...shardTables].map((table) => panelData.prepare(`SELECT * FROM ${table} WHERE panel_id = ?`).bind(panelId)))),
  ];
  // Rows in a fixed order whatever the table's keys.
  const text = JSON.stringify(reads.map((r) => r.results.map((row) => JSON.stringify(row)).sort()));
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function shapeProblem(shape: Generated["shape"], status: number, body: any): string | null {
  if (status >= 500) return `answered ${status}`;
  if (status < 400) return null;
  const fieldsNamed = (errors: unknown) =>
    errors === undefined ||
    (Array.isArray(errors) && errors.length > 0 && errors.every((e) => typeof e?.field === "string" && e.field !== "" && typeof e?.message === "string" && e.message !== "" && !/^Invalid input/.test(e.message)));
  if (shape === "admin") {
    if (typeof body?.error !== "string" || body.error === "") return "admin failure without an error sentence";
    // CONTRACT 4: `errors` on every admin failure, empty when no one field is at fault.
    if (!Array.isArray(body.errors)) return "admin failure without errors[]";
    if (body.errors.length > 0 && !fieldsNamed(body.errors)) return "errors[] without field and reason";
    return Object.keys(body).every((k) => k === "error" || k === "errors") ? null : "unexpected members in an admin failure";
  }
  if (shape === "broadcast") {
    const keys = Object.keys(body ?? {}).sort().join(",");
    if (keys !== "CampaignID,RequestID,message,payload,success") return `broadcast failure with members ${keys}`;
    return body.success === false && body.CampaignID === "" && typeof body.message === "string" && body.message !== "" ? null : "broadcast failure values";
  }
  if (!/^[0-9a-f]{32}$/.test(body?.requestid ?? "") || body.result !== "Failed" || typeof body.message !== "string" || body.message === "") return "envelope failure shape";
  return fieldsNamed(body.errors) ? null : "errors[] without field and reason";
}

describe(`fuzz: malformed requests change nothing and fail in the documented shape (seed ${SEED})`, () => {
  it("every envelope operation and every admin route", async () => {
    const rnd = prng(SEED);
    const panel = await createPanel();
    const list = (await apiFor(panel)("lists", "add", { listname: "Existing" })).body.listid;
    await apiFor(panel)("contact", "add", { data: { EMAIL: "a@example.com", NAME: "Ada" }, listid: String(list) });
    const activityId = await defineActivity(panel, "viewed", { name: "string" });
    const webhook = await createWebhook(panel, {}, false);
    const fixture: Fixture = { panel, userId: panel.userId, webhookId: webhook.id, activityId };

    const generated: Generated[] = [];
    for (const [type, table] of Object.entries(OPERATIONS)) {
      for (const activity of Object.keys(table)) {
        for (let i = 0; i < PER_OPERATION; i++) generated.push(envelopeRequest(rnd, type, activity, panel.apiKey));
      }
    }
    for (const route of ADMIN_ROUTES) {
      for (let i = 0; i < PER_ADMIN_ROUTE; i++) generated.push(adminRequest(rnd, route, fixture));
    }
    expect(generated.length).toBeGreaterThan(300);

    const failures: string[] = [];
    const tables = await panelTables();
    let before = await digest(panel.id, tables);
    const statuses = new Map<number, number>();
    for (const { label, request, shape, reads } of generated) {
      const response = await exports.default.fetch(request);
      const text = await response.text();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const problem = body === undefined ? `not JSON (${response.status}): ${text.slice(0, 120)}` : shapeProblem(shape, response.status, body);
      if (problem) failures.push(`${label}: ${problem} ${text.slice(0, 200)}`);
      if (response.status < 400 && request.method !== "GET" && !reads) failures.push(`${label}: a malformed request succeeded (${response.status}) ${text.slice(0, 200)}`);
      const after = await digest(panel.id, tables);
      if (after !== before) failures.push(`${label}: changed the panel's data (${response.status})`);
      before = after;
    }
    console.log(`fuzz seed ${SEED}: ${generated.length} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);
});

// Issue 41's families. Each runs its own generator (seeded from SEED and its number), so adding
// one never changes what another generates; each lists every problem it finds with its label.

const ADMIN_JSON = { authorization: "Bearer test-admin-token", ...JSON_TYPE };
const RECEIVER_PORT = new URL(env.RECEIVER_URL).port;

function envelopeCall(panel: TestPanel, type: string, activity: string, params: Record<string, string>): Request {
  const query = new URLSearchParams({ type, activity, apikey: panel.apiKey });
  return new Request(`${BASE}/apiv2?${query}`, { method: "POST", headers: FORM, body: new URLSearchParams(params).toString() });
}

function adminCall(method: string, path: string, body?: unknown): Request {
  return new Request(`${BASE}/admin/v1${path}`, { method, headers: ADMIN_JSON, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function answerOf(response: Response): Promise<{ status: number; text: string; body: any }> {
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, text, body };
}

/** Shuffled copy (Fisher-Yates with the family's generator). */
function shuffled<T>(rnd: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rnd.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const contactsCsv = (bytes: number) => {
  const rows = Array.from({ length: Math.ceil(bytes / 24) }, (_, i) => `u${i}@example.com,U${i}`);
  return `EMAIL,NAME\n${rows.join("\n")}\n`.slice(0, bytes);
};
const htmlBody = (bytes: number) => `<html><body>${"x".repeat(bytes)}</body></html>`;

/** What a name may resolve to that is not the public internet; each answer alone must be refused. */
const INSIDE_ANSWERS: ReadonlyArray<Partial<Record<"A" | "AAAA", string[]>>> = [
  { A: ["127.0.0.1"] },
  { A: ["127.45.0.9"] },
  { AAAA: ["::1"] },
  { A: ["0.0.0.0"] },
  { A: ["10.20.30.40"] },
  { A: ["172.31.255.1"] },
  { A: ["192.168.0.7"] },
  { A: ["169.254.169.254"] },
  { A: ["100.100.100.200"] },
  { AAAA: ["fd12:3456::1"] },
  { AAAA: ["fe80::1"] },
  { AAAA: ["::ffff:127.0.0.1"] },
  { AAAA: ["64:ff9b::7f00:1"] },
  // One inside answer among public ones is enough.
  { A: ["93.184.216.34"], AAAA: ["::1"] },
  { A: ["8.8.8.8", "127.0.0.1"] },
];
const GUARD_REASON = "resolves to a private, loopback or special-use address";
const OUTBOUND_KINDS = ["path", "callback", "list_import", "contacts_upload_source", "source_file", "html_url", "webhook"] as const;

/**
 * A listener on the receiver (a bucket answering `marker` as an internal service would) behind a
 * fresh name (no verdict cached) that resolves to an inside answer, written in a random way.
 */
async function insideUrl(rnd: Random, file: string, marker: string): Promise<{ url: string; bucket: string; answers: string }> {
  const bucket = receiver.bucket("inside");
  await receiver.script(bucket, [{ status: 200, headers: { "content-type": file.endsWith(".html") ? "text/html" : "text/csv" }, body: `listener,${marker}\n1,2\n` }]);
  const name = `inside-${crypto.randomUUID().slice(0, 8)}.example.com`;
  const answers = rnd.pick(INSIDE_ANSWERS);
  await publishTxt(Object.fromEntries(Object.entries(answers).map(([type, records]) => [`${name} ${type}`, records])));
  const written = rnd.pick([name, name.toUpperCase(), `${name}.`, name.replace("inside", "Inside")]);
  return { url: `http://${written}:${RECEIVER_PORT}/hooks/${bucket}/${file}`, bucket, answers: JSON.stringify(answers) };
}

const HOSTILE_MODES = ["drip", "reset", "silent"] as const;
const DOWNLOAD_KINDS = ["contacts_upload_source", "source_file", "path", "list_import"] as const;

function hostileAnswer(rnd: Random, mode: (typeof HOSTILE_MODES)[number], body: string) {
  if (mode === "drip") return { body, dripMs: rnd.pick([400, 1000, 2000]) };
  if (mode === "reset") return { body, resetAfterBytes: rnd.pick([0, 1, 18, 700, 4096]) };
  // Longer than any headers deadline (15 s for downloads during a request).
  return { body, delayMs: 20_000 };
}

/** Path heads of the API, and near misses of them; written in random case. */
const API_HEADS = ["api", "apiv2", "apiv3", "apiv1", "apiv", "apis", "api2", "v1", "v2", "v9", "v0", "v10", "v1.1", "health", "openapi", "admin", "auth"];
const API_TAILS = ["", "contacts", "x", "lists/getall", "Activity/singleactivity/c1", "activity/singleactivity/c1", "activity/batch/c1", "events/sms", "jobs", "%7e", "a/b/c", "panels", "v1", "v2/panels"];
/** Real routes' first segments under the exact API versions; a tail starting so could be routed, not mistyped. */
const ROUTED_TAILS = /^(activity|events|push|jobs|panels|sign-in|session)(\/|$)/;
const ODD_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "PROPFIND", "MKCOL", "COPY", "MOVE", "LOCK", "REPORT", "SEARCH"];

function randomCase(rnd: Random, text: string): string {
  return [...text].map((c) => (rnd.chance(0.3) ? c.toUpperCase() : c)).join("");
}

/** A mistyped API path: no route takes it as it is written. */
function mistypedPath(rnd: Random): string {
  const head = randomCase(rnd, rnd.pick(API_HEADS));
  let tail = rnd.pick(API_TAILS);
  // Exactly a version (or the admin, auth or health path) with a tail a real route starts with is not mistyped.
  if (["apiv2", "v1", "health", "openapi"].includes(head) && (tail === "" || ROUTED_TAILS.test(tail))) tail = `nope-${rnd.int(100)}`;
  if (["admin", "auth"].includes(head) && /^v1(\/|$)/.test(tail)) tail = `v1/nope-${rnd.int(100)}`;
  return `/${head}${tail ? `/${tail}` : ""}`;
}

/** Pages of the panel (not under an API prefix): only a GET or HEAD navigation gets the panel. */
const PANEL_PATHS = ["/", "/x", "/panels/pnl_1/contacts", "/reset-password", "/sign-in", "/campaigns/new"];

/** How a spreadsheet would open a cell: formula signs (ASCII and full-width) after spaces, or a leading tab or CR. */
const SPREADSHEET_SIGNS = /^[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/;
const FORMULA_BODIES = ["1+1", 'HYPERLINK("http://evil.example/","click")', "SUM(A1:A9)", "cmd|' /C calc'!A0", "2+3", "A1*2"];
const LEADING_SPACE = ["", " ", "   ", "\u3000", "\u00a0", " \u3000 "];
const SIGN_CHARS = ["=", "+", "-", "@", "\uFF1D", "\uFF0B", "\uFF0D", "\uFF20"];

function formulaCell(rnd: Random): string {
  const formula = () => `${rnd.pick(LEADING_SPACE)}${rnd.pick(SIGN_CHARS)}${rnd.pick(FORMULA_BODIES)}`;
  switch (rnd.int(5)) {
    case 0:
    case 1:
      return formula();
    case 2:
      // A `;`-separated reader starts a cell at each `;`.
      return Array.from({ length: 2 + rnd.int(3) }, (_, i) => (i > 0 && rnd.chance(0.6) ? formula() : `part${i}`)).join(";");
    case 3:
      return `${rnd.pick(["\t", "\r", "\t "])}${rnd.chance(0.5) ? formula() : "plain text"}`;
    default:
      return `${rnd.pick(["x", "Ada", "note"])};${formula()}`;
  }
}

/** Why a cell of a file written for spreadsheets would still run as a formula; null when it would not. */
function runsAsFormula(cell: string): string | null {
  if (/^[+-]?\d+(\.\d+)?$/.test(cell)) return null;
  for (const [i, part] of cell.split(";").entries()) {
    if (/^[\t\r]/.test(part)) return `part ${i} starts with a tab or CR`;
    if (SPREADSHEET_SIGNS.test(part.replace(/^\s+/, ""))) return `part ${i} starts a formula`;
  }
  return null;
}

function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  parseRecords(text, (record) => records.push(record.fields));
  return records.filter((fields) => !(fields.length === 1 && fields[0] === ""));
}

/** A CSV a client would send: every field quoted, so spaces, tabs, CRs and `;` arrive as written. */
const quotedCsv = (rows: string[][]) => rows.map((row) => row.map((field) => `"${field.replace(/"/g, '""')}"`).join(",")).join("\r\n") + "\r\n";

describe(`fuzz: issue 41's hardening (seed ${SEED})`, () => {
  it("1. names that resolve inside are refused in every outbound kind, before any connection, without the listener's content", async () => {
    const rnd = prng(SEED + 41_01);
    const panel = await createPanel();
    const list = String((await apiFor(panel)("lists", "add", { listname: "Imports" })).body.listid);
    const quiet = quietEnv(STRICT);
    const tuning = { ...TINY, download: TIGHT_DOWNLOADS };
    const failures: string[] = [];
    const cases = [...shuffled(rnd, OUTBOUND_KINDS), ...shuffled(rnd, OUTBOUND_KINDS)];
    for (const [n, kind] of cases.entries()) {
      const marker = `secret-${SEED}-${n}`;
      const first = await insideUrl(rnd, kind === "source_file" || kind === "html_url" ? "body.html" : kind === "callback" ? "done" : "contacts.csv", marker);
      const second = await insideUrl(rnd, "contacts.csv", marker);
      const label = `#${n} ${kind} ${first.url} -> ${first.answers}`;
      const seen: string[] = [];
      const refusedBy = (text: string | null | undefined, what: string) => {
        seen.push(text ?? "");
        if (!text?.includes(GUARD_REASON)) failures.push(`${label}: ${what} does not name the reason: ${String(text).slice(0, 300)}`);
      };
      /** An import job started by `request`, run as the consumer would with private fetches off. */
      const failedJob = async (request: Request) => {
        const started = await answerOf(await fetchWith(quiet.env, request));
        seen.push(started.text);
        if (started.status >= 400 && started.status < 500) return refusedBy(started.text, `the ${started.status}`);
        if (!started.body?.jobid) return void failures.push(`${label}: answered ${started.status} ${started.text.slice(0, 200)}`);
        const job = await runToEnd({ panelId: panel.id, jobId: started.body.jobid }, quiet.env, tuning);
        if (job.status !== "failed") failures.push(`${label}: the job ended ${job.status}`);
        refusedBy(job.reason, "the job's reason");
        return started.body.jobid as string;
      };
      if (kind === "path") await failedJob(envelopeCall(panel, "contact", "bulkupload", { path: first.url, notifyemail: "ops@example.com" }));
      else if (kind === "callback") {
        const jobid = await failedJob(envelopeCall(panel, "contact", "bulkupload", { path: second.url, callback: first.url }));
        if (jobid) {
          const callback = (await apiFor(panel)("contact", "bulkstatus", { data: jobid })).body.job?.callback;
          if (callback?.state !== "failed") failures.push(`${label}: the callback is ${JSON.stringify(callback)}`);
          refusedBy(callback?.error, "the callback's error");
        }
      } else if (kind === "list_import") await failedJob(adminCall("POST", `/panels/${panel.id}/lists/${list}/imports`, { url: first.url }));
      else if (kind === "contacts_upload_source" || kind === "source_file") {
        const data = await broadcastData(
          kind === "source_file" ? { contacts_upload_source: second.url, source_code: undefined, source_file: first.url } : { contacts_upload_source: first.url },
        );
        const answer = await answerOf(await fetchWith(STRICT, envelopeCall(panel, "email_broadcast", "upload_contact_and_publish", { data: JSON.stringify(data) })));
        if (answer.status !== 400 || answer.body?.success !== false) failures.push(`${label}: answered ${answer.status}`);
        refusedBy(answer.body?.message, "the answer");
      } else if (kind === "html_url") {
        const body = { name: "Inside", subject: "Hi", sender_name: "Shop", sender_email: "shop@example.com", html_url: first.url, schedule_date: scheduleIn(60 * 24 * 30), audience: { lists: [Number(list)] } };
        const answer = await answerOf(await fetchWith(STRICT, adminCall("POST", `/panels/${panel.id}/campaigns`, body)));
        if (answer.status !== 400) failures.push(`${label}: answered ${answer.status}`);
        refusedBy(answer.body?.error, "the answer");
      } else {
        // The test action runs in the webhook's dispatcher, which is given the env of the tests' Worker.
        const hook = await createWebhook(panel, { url: first.url }, false);
        await dispatcherEnv(hook.id, STRICT);
        const tested = await admin("POST", `${hook.path}/test`);
        seen.push(JSON.stringify(tested.body));
        if (tested.status !== 200 || tested.body.error !== "blocked" || tested.body.status !== null) failures.push(`${label}: the test answered ${tested.status} ${JSON.stringify(tested.body)}`);
        refusedBy(tested.body.message, "the test's message");
        const attempts = (await admin("GET", `${hook.path}/deliveries`)).body;
        seen.push(JSON.stringify(attempts));
      }
      for (const bucket of [first.bucket, second.bucket]) {
        const reached = await receiver.requests(bucket);
        if (reached.length) failures.push(`${label}: ${reached.length} request(s) reached the listener`);
      }
      if (seen.some((text) => text.includes(marker))) failures.push(`${label}: the listener's content came back`);
    }
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);

  it("2. hostile downloads (drip, reset mid-body, headers never sent) answer 4xx or fail the job with the reason, never 5xx", async () => {
    const rnd = prng(SEED + 41_02);
    const broadcasts = await createPanel();
    const imports = await createPanel();
    const list = String((await apiFor(imports)("lists", "add", { listname: "Imports" })).body.listid);
    const quiet = quietEnv();
    const tuning = { ...TINY, download: TIGHT_DOWNLOADS };
    // A source that never sends its headers holds a request 15 s: one such broadcast case, not two.
    const slowBroadcast = rnd.pick(["contacts_upload_source", "source_file"]);
    const cases = DOWNLOAD_KINDS.flatMap((kind) => HOSTILE_MODES.filter((mode) => mode !== "silent" || kind !== slowBroadcast).map((mode) => ({ kind, mode })));
    const failures: string[] = [];

    const broadcastCase = async ({ kind, mode }: (typeof cases)[number], n: number) => {
      const file = kind === "source_file" ? "body.html" : "contacts.csv";
      const size = rnd.pick([20_000, 100_000]);
      const answer = hostileAnswer(rnd, mode, file.endsWith(".html") ? htmlBody(size) : contactsCsv(size));
      const { url } = await receiver.hostile(file, answer);
      const data = await broadcastData(kind === "source_file" ? { source_code: undefined, source_file: url } : { contacts_upload_source: url });
      const label = `#${n} ${kind} ${JSON.stringify({ ...answer, body: `${answer.body.length} bytes` })}`;
      const got = await answerOf(await call(`/apiv2?type=email_broadcast&activity=upload_contact_and_publish&apikey=${broadcasts.apiKey}`, { method: "POST", headers: FORM, body: new URLSearchParams({ data: JSON.stringify(data) }).toString() }));
      if (got.status < 400 || got.status >= 500) failures.push(`${label}: answered ${got.status} ${got.text.slice(0, 200)}`);
      else if (!String(got.body?.message).includes(`data.${kind}: could not be downloaded`)) failures.push(`${label}: the answer does not name the field and reason: ${got.text.slice(0, 300)}`);
    };
    const importCase = async ({ kind, mode }: (typeof cases)[number], n: number) => {
      const answer = hostileAnswer(rnd, mode, contactsCsv(rnd.pick([20_000, 100_000])));
      const { url } = await receiver.hostile("contacts.csv", answer);
      const label = `#${n} ${kind} ${JSON.stringify({ ...answer, body: `${answer.body.length} bytes` })}`;
      const request = kind === "path" ? envelopeCall(imports, "contact", "bulkupload", { path: url }) : adminCall("POST", `/panels/${imports.id}/lists/${list}/imports`, { url });
      const started = await answerOf(await fetchWith(quiet.env, request));
      if (!started.body?.jobid) return void failures.push(`${label}: answered ${started.status} ${started.text.slice(0, 200)}`);
      const job = await runToEnd({ panelId: imports.id, jobId: started.body.jobid }, quiet.env, tuning);
      if (job.status !== "failed" || !/could not be downloaded/.test(job.reason ?? "")) failures.push(`${label}: the job ended ${job.status}: ${job.reason}`);
    };
    // Broadcasts at once (each waits on its source); the imports one after another, as one panel's jobs queue.
    const ordered = shuffled(rnd, cases).map((c, n) => ({ ...c, n }));
    await Promise.all([
      ...ordered.filter((c) => c.kind === "contacts_upload_source" || c.kind === "source_file").map((c) => broadcastCase(c, c.n)),
      (async () => {
        for (const c of ordered.filter((c) => c.kind === "path" || c.kind === "list_import")) await importCase(c, c.n);
      })(),
    ]);
    if ((await contactsOf(imports.id)).length) failures.push("a hostile source's rows were imported");
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);

  it("4. wrong passwords from many addresses never make the operator's right password fail", async () => {
    const rnd = prng(SEED + 41_04);
    const panel = await createPanel();
    const email = `fuzz-owner-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const password = "the operator's own passphrase";
    expect((await admin("POST", `/panels/${panel.id}/operators`, { email, role: "owner", password })).status).toBe(201);
    const failures: string[] = [];
    let challenged = 0;
    for (let round = 0; round < 3; round++) {
      // A persistent attacker pays for every challenge, so its guesses keep counting against the account.
      const persistent = round === 1 || rnd.chance(0.4);
      const guesses = persistent ? 12 + rnd.int(8) : 4 + rnd.int(14);
      for (let i = 0; i < guesses; i++) {
        const address = `198.18.${rnd.int(8)}.${1 + rnd.int(250)}`;
        const asked = rnd.pick([email, email.toUpperCase(), ` ${email} `]);
        const guess = rnd.pick(["x", password.toUpperCase(), `${password} `, password.slice(0, -1), "a".repeat(2000), `guess ${rnd.int(1_000_000)}`]);
        let challenge: unknown = persistent ? "solve" : rnd.pick([undefined, undefined, "not an object", { token: "abc.def", nonce: "1" }, { token: "", nonce: "" }, "solve"]);
        if (challenge === "solve") {
          // An attacker who pays for the proof of work.
          const due = await challengeFor(asked.trim());
          challenge = due.required ? { token: due.token, nonce: await solveChallenge(due.token, due.difficulty) } : undefined;
        }
        const label = `round ${round} guess ${i} from ${address}: ${JSON.stringify({ asked, guess: guess.slice(0, 40), challenge: JSON.stringify(challenge ?? null).slice(0, 40) })}`;
        const answer = await signInFrom({ email: asked, password: guess, ...(challenge === undefined ? {} : { challenge }) }, address);
        if (answer.status === 200 || answer.status >= 500 || answer.cookie) failures.push(`${label}: answered ${answer.status}${answer.cookie ? " with a session" : ""}`);
      }
      // The operator's browser, from its own address: asked for a challenge at most, then signed in.
      let answer = await signInFrom({ email, password }, "192.0.2.10");
      if (answer.status === 400 && answer.body.errors?.[0]?.field === "challenge") {
        challenged++;
        const due = await challengeFor(email);
        answer = await signInFrom({ email, password, challenge: { token: due.token, nonce: await solveChallenge(due.token, due.difficulty) } }, "192.0.2.10");
      }
      if (answer.status !== 200 || !answer.cookie) failures.push(`round ${round}: the right password answered ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    console.log(`fuzz seed ${SEED}, sign-in: the operator was asked for a challenge in ${challenged} of 3 rounds`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);

  it("5. reset links come from PUBLIC_BASE_URL whatever Host and forwarding headers the asker sends", async () => {
    const rnd = prng(SEED + 41_05);
    const panel = await createPanel();
    const hosts = ["evil.example", "EVIL.example:8443", "attacker.test", "127.0.0.1:9", "api.test.evil.example", "[::1]:8080", "xn--80ak6aa92e.com"];
    const failures: string[] = [];
    for (let i = 0; i < 6; i++) {
      // One account per request: an account is sent at most 5 links a window.
      const email = `fuzz-reset-${i}-${crypto.randomUUID().slice(0, 8)}@example.com`;
      expect((await admin("POST", `/panels/${panel.id}/operators`, { email, role: "viewer", password: "first passphrase" })).status).toBe(201);
      const asked = rnd.pick(hosts);
      const url = `${rnd.pick(["http", "https"])}://${asked}/auth/v1/password-reset`;
      const others = shuffled(rnd, hosts).slice(0, 2);
      const headers: Record<string, string> = { origin: new URL(url).origin, "content-type": "application/json", "cf-connecting-ip": `203.0.113.${100 + i}` };
      if (rnd.chance(0.7)) headers.host = asked;
      if (rnd.chance(0.5)) headers["x-forwarded-host"] = others[0]!;
      if (rnd.chance(0.5)) headers.forwarded = `host=${others[1]};proto=https`;
      if (rnd.chance(0.3)) headers["x-original-host"] = others[0]!;
      const { MAILER, mails } = keptMail();
      const response = await fetchWith({ MAILER }, new Request(url, { method: "POST", headers, body: JSON.stringify({ email }) }));
      const label = `${url} ${JSON.stringify(headers)}`;
      if (response.status !== 202) failures.push(`${label}: answered ${response.status} ${await response.text()}`);
      if (mails.length !== 1) failures.push(`${label}: ${mails.length} mails`);
      for (const mail of mails) {
        const links = mail.text.match(/https?:\/\/\S+/g) ?? [];
        if (!links.length) failures.push(`${label}: no link in the mail`);
        for (const link of links) if (!link.startsWith(`${env.PUBLIC_BASE_URL}/reset-password#token=`)) failures.push(`${label}: the mail links to ${link}`);
        for (const hostile of [asked, ...others]) if (mail.text.toLowerCase().includes(hostile.toLowerCase())) failures.push(`${label}: the mail names ${hostile}`);
      }
    }
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);

  it("6. refused broadcasts and uploads mail nothing, whatever notify_me and notifyemail say", async () => {
    const rnd = prng(SEED + 41_06);
    const panel = await createPanel();
    await apiFor(panel)("lists", "add", { listname: "Taken list" });
    const { MAILER, mails } = keptMail();
    const refusals: Record<string, () => Promise<Record<string, unknown>>> = {
      "past date": async () => ({ schedule_date: scheduleIn(-(1 + rnd.int(600))) }),
      "too soon": async () => ({ schedule_date: scheduleIn(rnd.int(80)) }),
      "malformed date": async () => ({ schedule_date: "2099-13-01 10:00:00" }),
      "no contacts": async () => ({ contacts_upload_source: undefined }),
      "no body": async () => ({ source_code: undefined }),
      "two bodies": async () => ({ source_file: await host("body.html", "<p>x</p>", "text/html") }),
      "taken list": async () => ({ list_name: "Taken list" }),
      "too many tags": async () => ({ tags: "a,b,c,d,e,f" }),
      "bad sender": async () => ({ sender_email_id: rnd.pick(["shop", "shop@", "a\\b@example.com"]) }),
      "md5 mismatch": async () => ({ contacts_upload_source_file_md5: "0".repeat(32) }),
      "missing file": async () => ({ contacts_upload_source: `${env.RECEIVER_URL}/files/missing-${crypto.randomUUID()}.csv` }),
      "source resets": async () => ({ contacts_upload_source: (await receiver.hostile("contacts.csv", { body: contactsCsv(10_000), resetAfterBytes: 10 })).url }),
      "unknown column": async () => ({ contacts_upload_source: await host("contacts.csv", "EMAIL,SHOE_SIZE\nada@example.com,9\n") }),
      "rowcount": async () => ({ check_rowcount: 1 }),
      "bad notify_me": async () => ({ notify_me: "victim@example.com, nobody" }),
    };
    const failures: string[] = [];
    for (const name of shuffled(rnd, Object.keys(refusals))) {
      const notify = Array.from({ length: 1 + rnd.int(20) }, (_, i) => `victim${i}@${rnd.pick(["example.com", "example.org"])}`).join(rnd.pick([",", ", ", ";"]));
      const data = await broadcastData({ notify_me: notify, campaign_name: rnd.pick(["Click https://spam.example now", "Win $$$ at spam.example", "Spring sale"]), ...(await refusals[name]!()) });
      const got = await answerOf(await fetchWith({ MAILER }, envelopeCall(panel, "email_broadcast", "upload_contact_and_publish", { data: JSON.stringify(data) })));
      if (got.status < 400 || got.status >= 500 || got.body?.success !== false) failures.push(`${name}: answered ${got.status} ${got.text.slice(0, 200)}`);
    }
    for (const path of ["ftp://example.com/a.csv", "not a url", `http://user:pw@example.com/a.csv`]) {
      const got = await answerOf(await fetchWith({ MAILER }, envelopeCall(panel, "contact", "bulkupload", { path, notifyemail: "victim@example.com" })));
      if (got.status !== 400) failures.push(`bulkupload ${path}: answered ${got.status}`);
    }
    if (mails.length) failures.push(`mailed ${JSON.stringify(mails.map((m) => ({ to: m.to, subject: m.subject })))}`);
    const recorded = await notificationsOf(panel);
    if (recorded.length) failures.push(`recorded ${recorded.length} notification(s)`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);

  it("7. mistyped API paths and odd methods answer the JSON Failed body with 404 or 405 from the Worker", async () => {
    const rnd = prng(SEED + 41_07);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 120; i++) {
      const api = rnd.chance(0.8);
      const path = api ? mistypedPath(rnd) : rnd.pick(PANEL_PATHS);
      // Off the API prefixes, a GET or HEAD navigation is the panel's; everything else is the Worker's answer.
      const method = api ? rnd.pick(ODD_METHODS) : rnd.pick(ODD_METHODS.filter((m) => m !== "GET"));
      const headers: Record<string, string> = {};
      const accept = rnd.pick(["text/html,application/xhtml+xml", "application/json", "*/*", ""]);
      if (accept) headers.accept = accept;
      if (api && rnd.chance(0.3)) headers["sec-fetch-mode"] = "navigate";
      const body = ["GET", "HEAD"].includes(method) || rnd.chance(0.3) ? undefined : rnd.pick(["{}", "a=1", '{"type":"contact"}']);
      if (body !== undefined) headers["content-type"] = rnd.pick(["application/json", "application/x-www-form-urlencoded"]);
      const label = `${method} ${path} ${JSON.stringify(headers)}`;
      const got = await answerOf(await call(path, { method, headers, body }));
      statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1);
      if (got.status !== 404 && got.status !== 405) {
        failures.push(`${label}: answered ${got.status} ${got.text.slice(0, 120)}`);
        continue;
      }
      // Under /admin and /auth the admin API's shape is documented; a one-segment `/Admin` or an
      // activity route's unknown version (`/Auth/activity/...`) still answers the envelope's.
      const shapes: Array<Generated["shape"]> = /^\/(admin|auth)(\/|$)/i.test(path) ? ["admin", "envelope"] : ["envelope"];
      const problems = got.body === undefined ? [`not JSON: ${got.text.slice(0, 120)}`] : shapes.map((shape) => shapeProblem(shape, got.status, got.body));
      const problem = problems.every((p) => p !== null) ? problems.join("; ") : null;
      if (problem) failures.push(`${label}: ${problem} ${got.text.slice(0, 200)}`);
    }
    console.log(`fuzz seed ${SEED}, mistyped paths: statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);

  it("8. formula-like cells are neutralised in error reports and segment exports", async () => {
    const rnd = prng(SEED + 41_08);
    const panel = await createPanel();
    const cells = Array.from({ length: 30 }, () => formulaCell(rnd));
    // Each cell twice: in a row refused for its AGE (the report echoes it) and in a contact's NAME (the export writes it).
    const rows = [["EMAIL", "NAME", "CITY", "AGE"]];
    cells.forEach((cell, i) => {
      rows.push([`refused${i}@example.com`, cell, rnd.pick(cells), "not a number"]);
      rows.push([`kept${i}@example.com`, cell, "Pune", "30"]);
    });
    // A key that starts a formula is refused and echoed too.
    rows.push([rnd.pick(cells), "Key", "Pune", "1"]);
    const failures: string[] = [];
    const check = (where: string, records: string[][]) => {
      for (const [r, fields] of records.entries()) {
        for (const [c, field] of fields.entries()) {
          const why = runsAsFormula(field);
          if (why) failures.push(`${where} line ${r + 1} cell ${c + 1} ${JSON.stringify(field)}: ${why}`);
        }
      }
    };
    const job = await importCsv(panel, quotedCsv(rows));
    const report = await downloadErrorReport(job.error_report, panel.apiKey);
    const reported = csvRecords(report.text);
    if (reported.length < cells.length + 1) failures.push(`the error report has ${reported.length} lines for ${cells.length + 1} refused rows`);
    check("error report", reported);

    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    const started = await admin("POST", `/panels/${panel.id}/segments/${segment.body.id}/export?attributes=NAME,CITY`);
    const exported = await jobFinished(panel, started.body.jobid);
    const file = await call(`/admin/v1/panels/${panel.id}/jobs/${exported.jobid}/export.csv`, { headers: ADMIN_JSON });
    const records = csvRecords(await file.text());
    if (records.length < cells.length + 1) failures.push(`the export has ${records.length} lines for ${cells.length} contacts`);
    check("segment export", records);
    console.log(`fuzz seed ${SEED}, formula cells: ${reported.length - 1} report lines, ${records.length - 1} exported contacts, e.g. ${JSON.stringify(records.slice(1, 4))}`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);
});

/** A random pick of 1 to `most` of `items`, joined by `glue`, cut to `max` characters (never inside a surrogate pair), trimmed. */
function phrase(rnd: Random, items: readonly string[], most: number, glues: readonly string[], max: number): string {
  const words = Array.from({ length: 1 + rnd.int(most) }, () => rnd.pick(items));
  const text = words.reduce((all, word, i) => (i === 0 ? word : `${all}${rnd.pick(glues)}${word}`), "");
  return Array.from(text).slice(0, max).join("").trim() || "Shop";
}

const NAME_PARTS = ["Shop", 'Best "Deals"', "(EU)", "a\\b", "O'Brien", "Zoë", "日本のお店", "Café Crème", "🎉", "<admin@evil.example>", "Bcc: x@evil.example", "=?UTF-8?B?SGk=?=", ";", ":", "@", ",", "x".repeat(90), "Sale", "'single'", "\\\"", "long name with many words in it"];
const SUBJECT_PARTS = ["Spring sale", "{{NAME|friend}}", "{{ name | there }}", "Grüße aus Köln", "=?UTF-8?B?SGk=?=", "=?iso-8859-1?q?caf=E9?=", "=?", "?=", "a".repeat(120), "日本語の件名", "ß", '"quoted"', "(paren)", "50% off", "word ".repeat(30).trim(), "🎉🎉", "Re:", "x".repeat(77)];
const CONTACT_NAMES = ["Ada", "Zoë Ünal", "Bob \"B\" Smith", "Ana\r\nBcc: victim@evil.example", "李小龍", "x".repeat(150), "O'Neil, Jr.", "=?UTF-8?B?SGk=?="];
const REPLY_LOCALS = () => ["help", "Reply+Tag", "a.b-c_d", "r", "replies.to.the.shop.team"];
const REPLY_DOMAINS = ["example.com", "EXAMPLE.org", "bücher.example", "münchen-straße.example", "sub.domain.of.a.rather.long.name.example.com"];

/** A reply-to address, at times long enough that it cannot share a line with the field's name. */
function replyTo(rnd: Random): string {
  const local = rnd.chance(0.3) ? "r".repeat(20 + rnd.int(45)) : rnd.pick(REPLY_LOCALS());
  return `${local}@${rnd.pick(REPLY_DOMAINS)}`;
}

/** An address as a header must carry it: the domain in its ASCII (punycode) form, as URL writes a host. */
const asciiAddress = (address: string) => {
  const at = address.lastIndexOf("@");
  return `${address.slice(0, at)}@${new URL(`http://${address.slice(at + 1)}`).hostname}`;
};

/** Fills `{{NAME|fallback}}` (any case and spacing) as the campaign's merge tags do. */
const fillName = (template: string, name: unknown) =>
  template.replace(/\{\{\s*name\s*(?:\|([^}]*))?\}\}/gi, (_m, fallback: string | undefined) => (typeof name === "string" && name !== "" ? name : (fallback ?? "").trim()));

const MAIL_FIELDS = new Set(["dkim-signature", "from", "to", "subject", "date", "message-id", "mime-version", "list-unsubscribe", "list-unsubscribe-post", "x-campaign-id", "x-test-send", "reply-to", "content-type"]);

interface ExpectedMail {
  name: string;
  from: string;
  to: string;
  subject: string;
  replyTo: string | null;
  unsubscribe: boolean;
}

/** What is wrong in a raw message's header section, read as a receiver would, against what was sent. */
function headerProblems(raw: string, expected: ExpectedMail): string[] {
  const problems: string[] = [];
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  if (/\r(?!\n)|(?<!\r)\n/.test(head)) problems.push("a bare CR or LF in the header section");
  if (/[^\x20-\x7e\r\n\t]/.test(head)) problems.push("a character that is not printable ASCII in the header section");
  const fields = headerFields(raw);
  const counts = new Map<string, number>();
  for (const field of fields) {
    const name = field.name.toLowerCase();
    counts.set(name, (counts.get(name) ?? 0) + 1);
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(field.name)) problems.push(`a line that starts no field: ${JSON.stringify(field.lines[0]!.slice(0, 80))}`);
    else if (!MAIL_FIELDS.has(name)) problems.push(`an unexpected field ${field.name}`);
    for (const [i, line] of field.lines.entries()) {
      if (line.length <= 78) continue;
      // The documented exception: an address or URI is never broken, so one too long for a
      // continuation line of its own (a long unsubscribe URL) makes its line longer.
      const token = (i === 0 ? line.slice(field.name.length + 1) : line).trim().replace(/,$/, "");
      const addressOrUri = /^<[^<>\s"]+>$/.test(token) || /^[^<>\s"]+@[^<>\s"]+$/.test(token);
      const unbreakable = ["from", "to", "reply-to", "list-unsubscribe"].includes(name) && addressOrUri && ` ${token}`.length > 78;
      if (!unbreakable) problems.push(`a ${line.length}-character line in ${field.name}: ${JSON.stringify(line.slice(0, 100))}`);
    }
  }
  for (const [name, n] of counts) if (n > 1 && name !== "dkim-signature") problems.push(`${n} ${name} fields`);
  const value = (name: string) => fields.find((f) => f.name.toLowerCase() === name)?.value;
  const from = parseMailbox(value("from") ?? "");
  if (!from) problems.push(`From does not parse: ${value("from")}`);
  else {
    if (from.name !== expected.name) problems.push(`From's name reads ${JSON.stringify(from.name)}, not ${JSON.stringify(expected.name)}`);
    if (from.address !== asciiAddress(expected.from)) problems.push(`From's address reads ${from.address}`);
  }
  if (value("to")?.trim() !== asciiAddress(expected.to)) problems.push(`To reads ${JSON.stringify(value("to"))}, not ${asciiAddress(expected.to)}`);
  const subject = decodeUnstructured(value("subject") ?? "");
  const sentSubject = expected.subject.replace(/[\r\n]+/g, " ").trim();
  if (subject !== sentSubject) problems.push(`Subject reads ${JSON.stringify(subject)}, not ${JSON.stringify(sentSubject)}`);
  const reply = value("reply-to")?.trim();
  if (expected.replyTo === null ? reply !== undefined : reply !== asciiAddress(expected.replyTo)) problems.push(`Reply-To reads ${JSON.stringify(reply)}, not ${expected.replyTo && asciiAddress(expected.replyTo)}`);
  const uris = unsubscribeUris(raw);
  if (expected.unsubscribe ? uris.length !== 1 || !uris[0]!.startsWith(`${env.PUBLIC_BASE_URL}/t/u/`) : uris.length !== 0) problems.push(`List-Unsubscribe holds ${JSON.stringify(uris)}`);
  return problems;
}

describe(`fuzz: issue 41's mail, push and erasure (seed ${SEED})`, () => {
  it("9. sender names, subjects and reply-to addresses: headers folded within 78, nothing injected, each read back as sent, Reply-To signed", async () => {
    const rnd = prng(SEED + 41_09);
    const panel = await createPanel();
    const domain = uniqueDomain("fuzz");
    const added = await admin("POST", `/panels/${panel.id}/sender-domains`, { domain });
    const records = Object.fromEntries((added.body.records as Array<{ purpose: string; name: string; value: string }>).map((r) => [r.purpose, r]));
    const published = { [domain]: "v=spf1 ~all", [records.dkim!.name]: records.dkim!.value, [records.dkim_ed25519!.name]: records.dkim_ed25519!.value, [`_dmarc.${domain}`]: "v=DMARC1; p=none" };
    await publishTxt(Object.fromEntries(Object.entries(published).map(([k, v]) => [k, [v]])));
    expect((await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`)).body.state).toBe("verified");

    const list = Number((await apiFor(panel)("lists", "add", { listname: "Fuzz" })).body.listid);
    const contactDomains = ["example.com", "münchen.example", `${"long".repeat(10)}.example.com`];
    for (let i = 0; i < 3; i++) {
      const email = `c${i}.${"k".repeat(rnd.int(50))}${rnd.int(1000)}@${rnd.pick(contactDomains)}`;
      const added = await apiFor(panel)("contact", "add", { data: { EMAIL: email, NAME: rnd.pick(CONTACT_NAMES) }, listid: String(list) });
      expect(added.body.result, JSON.stringify(added.body)).toBe("Success");
    }
    const contacts = (await contactsOf(panel.id)).map((c) => c.attributes as Record<string, unknown>);

    const failures: string[] = [];
    const cases: Array<{ id: string; label: string; name: string; from: string; subject: string; replyTo: string | null; testTo?: Record<string, unknown> }> = [];
    for (let n = 0; n < 8; n++) {
      // The first cases hold for certain what each guard is about: an ASCII name with quotes and
      // backslashes, a subject with an encoded-word lookalike and a word longer than a line, an
      // internationalised reply-to domain.
      const ascii = NAME_PARTS.filter((p) => /^[\x20-\x7e]+$/.test(p));
      const name = n === 0 ? `${rnd.pick(['Shop, "Best" Deals (EU)', 'a\\b "c"', '\\"Quoted\\"'])} ${phrase(rnd, ascii, 3, [" ", ", "], 150)}` : phrase(rnd, NAME_PARTS, 4, [" ", ", ", "", " - "], 200);
      const subject = `${n === 1 ? "=?UTF-8?B?SGk=?= x" + "y".repeat(80) + " " : ""}${phrase(rnd, SUBJECT_PARTS, 5, [" ", " ", ": ", ""], 800)}`;
      const reply = n === 2 ? `help@${rnd.pick(["bücher.example", "münchen-straße.example"])}` : rnd.chance(0.75) ? replyTo(rnd) : null;
      const from = `${rnd.pick(["news", "Shop.Team", "s".repeat(30 + rnd.int(35))])}@${domain}`;
      const label = `#${n} ${JSON.stringify({ name, subject: subject.slice(0, 120), reply, from })}`;
      const body = { name: `Fuzz ${n}`, subject, sender_name: name, sender_email: from, ...(reply ? { reply_to: reply } : {}), html: "<p>Hi {{NAME|there}}</p>", audience: { lists: [list] } };
      const created = await admin("POST", `/panels/${panel.id}/campaigns`, body);
      if (created.status !== 201) {
        failures.push(`${label}: answered ${created.status} ${JSON.stringify(created.body).slice(0, 300)}`);
        continue;
      }
      if (created.body.sender_name !== name || created.body.reply_to !== (reply?.toLowerCase() ?? null)) failures.push(`${label}: kept ${JSON.stringify([created.body.sender_name, created.body.reply_to])}`);
      const testTo = rnd.pick(contacts);
      const sent = await admin("POST", `/panels/${panel.id}/campaigns/${created.body.id}/test`, { email: randomCase(rnd, String(testTo.EMAIL)) });
      if (sent.status !== 200) failures.push(`${label}: the test send answered ${sent.status} ${JSON.stringify(sent.body).slice(0, 300)}`);
      cases.push({ id: created.body.id, label, name, from: from.toLowerCase(), subject, replyTo: reply?.toLowerCase() ?? null, testTo });
    }
    // Published now (no schedule_date) and sent to the list by the sends queue.
    await publishDueBroadcasts(env, Date.now());
    for (const c of cases) {
      const done = await waitForCampaign(panel, c.id);
      if (done.counters.sent !== contacts.length) failures.push(`${c.label}: sent ${JSON.stringify(done.counters)}`);
    }

    let checked = 0;
    for (const message of await outbox(panel)) {
      const c = cases.find((x) => x.id === message.campaign_id);
      if (!c) continue;
      const test = String(message.id).includes(".test.");
      const recipient = contacts.find((a) => String(a.EMAIL) === message.to)!;
      const expected: ExpectedMail = { name: c.name, from: c.from, to: String(recipient.EMAIL), subject: `${test ? "[Test] " : ""}${fillName(c.subject, recipient.NAME)}`, replyTo: c.replyTo, unsubscribe: !test };
      const raw = await rawMessage(panel, message.id);
      const where = `${c.label} ${test ? "test copy" : "sent"} to ${message.to}`;
      for (const problem of headerProblems(raw, expected)) failures.push(`${where}: ${problem}`);
      const verdicts = await verifyDkim(raw, published);
      if (verdicts.length !== 2 || verdicts.some((v) => v.result !== "pass")) failures.push(`${where}: DKIM ${JSON.stringify(verdicts.map((v) => [v.algorithm, v.result]))}`);
      // Each signature's h= names Reply-To, present or not (absent, it is signed as empty: one added on the way breaks it).
      for (const signature of headerFields(raw).filter((f) => f.name.toLowerCase() === "dkim-signature")) {
        const signed = (/(?:^|;)\s*h=([^;]*)/.exec(signature.value)?.[1] ?? "").split(":").map((h) => h.trim().toLowerCase());
        const missing = ["from", "to", "subject", "reply-to", ...(test ? [] : ["list-unsubscribe", "list-unsubscribe-post"])].filter((h) => !signed.includes(h));
        if (missing.length) failures.push(`${where}: a signature's h= leaves out ${missing.join(", ")}`);
      }
      checked++;
    }
    if (checked !== cases.length * (contacts.length + 1)) failures.push(`checked ${checked} messages for ${cases.length} campaigns`);
    console.log(`fuzz seed ${SEED}, mail headers: ${checked} messages of ${cases.length} campaigns, e.g. ${JSON.stringify(cases.slice(0, 2).map((c) => [c.name, c.subject.slice(0, 60)]))}`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);

  it("9. web push bodies are padded to the smallest of 1024, 2048, 3070 and 4096 bytes that holds them, and decrypt to the payload", async () => {
    const rnd = prng(SEED + 41_19);
    const keys = await browserKeys();
    const vapid = { subject: "mailto:ops@shop.example", ...(await generateVapidKeys()) };
    const bucket = receiver.bucket("push-service");
    const subscription = { endpoint: `${receiver.hookUrl(bucket)}/sub/fuzz`, p256dh: keys.p256dh, auth: keys.auth };
    // The body: 86 bytes of header, the JSON, the delimiter and the 16-byte tag.
    const OVERHEAD = 86 + 1 + 16;
    const BUCKETS = [1024, 2048, 3070, 4096];
    // Characters of 1 to 6 bytes of JSON (escaped quote, backslash and control character included).
    const PIECES = ["a", "é", "€", "😀", '"', "\\", "\n", "\u0001", "<", " "];
    const jsonBytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
    const payloadOf = (i: number, target: number) => {
      const payload = { msgid: `jin_fuzz${i}.bpn`, title: rnd.pick(["Shop", "Grüße", "🎉 Sale", ""]), body: "", url: rnd.pick([null, "https://shop.example/cart?x=1&y=2"]), report: "https://api.example/v1/events/bpn/c1" };
      let body = "";
      while (jsonBytes({ ...payload, body }) < target - 6) body += rnd.pick(PIECES);
      while (jsonBytes({ ...payload, body }) < target) body += "a";
      return { ...payload, body };
    };
    await receiver.script(bucket, Array.from({ length: 40 }, () => ({ status: 201 })));
    const failures: string[] = [];
    const sent: Array<{ label: string; payload: unknown }> = [];
    for (let i = 0; i < 40; i++) {
      // Sizes at each bucket's edge as often as anywhere else, and a few past the last.
      const edge = rnd.pick(BUCKETS) - OVERHEAD + rnd.pick([-1, 0, 1]);
      const target = rnd.chance(0.5) ? edge : 140 + rnd.int(3900);
      const payload = payloadOf(i, target);
      const bytes = jsonBytes(payload);
      const label = `#${i} ${bytes} bytes of JSON`;
      const result = await sendWebPush(subscription, payload, vapid, Date.now());
      if (bytes + OVERHEAD > 4096) {
        if (result.ok || result.retryable) failures.push(`${label}: ${JSON.stringify(result)} (too long for any push service)`);
        continue;
      }
      if (!result.ok) failures.push(`${label}: ${JSON.stringify(result)}`);
      const requests = await receiver.requests(bucket);
      const request = requests[sent.length];
      sent.push({ label, payload });
      if (!request) {
        failures.push(`${label}: nothing reached the push service`);
        continue;
      }
      const size = atob(request.bodyBase64).length;
      const plaintext = await decryptPush(request.bodyBase64, keys).catch((error: Error) => `undecryptable: ${error.message}`);
      const want = BUCKETS.find((b) => b >= new TextEncoder().encode(plaintext).length + OVERHEAD);
      if (size !== want) failures.push(`${label}: a body of ${size} bytes, not ${want}`);
      let decoded: unknown;
      try {
        decoded = JSON.parse(plaintext);
      } catch {
        decoded = plaintext;
      }
      if (JSON.stringify(decoded) !== JSON.stringify(payload)) failures.push(`${label}: decrypts to ${plaintext.slice(0, 120)}`);
    }
    if ((await receiver.requests(bucket)).length !== sent.length) failures.push(`${(await receiver.requests(bucket)).length} bodies for ${sent.length} payloads that fit`);
    console.log(`fuzz seed ${SEED}, web push: ${sent.length} bodies sent, ${40 - sent.length} too long`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);

  it("10. erasing a random contact leaves nothing naming it in any R2 object (its broadcast's uploaded file included) or any table", async () => {
    const rnd = prng(SEED + 41_10);
    const panel = await createPanel();
    const api = apiFor(panel);
    const lists = [];
    for (let i = 0; i < 1 + rnd.int(3); i++) lists.push(String((await api("lists", "add", { listname: `Fuzz ${i}` })).body.listid));
    // Each address and number unique in the run, so no other contact's text contains the erased one.
    const people = Array.from({ length: 5 + rnd.int(4) }, (_, i) => {
      const email = `${rnd.pick(["ada", "bob.b", "c-d", "e_f"])}${i}.${crypto.randomUUID().slice(0, 8)}@${rnd.pick(["example.com", "mail.example.org"])}`;
      const digits = `91${7 + rnd.int(3)}${String(rnd.int(1e9)).padStart(9, "0")}`;
      const written = rnd.pick([digits, `+${digits}`, `+${digits.slice(0, 2)} ${digits.slice(2, 7)} ${digits.slice(7)}`, `(+${digits.slice(0, 2)}) ${digits.slice(2, 7)}-${digits.slice(7)}`]);
      const name = rnd.pick(["Ada", 'Bob "B", Jr.', "Zoë; Ünal", "=1+1", "line\nbreak", "李"]);
      return { email, digits, written, name, city: rnd.pick(["Pune", "Köln", "São Paulo", ""]) };
    });
    for (const person of people) {
      const data: Record<string, unknown> = { EMAIL: person.email, NAME: person.name, MOBILE: person.written, AGE: rnd.int(90) };
      if (person.city) data.CITY = person.city;
      const member = shuffled(rnd, lists).slice(0, 1 + rnd.int(lists.length));
      const added = await api("contact", "add", { data, listid: member.join(",") });
      expect(added.body.result, JSON.stringify(added.body)).toBe("Success");
    }
    const victim = rnd.pick(people);

    // The broadcast's contact file: the victim one to three times, written as a careless client would.
    const quote = (field: string) => (/[",\r\n]/.test(field) || rnd.chance(0.2) ? `"${field.replace(/"/g, '""')}"` : field);
    const rowOf = (p: (typeof people)[number], self: boolean) => {
      const email = self ? rnd.pick([p.email, p.email.toUpperCase(), `  ${p.email} `, randomCase(rnd, p.email)]) : p.email;
      return [email, p.name, rnd.chance(0.6) ? p.written : "", p.city].map(quote).join(",");
    };
    const rows = [...people.filter((p) => p !== victim).map((p) => rowOf(p, false)), ...Array.from({ length: 1 + rnd.int(3) }, () => rowOf(victim, true))];
    const eol = rnd.pick(["\r\n", "\n"]);
    const csv = `EMAIL,NAME,MOBILE,CITY${eol}${shuffled(rnd, rows).join(eol)}${rnd.chance(0.5) ? eol : ""}`;
    const published = await publish(panel, await broadcastData({}, csv));
    expect(published.body.success, JSON.stringify(published.body)).toBe(true);
    expect((await waitForImport(panel, published.body.CampaignID)).status).toBe("completed");
    // A test copy to the victim in the outbox, and events of several contacts.
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${published.body.CampaignID}/test`, { email: victim.email })).status).toBe(200);
    const events = shuffled(rnd, people).slice(0, 4).concat(victim).map((p, n) => ({ channel: "custom_activity" as const, name: "view", identity: p.email, params: { n, page: rnd.pick(["/", "/cart", "/a?b=c"]) }, occurredAt: Date.now() - n * 60_000 }));
    await recordEvents(env, { id: panel.id }, events);
    await pipelineSettled(panel.id);

    const label = `victim ${JSON.stringify(victim)} among ${people.length}, csv ${JSON.stringify(csv).slice(0, 600)}`;
    const failures: string[] = [];
    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(victim.email)}`);
    if (erased.status !== 200) failures.push(`${label}: the erasure answered ${erased.status} ${JSON.stringify(erased.body)}`);
    const names = (text: string) => text.toLowerCase().includes(victim.email) || text.replace(/\D/g, "").includes(victim.digits);
    const search = await placesNaming(names);
    for (const place of search.found) failures.push(`${label}: ${place}`);
    // Nobody else was erased.
    const left = (await contactsOf(panel.id)).map((c) => String((c.attributes as Record<string, unknown>).EMAIL));
    if (left.length !== people.length - 1) failures.push(`${label}: ${left.length} contacts left of ${people.length}`);
    console.log(`fuzz seed ${SEED}, erasure: searched ${search.objects} R2 objects and ${search.rows} rows`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 60_000);
});
