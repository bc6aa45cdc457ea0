import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap, STOP_COPIES_AFTER_MAP_MS } from "../../src/services/access/partitions";
import { stopCopiesTask } from "../../src/services/panels/stop-copies";
import { copyStopPage } from "../../src/store/panel-move/stops";
import type { ShardDb } from "../../src/store/shards";
import { runCron } from "../support/cron";
import { admin, apiFor, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { emailStopsOn, keyOn, shard0, textsOn, TWO } from "../support/partitions";

// Decision 0061: the cron copies a partitioned panel's stops its shards lack (TWO: SHARD_0, and
// SHARD_1, the home), so a segment's `reachable: email` or `reachable: sms` counted on SHARD_0
// leaves out a contact every send skips. Stops are written here as the code before wrote them: on
// one shard only, in raw SQL.

const smsStopsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT phone || ' ' || reason FROM sms_suppressions WHERE panel_id = ? ORDER BY 1", panelId);

const stopOn = (db: ShardDb, panelId: string, address: string, reason: string) =>
  db.prepare("INSERT INTO email_suppressions (panel_id, address, reason, campaign_id, created_at) VALUES (?, ?, ?, NULL, ?)").bind(panelId, address, reason, Date.now()).run();
const smsStopOn = (db: ShardDb, panelId: string, phone: string, reason: string) =>
  db.prepare("INSERT INTO sms_suppressions (panel_id, phone, reason, created_at) VALUES (?, ?, ?, ?)").bind(panelId, phone, reason, Date.now()).run();

/** The panel's contacts matching `reachable: channel`, counted as a preview and as a saved segment. */
async function reachable(panel: TestPanel, channel: "email" | "sms") {
  const match = { all: [{ reachable: channel }] };
  const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match });
  expect(counted.status, JSON.stringify(counted.body)).toBe(200);
  const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: `Reachable ${crypto.randomUUID().slice(0, 8)}`, match });
  expect(saved.status, JSON.stringify(saved.body)).toBe(201);
  return { count: counted.body.count as number, saved: saved.body.count as number };
}

/** The panel as a map set before this change left it: no pass of its own, until control migration 0077 marks it. */
async function mappedBeforeMigration(panelId: string): Promise<void> {
  await env.DB.prepare("DELETE FROM stop_copy_passes WHERE panel_id = ?").bind(panelId).run();
  const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0077_"))!;
  const marks = migration.queries.filter((q) => q.includes("INSERT INTO stop_copy_passes"));
  expect(marks).toHaveLength(1);
  await env.DB.prepare(marks[0]!).run();
}

describe("stops a partitioned panel's shards lack, copied by the cron", () => {
  it("a panel mapped before: the home's email and SMS stops and another shard's SMS stop reach the other shard, so reachable leaves those contacts out; a stop lifted before the run is not copied", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [stopped, lifted, free] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 0, 2)];
    const homeContact = keyOn(panel.id, TEST_SHARD);
    const api = apiFor(panel);
    for (const [EMAIL, MOBILE] of [[stopped, "+919800000501"], [lifted, "+919800000502"], [free, "+919800000503"], [homeContact, "+919800000504"]] as const) {
      expect((await api("contact", "add", { data: { EMAIL, MOBILE } })).status).toBe(200);
    }
    // As before stops were written on every shard: the home's email and SMS stops of contacts
    // there, and the contact's own SMS stop of the home contact's number on SHARD_0 only.
    await stopOn(panelData, panel.id, stopped, "complaint");
    await stopOn(panelData, panel.id, lifted, "unsubscribe");
    await smsStopOn(panelData, panel.id, "919800000501", "operator");
    await smsStopOn(shard0, panel.id, "919800000504", "stop");
    await mappedBeforeMigration(panel.id);
    expect(await reachable(panel, "email")).toEqual({ count: 4, saved: 4 });
    expect(await reachable(panel, "sms")).toEqual({ count: 4, saved: 4 });
    // An operator subscribes the lifted contact again before the run: its home stop goes.
    const resubscribed = await admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(lifted)}/preferences`, { email: "subscribed" });
    expect([resubscribed.status, resubscribed.body.preferences?.email]).toEqual([200, "subscribed"]);
    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${stopped} complaint`]);

    await runCron(Date.now(), [stopCopiesTask]);
    expect(await reachable(panel, "email")).toEqual({ count: 3, saved: 3 });
    expect(await reachable(panel, "sms")).toEqual({ count: 2, saved: 2 });
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${stopped} complaint`]);
    for (const db of [shard0, panelData]) expect(await smsStopsOn(db, panel.id)).toEqual(["919800000501 operator", "919800000504 stop"]);
    // The pass is done: due again only in a week.
    const pass = await env.DB.prepare("SELECT cursor, due_at FROM stop_copy_passes WHERE panel_id = ?").bind(panel.id).first<{ cursor: string | null; due_at: number }>();
    expect(pass?.cursor).toBeNull();
    expect(pass!.due_at).toBeGreaterThan(Date.now() + 6 * 86_400_000);
  });

  it("a stop the home records after a new map without copying it (a writer holding the old map) reaches the new shard once every such writer is done", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [stopped, free] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1)];
    for (const EMAIL of [stopped, free]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL } })).status).toBe(200);
    await stopOn(panelData, panel.id, stopped, "hard_bounce");

    await runCron(Date.now(), [stopCopiesTask]);
    expect(await emailStopsOn(shard0, panel.id)).toEqual([]);
    await runCron(Date.now() + STOP_COPIES_AFTER_MAP_MS + 60_000, [stopCopiesTask]);
    expect(await reachable(panel, "email")).toEqual({ count: 1, saved: 1 });
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${stopped} hard_bounce`]);
  });

  it("a pass longer than a run's budget goes on at the next run from where it stood", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const addresses = Array.from({ length: 5_600 }, (_, i) => `bulk${String(i).padStart(5, "0")}@example.com`);
    for (let i = 0; i < addresses.length; i += 100) {
      await panelData.batch(addresses.slice(i, i + 100).map((a) => panelData.prepare("INSERT INTO email_suppressions (panel_id, address, reason, created_at) VALUES (?, ?, 'unsubscribe', 0)").bind(panel.id, a)));
    }
    const copied = async () => (await shard0.prepare("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?").bind(panel.id).first<number>("n"))!;
    const at = Date.now() + STOP_COPIES_AFTER_MAP_MS + 60_000;
    await runCron(at, [stopCopiesTask]);
    expect(await copied()).toBe(5_000);
    await runCron(at + 60_000, [stopCopiesTask]);
    expect(await copied()).toBe(5_600);
  });
});

describe("a pass that fails", () => {
  it("waits five minutes where it stood, and the shard's next due pass runs meanwhile", async () => {
    const [broken, next] = [await createPanel(), await createPanel()];
    for (const panel of [broken, next]) expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    await stopOn(panelData, next.id, "next@example.com", "unsubscribe");
    const passOf = (panelId: string) => env.DB.prepare("SELECT cursor, due_at FROM stop_copy_passes WHERE panel_id = ?").bind(panelId).first<{ cursor: string | null; due_at: number }>();
    // A cursor no run can read: the broken panel's pass fails each time it is taken up.
    await env.DB.prepare("UPDATE stop_copy_passes SET cursor = '{', due_at = 0 WHERE panel_id = ?").bind(broken.id).run();
    await env.DB.prepare("UPDATE stop_copy_passes SET due_at = 1 WHERE panel_id = ?").bind(next.id).run();

    const now = Date.now();
    await runCron(now, [stopCopiesTask]);
    expect(await passOf(broken.id)).toEqual({ cursor: "{", due_at: now + 5 * 60_000 });
    expect(await emailStopsOn(shard0, next.id)).toEqual(["next@example.com unsubscribe"]);
    expect((await passOf(next.id))?.cursor).toBeNull();
  });
});

describe("a page of stop copies", () => {
  it("a stop lifted on every shard while its page is copied is taken off the target again; a stop the target holds itself stays", async () => {
    const panel = await createPanel();
    const [racing, own] = ["racing@example.com", "own@example.com"];
    await stopOn(panelData, panel.id, racing, "unsubscribe");
    await stopOn(panelData, panel.id, own, "unsubscribe");
    await stopOn(shard0, panel.id, own, "hard_bounce");
    // The lift comes between the page's read and its writes: on every shard (none yet on the target), then the home.
    let lifted = false;
    const target = new Proxy(shard0, {
      get(db, key) {
        if (key !== "batch") {
          const value = Reflect.get(db, key, db);
          return typeof value === "function" ? value.bind(db) : value;
        }
        return async (statements: D1PreparedStatement[]) => {
          if (!lifted) {
            lifted = true;
            for (const db of [shard0, panelData]) await db.prepare("DELETE FROM email_suppressions WHERE panel_id = ? AND address = ?").bind(panel.id, racing).run();
          }
          return await db.batch(statements);
        };
      },
    });
    const page = await copyStopPage(panelData, [target], "email_suppressions", panel.id, null, 500);
    expect(page).toEqual({ next: null, read: 2, added: 1 });
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${own} hard_bounce`]);
    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${own} unsubscribe`]);
  });
});
