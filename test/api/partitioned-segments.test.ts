import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelOwningShards, setPartitionMap } from "../../src/services/access/partitions";
import { estimateAudience } from "../../src/services/broadcasts/audience-estimate";
import { recheckArchived } from "../../src/services/segments/archived-events";
import { segmentsCron } from "../../src/services/segments/membership";
import type { EventRow } from "../../src/store/events";
import type { ShardDb } from "../../src/store/shards";
import { defineActivity, eventually, postBatch } from "../support/activity";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, jobFinished, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { keyOn, shard0, textsOn, TWO, settledOnBoth as settled } from "../support/partitions";

// Decision 0038 steps 3, 4 and 6 for saved segments: a panel split over two partitions, buckets
// 0–2047 on SHARD_0 and 2048–4095 on SHARD_1 (its home). The definitions are the home's and
// mirrored on SHARD_0; each contact's memberships live on its own shard, built and kept there;
// what the panel shows sums or merges both.

/** The segment's members on `db`, by contact key. */
const membersOn = (db: ShardDb, segmentId: string) => textsOn(db, "SELECT c.pk_value FROM segment_members m JOIN contacts c ON c.id = m.contact_id WHERE m.segment_id = ? ORDER BY c.pk_value", segmentId);

/** The segment's row on `db` (null when the shard has none). */
async function segmentRow(db: ShardDb, segmentId: string) {
  return db.prepare("SELECT name, definition, version, build_cursor FROM segments WHERE id = ?").bind(segmentId).first<{ name: string; definition: string; version: number; build_cursor: number | null }>();
}


/** Until the segment's members on SHARD_0 and SHARD_1 are `on0` and `on1`. */
async function membersBecome(segmentId: string, on0: string[], on1: string[]): Promise<void> {
  const want = JSON.stringify([[...on0].sort(), [...on1].sort()]);
  await eventually(async () => (JSON.stringify([await membersOn(shard0, segmentId), await membersOn(panelData, segmentId)]) === want ? true : undefined));
}

interface Split {
  panel: TestPanel;
  cart: string;
  /** Two keys on each shard: [first on SHARD_0, second on SHARD_0, first on SHARD_1, second on SHARD_1]. */
  keys: [string, string, string, string];
}

/** A panel on TWO with a Pune and a Goa contact on each shard, and a cart event for one contact on each. */
async function splitPanel(): Promise<Split> {
  const panel = await createPanel();
  const cart = await defineActivity(panel, "add_to_cart");
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const keys: Split["keys"] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, TEST_SHARD), keyOn(panel.id, TEST_SHARD, 1)];
  const api = apiFor(panel);
  for (const [i, key] of keys.entries()) expect((await api("contact", "add", { data: { EMAIL: key, CITY: i % 2 === 0 ? "Pune" : "Goa" } })).status).toBe(200);
  const recorded = await postBatch(panel.clientId, [keys[0], keys[3]].map((identity) => ({ activityid: cart, identity, activity_source: "web" })));
  expect(recorded.body).toMatchObject({ recorded: 2 });
  await settled(panel.id);
  return { panel, cart, keys };
}

const PUNE = { attribute: "CITY", op: "eq", value: "Pune" };
const CARTS = { activity: "add_to_cart", op: "performed" };

async function save(panel: TestPanel, name: string, condition: unknown): Promise<{ id: string; count: number }> {
  const saved = await admin("POST", `/panels/${panel.id}/segments`, { name, match: { all: [condition] } });
  expect(saved.status, JSON.stringify(saved.body)).toBe(201);
  return saved.body;
}

describe("saved segments on a panel of two partitions (decision 0038)", () => {
  it("mirrors an attribute and a behaviour segment, builds each shard's members there, and sums the counts, pages and export over both", async () => {
    const { panel, keys } = await splitPanel();
    const [a0, , a1, b1] = keys;
    const pune = await save(panel, "Pune", PUNE);
    const carts = await save(panel, "Carts", CARTS);
    // The count in the answer reads both shards.
    expect(pune.count).toBe(2);
    expect(carts.count).toBe(2);
    // The definitions are mirrored, version and all; each shard builds its own contacts' members.
    for (const id of [pune.id, carts.id]) {
      const [home, mirror] = [await segmentRow(panelData, id), await segmentRow(shard0, id)];
      expect(mirror).toMatchObject({ name: home!.name, definition: home!.definition, version: home!.version });
    }
    await membersBecome(pune.id, [a0], [a1]);
    await membersBecome(carts.id, [a0], [b1]);

    // What the panel shows: counts summed, the members page merged by contact id, paged on through both shards.
    const list = (await admin("GET", `/panels/${panel.id}/segments`)).body.segments;
    expect(list.map((s: { name: string; members: number }) => [s.name, s.members])).toEqual([["Pune", 2], ["Carts", 2]]);
    expect((await admin("GET", `/panels/${panel.id}/segments/${pune.id}`)).body).toMatchObject({ count: 2, members: 2, building: false });
    expect((await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [PUNE] } })).body).toEqual({ count: 2, count_estimated: false });
    const seen: string[] = [];
    let cursor: string | null = "";
    while (cursor !== null) {
      const page: { body: { contacts: Array<{ EMAIL: string }>; next_cursor: string | null } } = await admin("GET", `/panels/${panel.id}/segments/${carts.id}/contacts?limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.body.contacts.map((c) => c.EMAIL));
      cursor = page.body.next_cursor;
    }
    expect(seen.sort()).toEqual([a0, b1].sort());
    const history = (await admin("GET", `/panels/${panel.id}/segments/${carts.id}/history`)).body;
    expect(history.days.reduce((sum: number, d: { entered: number }) => sum + d.entered, 0)).toBe(2);

    // The export writes both shards' members, and counts them all as its total.
    const started = await call(`/admin/v1/panels/${panel.id}/segments/${pune.id}/export?attributes=CITY`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(started.status).toBe(202);
    const { jobid } = (await started.json()) as { jobid: string };
    expect(await jobFinished(panel, jobid)).toMatchObject({ status: "completed", progress: { rows: 2, total: 2 } });
    const file = await call(`/admin/v1/panels/${panel.id}/jobs/${jobid}/export.csv`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const lines = (await file.text()).split("\r\n").slice(0, -1);
    expect(lines[0]).toBe("EMAIL,CITY");
    expect(lines.slice(1).sort()).toEqual([`${a0},Pune`, `${a1},Pune`].sort());

    // A campaign audience of the segment is estimated over both shards: exact, and past the exact
    // cap from the members figures, each shard's summed.
    const estimate = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: { segments: [pune.id] } });
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    expect(estimate.body).toMatchObject({ count: 2, exact: true });
    const audience = { lists: [], segments: [pune.id], exclude_lists: [], exclude_segments: [] };
    const tuning = { exactUpTo: 1, readMembersUpTo: 1000, suppressionsUpTo: 1000, suppressionsComparedUpTo: 1000 };
    expect(await estimateAudience(panelOwningShards(env, { shard: TEST_SHARD, partitions: TWO }, panelData), panel.id, audience, Date.now(), tuning)).toMatchObject({
      ok: true,
      value: { count: 2, exact: false },
    });
  });

  it("moves membership on the contact's shard with contact writes and recorded events, and edits and deletes the mirrors", async () => {
    const { panel, cart, keys } = await splitPanel();
    const [a0, b0, a1, b1] = keys;
    const pune = await save(panel, "Pune", PUNE);
    const carts = await save(panel, "Carts", CARTS);
    await membersBecome(pune.id, [a0], [a1]);
    await membersBecome(carts.id, [a0], [b1]);

    // A contact write on SHARD_0 (not the home): the contact enters there; one leaving on SHARD_1 leaves there.
    const api = apiFor(panel);
    expect((await api("contact", "update", { data: { EMAIL: b0, CITY: "Pune" } })).status).toBe(200);
    expect((await api("contact", "update", { data: { EMAIL: a1, CITY: "Goa" } })).status).toBe(200);
    await membersBecome(pune.id, [a0, b0], []);

    // Events recorded for contacts on each shard: the segments step runs on the shard that stored them.
    const fresh = keyOn(panel.id, 0, 2);
    const recorded = await postBatch(panel.clientId, [b0, a1, fresh].map((identity) => ({ activityid: cart, identity, activity_source: "web" })));
    expect(recorded.body).toMatchObject({ recorded: 3 });
    await settled(panel.id);
    // The new identity's contact was created on SHARD_0 by the pipeline, and entered there.
    await membersBecome(carts.id, [a0, b0, fresh], [a1, b1]);
    const failed = await shard0.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ? AND state = 'failed'").bind(panel.id).first<number>("n");
    expect(failed).toBe(0);
    expect((await admin("GET", `/panels/${panel.id}/segments/${carts.id}`)).body).toMatchObject({ count: 5, members: 5 });

    // Retention moved b0's events off SHARD_0 (to R2): the sweep's re-check there, with the home's
    // activities (the mirror has none), takes b0 out and keeps a0, whose events are still there.
    const idOn0 = async (key: string) => (await shard0.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<number>("id"))!;
    const [a0Id, b0Id] = [await idOn0(a0), await idOn0(b0)];
    await shard0.prepare("DELETE FROM events WHERE panel_id = ? AND contact_id = ?").bind(panel.id, b0Id).run();
    const archived = [a0Id, b0Id].map((id) => ({ contact_id: id, channel: "custom_activity", name: "add_to_cart" }) as unknown as EventRow);
    await recheckArchived(env, shard0, panel.id, archived, Date.now());
    await membersBecome(carts.id, [a0, fresh], [a1, b1]);

    // An edit: the mirror takes the new version and both shards build it again.
    const edited = await admin("PUT", `/panels/${panel.id}/segments/${pune.id}`, { name: "Goa", match: { all: [{ ...PUNE, value: "Goa" }] } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.count).toBe(2);
    expect((await segmentRow(shard0, pune.id))?.version).toBe((await segmentRow(panelData, pune.id))!.version);
    await membersBecome(pune.id, [], [a1, b1]);

    // The cron goes on with each shard's own rows (nothing left to build here: it changes nothing).
    await segmentsCron.run(env, Date.now());
    await membersBecome(pune.id, [], [a1, b1]);

    // A delete takes the mirror and its members with it.
    const removed = await call(`/admin/v1/panels/${panel.id}/segments/${carts.id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(removed.status).toBe(204);
    expect(await segmentRow(shard0, carts.id)).toBeNull();
    expect(await membersOn(shard0, carts.id)).toEqual([]);
    expect(await membersOn(panelData, carts.id)).toEqual([]);
  });

  it("copies saved segments to the shards of a new map, and a panel without a map keeps its segments on its home alone", async () => {
    const panel = await createPanel();
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: "x@example.com", CITY: "Pune" } })).status).toBe(200);
    const pune = await save(panel, "Pune", PUNE);
    await membersBecome(pune.id, [], ["x@example.com"]);
    expect(await segmentRow(shard0, pune.id)).toBeNull();

    // A panel with segments but no contacts takes a map: its segments are copied with the configuration.
    const empty = await createPanel();
    const saved = await save(empty, "Pune", PUNE);
    expect((await setPartitionMap(env, empty.id, TWO)).ok).toBe(true);
    expect(await segmentRow(shard0, saved.id)).toMatchObject({ name: "Pune", version: 1 });
    // And back to one partition: the mirror goes.
    expect((await setPartitionMap(env, empty.id, [])).ok).toBe(true);
    expect(await segmentRow(shard0, saved.id)).toBeNull();
  });
});
