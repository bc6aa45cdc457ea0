import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ID_RANGE_PLACEHOLDERS, ID_RANGE_SIZE, idFloorStatements } from "../../src/store/id-ranges";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { startJourney } from "../support/journeys";
import { admin, apiFor, createPanel, type TestPanel } from "../support/helpers";

// Decision 0030: shard k hands out ids from k * 2^40. This file has its own storage; the test
// setup applied the floors (test/setup/apply-migrations.ts), as `npm run migrate` does.

const shard = (n: number) => (n === 0 ? env.SHARD_0 : env.SHARD_1);
const ID_TABLES = Object.keys(ID_RANGE_PLACEHOLDERS);

/** Waits until the pipeline is done with every event the panel recorded on shard n. */
async function pipelineDone(n: number, panelId: string): Promise<void> {
  await eventually(async () => {
    const row = await shard(n).prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ? AND state = 'pending'").bind(panelId).first<{ n: number }>();
    return row!.n === 0 ? true : undefined;
  });
}

/**
 * A panel with a row in every table that hands out ids, all made through the real routes: a
 * list (its id as the client got it), contacts added to it through the envelope, events, a
 * segment that has members, a list journey the contacts entered, the audit entries of it all.
 */
async function fill(n: number) {
  const panel = await createPanel({ shard: n });
  const api = apiFor(panel);
  const added = await api("lists", "add", { listname: "Fans" });
  expect(added.body.result).toBe("Success");
  const listid = added.body.listid;
  expect(typeof listid).toBe("number");
  await startJourney(panel, { trigger: { type: "list", listid }, steps: [{ id: "pause", type: "delay", for: "1h" }] });
  // The id the client got, sent back as text (query and form) and as a JSON number.
  expect((await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: String(listid) }, "query")).body.result).toBe("Success");
  expect((await api("contact", "add", { data: { EMAIL: "bob@example.com" }, listid: String(listid) }, "form")).body.result).toBe("Success");
  expect((await api("contact", "add", { data: { EMAIL: "cy@example.com" }, listid: [listid] }, "json")).body.result).toBe("Success");
  const activityid = await defineActivity(panel, "cart");
  for (const identity of ["ada@example.com", "ada@example.com", "bob@example.com"]) {
    expect((await postActivity(panel.clientId, { activityid, identity, activity_source: "web" })).status).toBe(200);
  }
  await pipelineDone(n, panel.id);
  const segment = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Everyone", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@example.com" }] } })).body;
  await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${segment.id}`)).body.building ? undefined : true));
  // Each contact entered the journey and waits at its delay.
  await eventually(async () => {
    const row = await shard(n).prepare("SELECT COUNT(*) AS n FROM journey_points WHERE panel_id = ? AND kind = 'delay'").bind(panel.id).first<{ n: number }>();
    return row!.n === 3 ? true : undefined;
  });
  return { panel, listid: listid as number, segmentId: segment.id as string };
}

/** Every id the panel's rows hold in each table that hands them out, and the list entries its journey instances name. */
async function idsOf(n: number, panelId: string): Promise<Record<string, number[]>> {
  const ids: Record<string, number[]> = {};
  for (const table of ID_TABLES) {
    const { results } = await shard(n).prepare(`SELECT id FROM ${table} WHERE panel_id = ? ORDER BY id`).bind(panelId).all<{ id: number }>();
    ids[table] = results.map((row) => row.id);
  }
  // Entries and batches are deleted once taken in: an instance's entry key names its entry, an event its batch.
  const { results } = await shard(n).prepare("SELECT entry_key FROM journey_instances WHERE panel_id = ?").bind(panelId).all<{ entry_key: string }>();
  ids.journey_list_entries!.push(...results.map((row) => Number(row.entry_key.split(":")[3])));
  const batches = await shard(n).prepare("SELECT DISTINCT batch_id FROM events WHERE panel_id = ?").bind(panelId).all<{ batch_id: number }>();
  ids.event_batches!.push(...batches.results.map((row) => row.batch_id));
  return ids;
}

/** Every row of every table of a shard but sqlite_sequence, in a fixed order. */
async function shardDump(n: number): Promise<string> {
  const { results: tables } = await shard(n)
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%' ORDER BY name")
    .all<{ name: string }>();
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables) dump[name] = (await shard(n).prepare(`SELECT * FROM "${name}"`).all()).results.map((row) => JSON.stringify(row)).sort();
  return JSON.stringify(dump);
}

/** Rows of shard n that name the placeholders' panel '' (what a trigger counting a placeholder would leave). */
async function placeholderTraces(n: number): Promise<Record<string, number>> {
  const { results: tables } = await shard(n).prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name").all<{ name: string }>();
  const traces: Record<string, number> = {};
  for (const { name } of tables) {
    const { results: columns } = await shard(n).prepare(`PRAGMA table_info("${name}")`).all<{ name: string }>();
    if (!columns.some((c) => c.name === "panel_id")) continue;
    const row = await shard(n).prepare(`SELECT COUNT(*) AS n FROM "${name}" WHERE panel_id = ''`).first<{ n: number }>();
    if (row!.n) traces[name] = row!.n;
  }
  return traces;
}

async function sequences(n: number): Promise<Record<string, number>> {
  const { results } = await shard(n).prepare("SELECT name, seq FROM sqlite_sequence ORDER BY name").all<{ name: string; seq: number }>();
  return Object.fromEntries(results.map((row) => [row.name, row.seq]));
}

async function applyFloors(n: number, shardIndex: number): Promise<void> {
  await shard(n).batch(idFloorStatements(shardIndex).map((sql) => shard(n).prepare(sql)));
}

describe("id ranges per shard", () => {
  let first: Awaited<ReturnType<typeof fill>>;
  let second: Awaited<ReturnType<typeof fill>>;

  it("hands out the ids of a panel on SHARD_1 from 2^40, and a panel's on SHARD_0 as before", async () => {
    first = await fill(0);
    second = await fill(1);
    const small = await idsOf(0, first.panel.id);
    const large = await idsOf(1, second.panel.id);
    for (const table of ID_TABLES) {
      expect(small[table]!.length, table).toBeGreaterThan(0);
      expect(large[table]!.length, table).toBeGreaterThan(0);
      for (const id of small[table]!) expect(id, table).toBeLessThan(ID_RANGE_SIZE);
      for (const id of large[table]!) {
        expect(id, table).toBeGreaterThan(ID_RANGE_SIZE);
        expect(id, table).toBeLessThan(2 * ID_RANGE_SIZE);
      }
    }
    // Lists are numbered per panel from 1 on every shard (CONTRACT 10, migration 0058).
    expect(first.listid).toBe(1);
    expect(second.listid).toBe(1);
    expect(await sequences(1)).toMatchObject(Object.fromEntries(ID_TABLES.map((t) => [t, expect.any(Number)])));
  });

  it("gives the client cursors past 2^40 and its list id as JSON numbers that every later call takes back", async () => {
    const { panel, listid, segmentId } = second;
    const api = apiFor(panel);
    const view = await api("contact", "view", { data: "ada@example.com" });
    expect(view.body.lists).toEqual([{ id: listid, listname: "Fans" }]);
    expect((await api("lists", "getall")).body.lists).toMatchObject([{ id: listid, count: 3 }]);
    expect((await api("contact", "delete", { data: "cy@example.com", listid: `${listid},${listid}` })).body.removed_from).toEqual([listid]);
    expect((await admin("PATCH", `/panels/${panel.id}/lists/${listid}`, { name: "Fans", description: "Renamed by id" })).body).toMatchObject({ id: listid, count: 2 });
    const members = await admin("GET", `/panels/${panel.id}/lists/${listid}/members?limit=1`);
    expect(members.status).toBe(200);
    expect(Number(members.body.next_cursor)).toBeGreaterThan(ID_RANGE_SIZE);
    const rest = await admin("GET", `/panels/${panel.id}/lists/${listid}/members?limit=1&after=${members.body.next_cursor}`);
    expect(rest.body.members.map((m: { key: string }) => m.key)).toEqual(["bob@example.com"]);
    // Pages that continue after a contact id or an event id.
    const page = await admin("GET", `/panels/${panel.id}/segments/${segmentId}/contacts?limit=1`);
    expect(Number(page.body.next_cursor)).toBeGreaterThan(ID_RANGE_SIZE);
    const next = await admin("GET", `/panels/${panel.id}/segments/${segmentId}/contacts?limit=1&cursor=${page.body.next_cursor}`);
    expect(next.status).toBe(200);
    expect(next.body.contacts).toHaveLength(1);
    const events = await admin("GET", `/panels/${panel.id}/contacts/ada%40example.com/events?limit=1`);
    expect(events.body.next_cursor).toEqual(expect.any(String));
    const more = await admin("GET", `/panels/${panel.id}/contacts/ada%40example.com/events?limit=1&cursor=${events.body.next_cursor}`);
    expect(more.status).toBe(200);
    expect(more.body.events).toHaveLength(1);
    // Any exact integer (below 2^53) is a list id, found or not; past it the answer says which field.
    const largest = await api("contact", "add", { data: { EMAIL: "x@example.com" }, listid: String(2 ** 53 - 1) });
    expect([largest.status, largest.body.errors[0].field]).toEqual([404, "listid"]);
    const beyond = await api("contact", "add", { data: { EMAIL: "x@example.com" }, listid: String(2 ** 53) });
    expect([beyond.status, beyond.body.errors[0].field]).toEqual([400, "listid"]);
    expect((await admin("PATCH", `/panels/${panel.id}/lists/${2 ** 53}`, { name: "Fans" })).status).toBe(400);
    expect((await admin("PATCH", `/panels/${panel.id}/lists/${2 ** 53 - 1}`, { name: "Fans" })).status).toBe(404);
  });

  it("moves a shard's floor without changing any row, and applying the floors again changes nothing", async () => {
    // The floors the test setup set on the empty shard left nothing behind.
    expect(await placeholderTraces(1)).toEqual({});
    const before = await shardDump(1);
    // The aggregates hold counts of the journey and the segment (fill): a placeholder counted anywhere would show.
    for (const table of ["journey_stats", "journey_step_waiting", "segment_members", "segment_changes", "list_members"]) expect(JSON.parse(before)[table].length, table).toBeGreaterThan(0);
    await applyFloors(1, 1);
    expect(await shardDump(1)).toBe(before);
    const sequencesBefore = await sequences(1);
    // A higher floor runs every placeholder insert and delete on a shard whose aggregates
    // (journey stats, waiting counts, segment changes...) hold counts: none of them moves.
    await applyFloors(1, 2);
    expect(await shardDump(1)).toBe(before);
    const moved = await sequences(1);
    for (const table of ID_TABLES) expect(moved[table], table).toBe(2 * ID_RANGE_SIZE);
    await applyFloors(1, 2);
    await applyFloors(1, 1);
    expect(await sequences(1)).toEqual(moved);
    expect(await shardDump(1)).toBe(before);
    expect(await placeholderTraces(1)).toEqual({});
    for (const table of ID_TABLES) expect(sequencesBefore[table], table).toBeGreaterThan(ID_RANGE_SIZE);
    // New rows continue from the new floor; lists have none, the panel's next is 2.
    const api = apiFor(second.panel as TestPanel);
    const list = (await api("lists", "add", { listname: "Later" })).body.listid;
    expect(list).toBe(2);
    await api("contact", "add", { data: { EMAIL: "later@example.com" } });
    const contact = await shard(1).prepare("SELECT id FROM contacts WHERE pk_value = 'later@example.com'").first<{ id: number }>();
    expect(contact!.id).toBe(2 * ID_RANGE_SIZE + 1);
  });
});
