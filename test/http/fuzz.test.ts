import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN_ROUTES } from "../../src/admin";
import { OPERATIONS } from "../../src/api/registry";
import { defineActivity } from "../support/activity";
import { apiFor, createPanel, type TestPanel, panelData } from "../support/helpers";
import { createWebhook } from "../support/webhooks";

/**
 * A few hundred generated malformed requests across every envelope operation and every admin
 * route. Each must answer below 500, every 4xx in its documented shape naming what is wrong,
 * and none may change anything: a digest of the panel's tables is the same before and after
 * each request. The generator is seeded (FUZZ_SEED=<n> npx vitest run test/http/fuzz.test.ts
 * repeats a run); a failure prints the seed and the request.
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

/** Every table that holds the panel's data, read whole: the same digest means nothing changed. */
async function digest(panelId: string): Promise<string> {
  const tablesOf = async (db: D1Database) =>
    (await db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%panel_id%' ORDER BY name").all<{ name: string }>()).results
      .map((r) => r.name)
      .filter((name) => /^[a-z_0-9]+$/.test(name));
  // The control database's rows of the panel (users, roles), then its shard's.
  const shardTables = new Set(await tablesOf(panelData));
  const controlTables = (await tablesOf(env.DB)).filter((name) => !shardTables.has(name));
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
    if (!fieldsNamed(body.errors)) return "errors[] without field and reason";
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
    let before = await digest(panel.id);
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
      const after = await digest(panel.id);
      if (after !== before) failures.push(`${label}: changed the panel's data (${response.status})`);
      before = after;
    }
    console.log(`fuzz seed ${SEED}: ${generated.length} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures, `seed ${SEED}: repeat with FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);
});
