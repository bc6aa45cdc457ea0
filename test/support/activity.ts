import { expect } from "vitest";
import { admin, call, panelSnapshot, type TestPanel, panelData } from "./helpers";
import type { ShardDb } from "../../src/store/shards";

/** Defines an activity in the panel through the admin API; returns its activityid. */
export async function defineActivity(panel: TestPanel, name: string, params: Record<string, unknown> = {}): Promise<string> {
  const created = await admin("POST", `/panels/${panel.id}/activities`, { name, params });
  expect(created.status).toBe(201);
  return created.body.activityid;
}

export interface PostOptions {
  version?: string;
  headers?: Record<string, string>;
  query?: string;
  /** Sent as is (a string) instead of JSON-encoding `body`. */
  raw?: boolean;
  method?: string;
}

async function post(kind: "singleactivity" | "batch", clientId: string, body: unknown, options: PostOptions = {}) {
  const response = await call(`/${options.version ?? "v1"}/activity/${kind}/${encodeURIComponent(clientId)}${options.query ?? ""}`, {
    method: options.method ?? "POST",
    headers: { "content-type": "application/json", ...options.headers },
    body: options.method === "GET" ? undefined : options.raw ? (body as string) : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

export const postActivity = (clientId: string, body: unknown, options?: PostOptions) => post("singleactivity", clientId, body, options);

/** Activity API v2: `POST /v1/activity/upload` with the key as a Bearer header (unless `apiKey` is null). */
export async function postUpload(apiKey: string | null, body: unknown, options: PostOptions = {}) {
  const response = await call(`/${options.version ?? "v1"}/activity/upload${options.query ?? ""}`, {
    method: options.method ?? "POST",
    headers: { "content-type": "application/json", ...(apiKey === null ? {} : { authorization: `Bearer ${apiKey}` }), ...options.headers },
    body: options.method === "GET" ? undefined : options.raw ? (body as string) : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}
export const postBatch = (clientId: string, body: unknown, options?: PostOptions) => post("batch", clientId, body, options);

/** A contact's events as the admin API lists them, once the pipeline took in what was recorded. */
export async function contactEvents(panel: TestPanel, key: string, query = ""): Promise<{ status: number; body: any }> {
  await pipelineSettled(panel.id);
  return admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/events${query}`);
}

export async function profileEvents(panel: TestPanel, uniqueid: string, query = ""): Promise<{ status: number; body: any }> {
  await pipelineSettled(panel.id);
  return admin("GET", `/panels/${panel.id}/profiles/${encodeURIComponent(uniqueid)}/events${query}`);
}

/**
 * Everything a panel owns including its recorded event batches, guid claims, events and
 * anonymous profiles, to assert nothing was written.
 */
export async function fullSnapshot(panelId: string): Promise<string> {
  await pipelineSettled(panelId);
  const [batches, claims, events, profiles, pairs] = await panelData.batch([
    panelData.prepare("SELECT id, events FROM event_batches WHERE panel_id = ? ORDER BY id").bind(panelId),
    panelData.prepare("SELECT guid, batch_id FROM event_guids WHERE panel_id = ? ORDER BY guid").bind(panelId),
    panelData.prepare("SELECT guid, contact_id FROM events WHERE panel_id = ? ORDER BY id").bind(panelId),
    panelData.prepare("SELECT uniqueid, contact_id FROM anon_profiles WHERE panel_id = ? ORDER BY uniqueid").bind(panelId),
    panelData.prepare("SELECT uniqueid, contact_id FROM uniqueid_contacts WHERE panel_id = ? ORDER BY uniqueid, contact_id").bind(panelId),
  ]);
  return JSON.stringify([await panelSnapshot(panelId), batches!.results, claims!.results, events!.results, profiles!.results, pairs!.results]);
}

/** The panel's stored events as rows, oldest first, once the pipeline took them in. */
export async function storedEvents(panelId: string) {
  await pipelineSettled(panelId);
  const { results } = await panelData.prepare("SELECT name, identity, uniqueid, source, params, asset_id, occurred_at FROM events WHERE panel_id = ? ORDER BY id")
    .bind(panelId)
    .all<{ name: string; identity: string | null; uniqueid: string | null; source: string | null; params: string; asset_id: string | null; occurred_at: number }>();
  return results.map((row) => ({ ...row, params: JSON.parse(row.params) as Record<string, unknown> }));
}

/** The panel's stored events, once the pipeline took in what was recorded. */
export async function eventCount(panelId: string): Promise<number> {
  await pipelineSettled(panelId);
  const row = await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panelId).first<{ n: number }>();
  return row!.n;
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Waits until the pipeline is done with every event the panel recorded: the events are rows
 * (contacts created, histories joined) and every step ran. Recording answers before that.
 */
export async function pipelineSettled(panelId: string, timeoutMs?: number): Promise<void> {
  await eventually(async () => {
    const row = await panelData.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ? AND state = 'pending'").bind(panelId).first<{ n: number }>();
    return row!.n === 0 ? true : undefined;
  }, timeoutMs);
}

/** Waits until the event with `guid` is a row on one of `dbs` (the panel's shards; the home by default) and the pipeline is done with it. */
export async function eventSettled(panelId: string, guid: string, dbs: readonly ShardDb[] = [panelData]): Promise<void> {
  await eventually(async () => {
    for (const db of dbs) {
      const row = await db
        .prepare("SELECT (SELECT b.state FROM event_batches b WHERE b.id = e.batch_id) AS batch_state FROM events e WHERE e.panel_id = ? AND e.guid = ?")
        .bind(panelId, guid)
        .first<{ batch_state: string | null }>();
      if (row && row.batch_state === null) return true;
    }
    return undefined;
  });
}
