import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { insertMessageStatement } from "../../src/store/journeys/messages";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";
import { countersOf, cronAllAt, cronAt, createWebhook, delivered, helloPauseLater, messagesOf, MINUTE, startJourney } from "../support/journeys";
import { importCsv } from "../support/imports";
import { instancesOn, keyOn, settledOnBoth, shard0, textsOn, TWO } from "../support/partitions";

// Decision 0038 steps 3/4 for journeys: a panel split over two partitions, buckets 0–2047 on
// SHARD_0 and 2048–4095 on SHARD_1 (its home). A running journey's definition is mirrored on
// SHARD_0; each contact's instance, points and step runs are on its own shard, its webhook
// steps fire once per contact, its delay's timer fires on both shards, and its counters sum them.

/** The status of the journey's copy on `db` (null: none there). */
async function journeyOn(db: ShardDb, journeyId: string): Promise<string | null> {
  return db.prepare("SELECT status FROM journeys WHERE id = ?").bind(journeyId).first<string>("status");
}

/** The entry scan's cursor of the journey's row on `db` (null: none going). */
async function scanOn(db: ShardDb, journeyId: string): Promise<number | null> {
  return db.prepare("SELECT scan_cursor FROM journeys WHERE id = ?").bind(journeyId).first<number | null>("scan_cursor");
}

const HELLO = (hook: string) => [{ id: "hello", type: "webhook", webhook: hook, params: { Action: "hello" } }];

/** The contacts the webhook's "hello" calls named, by key, in order: one each when every contact entered once. */
async function hellos(hook: { id: string; bucket: string }): Promise<string[]> {
  const events = (await delivered(hook)).filter((e) => e.custom_params.Action === "hello");
  return events.map((e) => e.event_params.identity).sort();
}

/** Stopping the journey ends k0's instance on SHARD_0 and k1's on the home, and stops its copy there. */
async function stopEndsOnBoth(panel: TestPanel, journey: { id: string; path: string }, k0: string, k1: string): Promise<void> {
  const stopped = await admin("POST", `${journey.path}/status`, { status: "stopped" });
  expect(stopped.status).toBe(200);
  expect(stopped.body.counters).toMatchObject({ entered: 2, active: 0, exited: 2 });
  expect(await journeyOn(shard0, journey.id)).toBe("stopped");
  expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: exited`]);
  expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: exited`]);
}

async function partitioned(panel: TestPanel): Promise<void> {
  const mapped = await setPartitionMap(env, panel.id, TWO);
  expect(mapped.ok, JSON.stringify(mapped)).toBe(true);
}

/** A TWO panel with a webhook: k0 and k1 (one on each shard) live in Pune, later0 and later1 in Delhi. */
async function puneAndDelhiOnBoth() {
  const panel = await createPanel();
  const hook = await createWebhook(panel);
  await partitioned(panel);
  const api = apiFor(panel);
  const [k0, k1, later0, later1] = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 0, 1), keyOn(panel.id, 1, 1)];
  for (const EMAIL of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Pune" } })).status).toBe(200);
  for (const EMAIL of [later0, later1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Delhi" } })).status).toBe(200);
  return { panel, hook, api, k0, k1, later0, later1 };
}

/** After the cron's tick, each of the four entered once, on its own shard, and was called once. */
async function allFourEnteredOnce(
  { panel, hook, journey, k0, k1, later0, later1 }: Omit<Awaited<ReturnType<typeof puneAndDelhiOnBoth>>, "api"> & { journey: { path: string } },
  tick: (at: number) => Promise<unknown>,
): Promise<void> {
  await eventually(async () => ((await countersOf(journey)).entered === 4 ? true : undefined));
  await tick(Date.now());
  expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`, `${later0}: completed`].sort());
  expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`, `${later1}: completed`].sort());
  expect(await hellos(hook)).toEqual([k0, k1, later0, later1].sort());
  expect(await countersOf(journey)).toMatchObject({ entered: 4, completed: 4 });
}

describe("journeys on a panel of two partitions (decision 0038)", () => {
  it("enters each contact on its own shard, calls the webhook once per contact, fires the delay on both shards and sums the counters", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    await partitioned(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: helloPauseLater(hook.id) });
    // Running it copied the definition onto the partition's shard.
    expect(await journeyOn(shard0, journey.id)).toBe("running");

    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const identity of [k0, k1]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);

    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: active`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: active`]);
    const first = await delivered(hook);
    expect(first.map((e) => [e.custom_params.Action, e.event_params.identity]).sort()).toEqual([["hello", k0], ["hello", k1]].sort());
    expect(await countersOf(journey)).toMatchObject({ entered: 2, active: 2, steps: { hello: { acted: 2 }, pause: { acted: 2, waiting: 2 } } });

    // The report sums each shard's aggregates.
    const report = await admin("GET", `${journey.path}/report`);
    expect(report.status).toBe(200);
    expect(report.body).toMatchObject({ entered: 2, completed: 0 });
    expect(report.body.steps.pause).toMatchObject({ waiting: 2 });

    // The per-minute cron sweeps every shard: each shard's delay fires there.
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    const all = await delivered(hook);
    expect(all.filter((e) => e.custom_params.Action === "later").map((e) => e.event_params.identity).sort()).toEqual([k0, k1].sort());
    expect(all).toHaveLength(4);
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, active: 0, completed: 2, steps: { later: { acted: 2 }, pause: { waiting: 0 } } });
  });

  it("the panel's journey messages list each contact's message from its own shard, newest first", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    await partitioned(panel);
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "nudge", type: "sms", text: "Your cart" }] });
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const identity of [k0, k1]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    const messages = await messagesOf(panel, "sms");
    expect(messages.map((m) => m.recipient).sort()).toEqual([k0, k1].sort());
    expect(messages.map((m) => m.created_at)).toEqual(messages.map((m) => m.created_at).sort().reverse());
    expect((await admin("GET", `/panels/${panel.id}/journey-messages?channel=sms&limit=1`)).body.messages).toHaveLength(1);
  });

  it("reads a sent journey email's copy from its contact's shard", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    await partitioned(panel);
    const mail = { id: "mail", type: "email", subject: "Your cart", html: "<p>Still there?</p>", sender_name: "Shop", sender_email: "shop@example.com" };
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [mail] });
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const identity of [k0, k1]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    const sent = await eventually(async () => {
      const messages = await messagesOf(panel, "email");
      return messages.length === 2 && messages.every((m) => m.status === "sent") ? messages : undefined;
    });
    for (const message of sent) {
      const copy = await admin("GET", `/panels/${panel.id}/messages/${encodeURIComponent(message.msgid)}/copy`);
      expect(copy.status, JSON.stringify(copy.body)).toBe(200);
      expect(copy.body).toMatchObject({ kind: "journey", to: message.recipient, subject: "Your cart", html: "<p>Still there?</p>" });
    }
  });

  it("a running journey is copied by the map, and stopping it ends its instances on every shard", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: helloPauseLater(hook.id) });
    await partitioned(panel);
    expect(await journeyOn(shard0, journey.id)).toBe("running");

    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const identity of [k0, k1]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, active: 2 });

    await stopEndsOnBoth(panel, journey, k0, k1);
    // The delay was cancelled on both shards: the cron calls nothing more.
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["hello", "hello"]);
  });

  it("stopping a paused journey settles its SMS and push waiting for the provider on every shard at once, with no nudge", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "add_to_cart");
    const steps = [{ id: "sms", type: "sms", text: "Back in stock" }, { id: "push", type: "bpn", text: "Back in stock", after: "sms" }];
    const stopped = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps });
    const other = await startJourney(panel, { name: "Other", trigger: { type: "activity", activity: "add_to_cart" }, steps });
    await partitioned(panel);
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const EMAIL of [k0, k1]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL } })).status).toBe(200);
    // Each contact's messages wait on its own shard, as a step with a provider leaves them (their nudges long gone).
    const waiting = async (db: ShardDb, key: string, journeyId: string) => {
      const contactId = (await db.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<number>("id"))!;
      const instanceId = `jin_${journeyId}_${contactId}`;
      for (const channel of ["sms", "bpn"] as const) {
        const message = { msgid: `${instanceId}.${channel}`, panelId: panel.id, journeyId, instanceId, stepId: channel, channel, contactId, recipient: key, content: {}, status: "sending" as const };
        await insertMessageStatement(db, { ...message, createdAt: Date.now() - 10 * MINUTE }).run();
      }
    };
    for (const journeyId of [stopped.id, other.id]) for (const [db, key] of [[shard0, k0], [panelData, k1]] as const) await waiting(db, key, journeyId);
    const statuses = async (journeyId: string) => {
      const on = (db: ShardDb) => textsOn(db, "SELECT channel || ' ' || status || COALESCE(' (' || error || ')', '') FROM journey_messages WHERE journey_id = ? ORDER BY channel", journeyId);
      return [...(await on(shard0)), ...(await on(panelData))];
    };

    expect((await admin("POST", `${stopped.path}/status`, { status: "paused" })).status).toBe(200);
    expect((await admin("POST", `${stopped.path}/status`, { status: "stopped" })).status).toBe(200);
    const skipped = ["bpn skipped (not sent: the journey was stopped)", "sms skipped (not sent: the journey was stopped)"];
    expect(await statuses(stopped.id)).toEqual([...skipped, ...skipped]);
    expect(await statuses(other.id)).toEqual(["bpn sending", "sms sending", "bpn sending", "sms sending"]);
  });

  it("a mirror's journey row from a later write is not taken back by an earlier one (status changes landing out of order)", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: helloPauseLater(hook.id) });
    await partitioned(panel);
    await shard0.prepare("UPDATE journeys SET status = 'stopped', updated_at = ? WHERE id = ?").bind(Date.now() + 60 * MINUTE, journey.id).run();
    expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);
    expect(await journeyOn(panelData, journey.id)).toBe("paused");
    expect(await journeyOn(shard0, journey.id)).toBe("stopped");
  });

  it("the map copies every version of a running journey, and an edit after it copies the new one", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const definition = { name: "Cart reminder", trigger: { type: "activity", activity: "add_to_cart" }, steps: helloPauseLater(hook.id) };
    const journey = await startJourney(panel, definition);
    const renamed = { ...definition, steps: helloPauseLater(hook.id).map((s) => (s.id === "hello" ? { ...s, params: { Action: "hi" } } : s)) };
    expect((await admin("PUT", journey.path, renamed)).body).toMatchObject({ version: 2 });
    await partitioned(panel);
    const versionsOn = async (db: ShardDb) =>
      (await db.prepare("SELECT version FROM journey_versions WHERE journey_id = ? ORDER BY version").bind(journey.id).all<{ version: number }>()).results.map((r) => r.version);
    expect(await versionsOn(shard0)).toEqual([1, 2]);

    expect((await admin("PUT", journey.path, definition)).body).toMatchObject({ version: 3 });
    expect(await versionsOn(shard0)).toEqual([1, 2, 3]);
    expect(await shard0.prepare("SELECT version FROM journeys WHERE id = ?").bind(journey.id).first<number>("version")).toBe(3);

    // A copy that missed version 3 (its write failed after the home's) is repaired by the edit sent again.
    await shard0.batch([
      shard0.prepare("DELETE FROM journey_versions WHERE journey_id = ? AND version = 3").bind(journey.id),
      shard0.prepare("UPDATE journeys SET version = 2 WHERE id = ?").bind(journey.id),
    ]);
    expect((await admin("PUT", journey.path, definition)).body).toMatchObject({ version: 3 });
    expect(await versionsOn(shard0)).toEqual([1, 2, 3]);
    expect(await shard0.prepare("SELECT version FROM journeys WHERE id = ?").bind(journey.id).first<number>("version")).toBe(3);
  });

  it("a list's journey enters a contact added to the list on its own shard", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await partitioned(panel);
    const api = apiFor(panel);
    const listid = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
    const journey = await startJourney(panel, { trigger: { type: "list", listid }, steps: [{ id: "hello", type: "webhook", webhook: hook.id, params: { Action: "hello" } }] });
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const EMAIL of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL }, listid: String(listid) })).status).toBe(200);
    // The membership's trigger left each entry on the contact's shard; the write's reaction entered it there.
    await eventually(async () => ((await instancesOn(shard0, panel.id)).length && (await instancesOn(panelData, panel.id)).length ? true : undefined));
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["hello", "hello"]);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, completed: 2 });
  });

  it("a segment journey enters its matching contacts on each shard when it starts, and those who come to match later there, once each", async () => {
    const { panel, hook, api, k0, k1, later0, later1 } = await puneAndDelhiOnBoth();
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: HELLO(hook.id) });
    // Starting it scanned each shard's contacts with that shard's copy.
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);
    expect(await scanOn(shard0, journey.id)).toBeNull();

    // A contact that comes to match enters on its own shard; one that matched already does not enter again.
    for (const EMAIL of [later0, later1]) expect((await api("contact", "update", { data: { EMAIL, CITY: "Pune" } })).status).toBe(200);
    for (const EMAIL of [k0, k1]) expect((await api("contact", "update", { data: { EMAIL, NAME: "Still Pune" } })).status).toBe(200);
    await allFourEnteredOnce({ panel, hook, journey, k0, k1, later0, later1 }, cronAt);
  });

  it("a saved segment's journey enters each shard's members when it starts, and a contact entering the segment later on its shard, once each", async () => {
    const { panel, hook, api, k0, k1, later0, later1 } = await puneAndDelhiOnBoth();
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(segment.status).toBe(201);
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}`)).body.members === 2 ? true : undefined));
    const journey = await startJourney(panel, { trigger: { type: "segment", segment: segment.body.id }, steps: HELLO(hook.id) });
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);

    // Entering the segment on its shard (the membership's trigger there) enters the journey there.
    for (const EMAIL of [later0, later1]) expect((await api("contact", "update", { data: { EMAIL, CITY: "Pune" } })).status).toBe(200);
    await allFourEnteredOnce({ panel, hook, journey, k0, k1, later0, later1 }, cronAllAt);
  });

  it("a new version of a running journey with a segment trigger scans each shard again, from its first contact", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await partitioned(panel);
    const api = apiFor(panel);
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const EMAIL of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Goa" } })).status).toBe(200);
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: HELLO(hook.id) });
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
    const edited = await admin("PUT", journey.path, { name: "Cart reminder", trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Goa" }] }, steps: HELLO(hook.id) });
    expect(edited.status).toBe(200);
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);
    expect(await hellos(hook)).toEqual([k0, k1].sort());
  });

  it("the contacts an event pipeline pass creates enter a segment journey on the shard that made them", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    await partitioned(panel);
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "EMAIL", op: "exists" }] }, steps: HELLO(hook.id) });
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const identity of [k0, k1]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    await eventually(async () => ((await countersOf(journey)).entered === 2 ? true : undefined));
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`]);
    expect(await hellos(hook)).toEqual([k0, k1].sort());
  });

  it("a bulk upload has a segment journey scan every shard again, where the rows it wrote enter", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await partitioned(panel);
    const api = apiFor(panel);
    const [k0, k1, new0, new1] = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 0, 1), keyOn(panel.id, 1, 1)];
    for (const EMAIL of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Delhi" } })).status).toBe(200);
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: HELLO(hook.id) });
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
    await importCsv(panel, `EMAIL,CITY\n${[k0, k1, new0, new1].map((k) => `${k},Pune`).join("\n")}\n`);
    await cronAllAt(Date.now());
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: completed`, `${new0}: completed`].sort());
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: completed`, `${new1}: completed`].sort());
    expect(await hellos(hook)).toEqual([k0, k1, new0, new1].sort());
  });

  it("a running segment journey is copied by the map with a scan of its own there, enters contacts on both shards, and stopping it ends its instances on both", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: helloPauseLater(hook.id) });
    await partitioned(panel);
    expect(await journeyOn(shard0, journey.id)).toBe("running");
    expect(await scanOn(shard0, journey.id)).toBe(0);
    // That shard's cron scans its copy; run late, as a slow clock's would, it leaves the copy's
    // updated_at (the home's) as it was, so the stop below still reaches the copy.
    await cronAt(Date.now() + 60 * MINUTE);
    expect(await scanOn(shard0, journey.id)).toBeNull();

    const api = apiFor(panel);
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const EMAIL of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Pune" } })).status).toBe(200);
    await eventually(async () => ((await countersOf(journey)).entered === 2 ? true : undefined));
    expect(await instancesOn(shard0, panel.id)).toEqual([`${k0}: active`]);
    expect(await instancesOn(panelData, panel.id)).toEqual([`${k1}: active`]);

    await stopEndsOnBoth(panel, journey, k0, k1);
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["hello", "hello"]);
  });

  it("a panel without a map runs its journey on its home as before", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: helloPauseLater(hook.id) });
    expect(await journeyOn(shard0, journey.id)).toBeNull();
    expect((await postActivity(panel.clientId, { activityid: cart, identity: "solo@example.com" })).status).toBe(200);
    await settledOnBoth(panel.id);
    expect(await instancesOn(panelData, panel.id)).toEqual(["solo@example.com: active"]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 1 });
  });

  it("an operator's SMS stop and its lift reach every shard, where each contact's journey sends read them", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const stopsOn = async (db: ShardDb) => (await db.prepare("SELECT phone || ' ' || reason AS r FROM sms_suppressions WHERE panel_id = ?").bind(panel.id).all<{ r: string }>()).results.map((r) => r.r);
    expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/14155550123`)).status).toBe(200);
    expect([await stopsOn(shard0), await stopsOn(panelData)]).toEqual([["14155550123 operator"], ["14155550123 operator"]]);
    expect((await admin("DELETE", `/panels/${panel.id}/sms/suppressions/14155550123`)).status).toBe(200);
    expect([await stopsOn(shard0), await stopsOn(panelData)]).toEqual([[], []]);
    expect((await admin("DELETE", `/panels/${panel.id}/sms/suppressions/14155550123`)).status).toBe(404);
  });
});
