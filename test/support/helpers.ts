import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { contactsPage, type KeyedContact } from "../../src/store/contacts";
import type { ShardDb } from "../../src/store/shards";

export const BASE = "https://api.test";
export const ADMIN_TOKEN = "test-admin-token";

export function call(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

/**
 * A request through the Worker's own fetch with parts of its env replaced, as a deployment with
 * other vars or bindings runs it (private fetches off, a MAILER that keeps what it is given, a
 * queue that records): answers once the request's background work (waitUntil) is done.
 */
export async function fetchWith(overrides: Partial<Record<keyof Env, unknown>>, request: Request): Promise<Response> {
  const { default: worker } = await import("../../src/index");
  const exec = createExecutionContext();
  const response = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, ...overrides } as Env, exec);
  await waitOnExecutionContext(exec);
  return response;
}

/** The private fetches a deployment makes: none (vitest.config.ts allows them for the loopback receiver). */
export const STRICT = { ALLOW_PRIVATE_FETCH: "false" } as const;

export interface KeptMail {
  from: string;
  to: string | string[];
  subject: string;
  text: string;
}

/** A MAILER binding that keeps what it is given, for fetchWith. */
export function keptMail(): { MAILER: SendEmail; mails: KeptMail[] } {
  const mails: KeptMail[] = [];
  return { MAILER: { send: async (message: KeptMail) => void mails.push(message) } as unknown as SendEmail, mails };
}

export async function admin<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await call(`/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T };
}

export interface TestPanel {
  id: string;
  name: string;
  apiKey: string;
  userId: string;
  clientId: string;
}

let panelCount = 0;

/**
 * The shard the panels of createPanel live on unless a test names another: the second, so that
 * code reaching for the first shard or the control database instead of the panel's own fails.
 */
export const TEST_SHARD = 1;
/** The database of TEST_SHARD, for a test's own look at a panel's rows. */
export const panelData = env.SHARD_1 as unknown as ShardDb;

/** A fresh panel with API mode on and one user whose key the test uses. */
export async function createPanel(options: { primary_key?: string; timezone?: string; name?: string; shard?: number } = {}): Promise<TestPanel> {
  const created = await admin("POST", "/panels", { name: options.name ?? `Panel ${++panelCount}`, shard: TEST_SHARD, ...options });
  if (created.status !== 201) throw new Error(`panel not created: ${JSON.stringify(created.body)}`);
  await admin("PATCH", `/panels/${created.body.id}`, { api_mode: true });
  const user = await admin("POST", `/panels/${created.body.id}/users`, { email: `owner${panelCount}@example.com` });
  return { id: created.body.id, name: created.body.name, apiKey: user.body.api_key, userId: user.body.id, clientId: created.body.client_id };
}

export type Style = "query" | "form" | "json" | "multipart" | "mixed";

/**
 * Calls the envelope the ways real clients do: everything in the query (GET), everything
 * form-encoded in the body, a JSON body, multipart, or the envelope in the query with the
 * rest form-encoded in the body ("mixed", the most common).
 */
export async function envelope<T = any>(
  params: Record<string, unknown>,
  style: Style = "mixed",
): Promise<{ status: number; body: T }> {
  const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  const envelopeKeys = ["type", "activity", "apikey"];
  let response: Response;
  if (style === "query") {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, text(v)]));
    response = await call(`/apiv2?${query}`);
  } else if (style === "json") {
    response = await call("/apiv2", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
  } else if (style === "multipart") {
    const form = new FormData();
    for (const [k, v] of Object.entries(params)) form.append(k, text(v));
    response = await call("/apiv2", { method: "POST", body: form });
  } else {
    const inQuery = style === "mixed" ? envelopeKeys : [];
    const query = new URLSearchParams(Object.entries(params).filter(([k]) => inQuery.includes(k)).map(([k, v]) => [k, text(v)]));
    const body = new URLSearchParams(Object.entries(params).filter(([k]) => !inQuery.includes(k)).map(([k, v]) => [k, text(v)]));
    response = await call(`/apiv2?${query}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: body.toString(),
    });
  }
  return { status: response.status, body: (await response.json()) as T };
}

/** Envelope call bound to one panel's key. */
export function apiFor(panel: TestPanel) {
  return (type: string, activity: string, params: Record<string, unknown> = {}, style: Style = "mixed") =>
    envelope({ type, activity, apikey: panel.apiKey, ...params }, style);
}

/** The panel's contacts (the first 1,000 by id), as the store reads them. */
export function contactsOf(panelId: string): Promise<KeyedContact[]> {
  return contactsPage(panelData, panelId, 0, 1000);
}

/** A count no store function answers (raw SQL, for a test's own question). */
export async function countRows(sql: string, ...bindings: unknown[]): Promise<number> {
  const row = await panelData.prepare(sql).bind(...bindings).first<{ n: number }>();
  return row?.n ?? 0;
}

/** A snapshot of everything a panel owns, to assert that a failed call wrote nothing. */
export async function panelSnapshot(panelId: string): Promise<string> {
  const tables = await panelData.batch([
    panelData.prepare("SELECT pk_value, attrs, updated_at FROM contacts WHERE panel_id = ? ORDER BY id").bind(panelId),
    panelData.prepare("SELECT id, name, description, updated_at FROM lists WHERE panel_id = ? ORDER BY id").bind(panelId),
    panelData.prepare("SELECT list_id, contact_id FROM list_members WHERE panel_id = ? ORDER BY list_id, contact_id").bind(panelId),
    panelData.prepare("SELECT name, type FROM attributes WHERE panel_id = ? ORDER BY name").bind(panelId),
  ]);
  return JSON.stringify(tables.map((t) => t.results));
}

/** The loopback HTTP receiver of test/node/receiver.ts, as the Worker reaches it. */
export const receiver = {
  url: (path = "") => `${env.RECEIVER_URL}${path}`,
  /** A unique bucket name per use, so tests never read each other's requests. */
  bucket: (label = "b") => `${label}-${crypto.randomUUID()}`,
  hookUrl: (bucket: string) => `${env.RECEIVER_URL}/hooks/${bucket}`,
  async putFile(name: string, body: BodyInit, contentType = "text/csv"): Promise<string> {
    const response = await fetch(`${env.RECEIVER_URL}/__files/${encodeURIComponent(name)}`, {
      method: "PUT",
      headers: { "content-type": contentType },
      body,
    });
    if (response.status !== 204) throw new Error(`receiver refused the file ${name}`);
    return `${env.RECEIVER_URL}/files/${encodeURIComponent(name)}`;
  },
  async script(
    bucket: string,
    answers: Array<{ status: number; headers?: Record<string, string>; body?: string; delayMs?: number; dripMs?: number; resetAfterBytes?: number }>,
  ): Promise<void> {
    await fetch(`${env.RECEIVER_URL}/__script/${bucket}`, { method: "POST", body: JSON.stringify(answers) });
  },
  /**
   * A URL answered as a hostile source answers (`delayMs` holds the headers back, `dripMs` sends
   * the body a byte at a time, `resetAfterBytes` resets the connection mid-body), with its bucket.
   */
  async hostile(file: string, answer: { status?: number; headers?: Record<string, string>; body: string; delayMs?: number; dripMs?: number; resetAfterBytes?: number }): Promise<{ url: string; bucket: string }> {
    const bucket = receiver.bucket("hostile");
    const type = file.endsWith(".html") ? "text/html" : "text/csv";
    await receiver.script(bucket, [{ status: 200, ...answer, headers: { "content-type": type, ...answer.headers } }]);
    return { url: `${receiver.hookUrl(bucket)}/${file}`, bucket };
  },
  async requests(bucket: string): Promise<Array<{ method: string; path: string; headers: Record<string, string>; body: string; bodyBase64: string; at: number }>> {
    return (await fetch(`${env.RECEIVER_URL}/__requests/${bucket}`)).json();
  },
};

/** A public https origin: a deployment that sends real email must have one as PUBLIC_BASE_URL. */
export const PUBLIC_HTTPS = "https://links.example.com";

/** Waits until the panel's job (import, export) is completed or failed; returns it as the admin API shows it. */
export async function jobFinished(panel: TestPanel, jobId: string): Promise<any> {
  for (let i = 0; i < 300; i++) {
    const job = (await admin("GET", `/panels/${panel.id}/jobs/${jobId}`)).body;
    if (job.status === "completed" || job.status === "failed") return job;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`job ${jobId} of panel ${panel.id} did not finish`);
}

/** `text` as Excel's "Unicode Text" saves it: UTF-16LE after its byte order mark. */
export function utf16le(text: string): Uint8Array {
  const bytes = new Uint8Array(2 + text.length * 2);
  bytes.set([0xff, 0xfe]);
  for (let i = 0; i < text.length; i++) {
    bytes[2 + 2 * i] = text.charCodeAt(i) & 0xff;
    bytes[3 + 2 * i] = text.charCodeAt(i) >> 8;
  }
  return bytes;
}
