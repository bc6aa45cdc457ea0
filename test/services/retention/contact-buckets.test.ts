import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { contactBucket } from "../../../src/domain/partitions";
import { fillBuckets, type BucketFillTuning } from "../../../src/services/retention/buckets";
import { bucketFill } from "../../../src/store/panel-partitions";
import { defineActivity, pipelineSettled, postActivity } from "../../support/activity";
import { apiFor, call, createPanel, panelData, TEST_SHARD, type TestPanel } from "../../support/helpers";
import { browserKeys, subscribeBrowserOf, webPushOn } from "../../support/push";
import { importCsv } from "../../support/imports";

/** The contact-keyed tables of shard migrations 0070 and 0110 that rows of these tests reach. */
const TABLES = ["contacts", "list_members", "events", "event_guids", "anon_profiles", "uniqueid_contacts", "push_subscriptions"] as const;

let panel: TestPanel;
let api: ReturnType<typeof apiFor>;
let activityId: string;
let listId: number;

beforeEach(async () => {
  panel = await createPanel();
  api = apiFor(panel);
  activityId = await defineActivity(panel, "visit");
  listId = (await api("lists", "add", { listname: "All" })).body.listid;
});

/** Writes a contact of every kind: added by the API, imported, made by an event, and an anonymous visitor. */
async function writeEveryKind(): Promise<void> {
  expect((await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: String(listId) })).status).toBe(200);
  expect((await importCsv(panel, "EMAIL\nbo@example.com\ncy@example.com\n", { listid: String(listId) })).status).toBe("completed");
  expect((await postActivity(panel.clientId, { activityid: activityId, identity: "dee@example.com", uniqueid: "visitor-2", guid: "g-dee" })).status).toBe(200);
  expect((await postActivity(panel.clientId, { activityid: activityId, identity: "ada@example.com" })).status).toBe(200);
  expect((await postActivity(panel.clientId, { activityid: activityId, uniqueid: "visitor-1" })).status).toBe(200);
  await pipelineSettled(panel.id);
  // Browsers: a contact's, one named by a key no contact has yet, and an anonymous visitor's.
  await webPushOn(panel);
  for (const key of ["ada@example.com", "eve@example.com"]) expect(await subscribeBrowserOf(panel, `https://push.example.net/buckets/${key}`, key)).toBe(200);
  const keys = await browserKeys();
  const anonymous = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ subscription: { endpoint: "https://push.example.net/buckets/visitor-3", keys: { p256dh: keys.p256dh, auth: keys.auth } }, uniqueid: "visitor-3" }),
  });
  expect(anonymous.status).toBe(200);
}

/** Each row's key and bucket in the panel's contact-keyed tables. */
async function buckets(): Promise<Record<string, unknown[]>> {
  const [contacts, members, events, guids, profiles, pairs, devices] = await panelData.batch<Record<string, unknown>>([
    panelData.prepare("SELECT pk_value AS key, bucket FROM contacts WHERE panel_id = ? ORDER BY pk_value").bind(panel.id),
    panelData.prepare("SELECT c.pk_value AS key, m.bucket FROM list_members m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? ORDER BY c.pk_value").bind(panel.id),
    panelData.prepare("SELECT COALESCE(identity, uniqueid) AS key, bucket FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id),
    panelData.prepare("SELECT guid AS key, bucket FROM event_guids WHERE panel_id = ? ORDER BY guid").bind(panel.id),
    panelData.prepare("SELECT uniqueid AS key, bucket FROM anon_profiles WHERE panel_id = ? ORDER BY uniqueid").bind(panel.id),
    panelData.prepare("SELECT c.pk_value AS key, u.bucket FROM uniqueid_contacts u JOIN contacts c ON c.id = u.contact_id WHERE u.panel_id = ? ORDER BY c.pk_value").bind(panel.id),
    panelData.prepare("SELECT COALESCE(contact_key, uniqueid) AS key, bucket FROM push_subscriptions WHERE panel_id = ? ORDER BY 1").bind(panel.id),
  ]);
  return {
    contacts: contacts!.results,
    members: members!.results,
    events: events!.results,
    guids: guids!.results,
    profiles: profiles!.results,
    pairs: pairs!.results,
    devices: devices!.results,
  };
}

const of = (key: string) => ({ key, bucket: contactBucket(panel.id, key) });

function expected(): Record<string, unknown[]> {
  return {
    contacts: [of("ada@example.com"), of("bo@example.com"), of("cy@example.com"), of("dee@example.com")],
    members: [of("ada@example.com"), of("bo@example.com"), of("cy@example.com")],
    events: [of("dee@example.com"), of("ada@example.com"), of("visitor-1")],
    // A claimed guid sits in its event's bucket; an anonymous profile in its uniqueid's.
    guids: [{ key: "g-dee", bucket: contactBucket(panel.id, "dee@example.com") }],
    profiles: [of("visitor-2")],
    pairs: [of("dee@example.com")],
    // A device in the bucket of the key its shard was chosen by: the contact's, else the uniqueid's.
    devices: [of("ada@example.com"), of("eve@example.com"), of("visitor-3")],
  };
}

describe("contact buckets (decision 0038)", () => {
  it("are written with every contact and copied to its rows, by the API, imports and the pipeline", async () => {
    await writeEveryKind();
    const written = await buckets();
    expect(written).toEqual(expected());
    // Not all 0: the keys spread over the buckets.
    expect(new Set(written.contacts!.map((c) => (c as { bucket: number }).bucket)).size).toBeGreaterThan(1);
  });

  it("are back-filled for rows made before them, a bounded step at a time, and a second run changes nothing", async () => {
    await writeEveryKind();
    // Rows as shard migration 0070 left them: every bucket 0, the shard's fill never started.
    await panelData.batch(TABLES.map((table) => panelData.prepare(`UPDATE ${table} SET bucket = 0 WHERE panel_id = ?`).bind(panel.id)));
    await env.DB.prepare("DELETE FROM bucket_fills WHERE shard = ?").bind(TEST_SHARD).run();
    expect((await buckets()).contacts!.every((c) => (c as { bucket: number }).bucket === 0)).toBe(true);

    // Tiny steps, so every phase takes several (the shard holds other tests' rows too).
    const tuning: BucketFillTuning = { contacts: 2, events: 3, profiles: 1, steps: 4 };
    const now = Date.now();
    let runs = 0;
    while ((await fillBuckets(env, panelData, TEST_SHARD, now, tuning)) !== "done") expect(++runs).toBeLessThan(5000);
    expect(runs).toBeGreaterThan(1);

    const filled = await buckets();
    // Event guids are not back-filled: they expire with their window.
    expect({ ...filled, guids: [] }).toEqual({ ...expected(), guids: [] });
    expect(await bucketFill(env.DB, TEST_SHARD)).toEqual({ phase: "done", cursor: null });

    // Done: a run reads the progress and writes nothing; started again, it sets the same buckets.
    expect(await fillBuckets(env, panelData, TEST_SHARD, now, tuning)).toBe("done");
    await env.DB.prepare("DELETE FROM bucket_fills WHERE shard = ?").bind(TEST_SHARD).run();
    while ((await fillBuckets(env, panelData, TEST_SHARD, now, { ...tuning, contacts: 500, events: 5000, profiles: 500 })) !== "done");
    expect(await buckets()).toEqual(filled);
  });

  it("reach the devices a finished back-fill left in bucket 0, once control migration 0076 is applied", async () => {
    await writeEveryKind();
    // As shard migration 0110 left a shard whose back-fill had finished: the devices whose owner
    // has a row on the shard took its bucket, the others (eve's key, no contact yet) kept 0.
    await panelData.prepare("UPDATE push_subscriptions SET bucket = 0 WHERE panel_id = ? AND contact_key = 'eve@example.com'").bind(panel.id).run();
    await env.DB.prepare("INSERT OR REPLACE INTO bucket_fills (shard, phase, cursor, updated_at) VALUES (?, 'done', NULL, 0)").bind(TEST_SHARD).run();
    const tuning: BucketFillTuning = { contacts: 500, events: 5000, profiles: 2, steps: 4 };
    expect(await fillBuckets(env, panelData, TEST_SHARD, Date.now(), tuning)).toBe("done");
    expect((await buckets()).devices).toContainEqual({ key: "eve@example.com", bucket: 0 });

    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0076_"))!;
    await env.DB.batch(migration.queries.map((sql) => env.DB.prepare(sql)));
    expect(await bucketFill(env.DB, TEST_SHARD)).toEqual({ phase: "profiles", cursor: '{"devices":null}' });
    let runs = 0;
    while ((await fillBuckets(env, panelData, TEST_SHARD, Date.now(), tuning)) !== "done") expect(++runs).toBeLessThan(5000);
    expect((await buckets()).devices).toEqual(expected().devices);
  });
});
