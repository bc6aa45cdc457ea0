import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { admin, apiFor, createPanel, panelData } from "../support/helpers";
import { keyOn, keysOn, membersOn, shard0, TWO } from "../support/partitions";

// Decision 0038 step 3 and 0041: a panel split over two partitions, buckets 0–2047 on SHARD_0
// and 2048–4095 on SHARD_1 (its home). The API's calls by contact key go to the key's partition;
// the lists and attributes they name are mirrored there; list counts sum the partitions.

async function counterOn(db: ShardDb, panelId: string, listId: number): Promise<number | undefined> {
  return (await db.prepare("SELECT member_count AS n FROM lists WHERE panel_id = ? AND id = ?").bind(panelId, listId).first<{ n: number }>())?.n;
}

describe("a panel on two partitions (decision 0038 step 3)", () => {
  it("writes, reads, updates and removes each contact on its key's shard, and lists/getall sums the partitions' counts", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const a = (await api("lists", "add", { listname: "A" })).body.listid as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const b = (await api("lists", "add", { listname: "B" })).body.listid as number;
    const [k0, k1, k1b] = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 1, 1)];

    expect((await api("contact", "add", { data: { EMAIL: k0 }, listid: `${a},${b}` })).status).toBe(200);
    expect((await api("contact", "add", { data: { EMAIL: k1 }, listid: String(a) })).status).toBe(200);
    expect((await api("contact", "add", { data: { EMAIL: k1b } })).status).toBe(200);

    // Each contact and its memberships on its own partition's shard, and nowhere else.
    expect(await keysOn(shard0, panel.id)).toEqual([k0]);
    expect(await keysOn(panelData, panel.id)).toEqual([k1, k1b].sort());
    expect(await membersOn(shard0, panel.id)).toEqual([`${k0} in ${a}`, `${k0} in ${b}`]);
    expect(await membersOn(panelData, panel.id)).toEqual([`${k1} in ${a}`]);
    // Each shard's list row counts its own members.
    expect([await counterOn(shard0, panel.id, a), await counterOn(panelData, panel.id, a)]).toEqual([1, 1]);

    // Read through the API from either partition.
    const view0 = await api("contact", "view", { data: k0 });
    expect(view0.status).toBe(200);
    expect(view0.body).toMatchObject({ contact: { EMAIL: k0 }, lists: [{ id: a, listname: "A" }, { id: b, listname: "B" }] });
    expect((await api("contact", "view", { data: k1 })).body).toMatchObject({ contact: { EMAIL: k1 }, lists: [{ id: a, listname: "A" }] });

    // lists/getall: the sum of the partitions' counters.
    const counts = async () => Object.fromEntries(((await api("lists", "getall")).body.lists as Array<{ listname: string; count: number }>).map((l) => [l.listname, l.count]));
    expect(await counts()).toEqual({ A: 2, B: 1 });
    // A rename answers the list with its summed count, and the mirror's name follows.
    expect((await api("lists", "edit", { id: a, listname: "All" })).body.list).toMatchObject({ listname: "All", count: 2 });
    expect((await api("contact", "view", { data: k0 })).body.lists).toEqual([{ id: a, listname: "All" }, { id: b, listname: "B" }]);

    // Updates reach the contact where it lives; a new attribute made by the write is the panel's everywhere.
    expect((await admin("PATCH", `/panels/${panel.id}`, { unknown_attributes: "create" })).status).toBe(200);
    const updated = await api("contact", "update", { data: { EMAIL: k0, PLAN: "gold" } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ contact: { EMAIL: k0, PLAN: "gold" }, created: ["PLAN"] });
    for (const db of [shard0, panelData]) {
      expect(await db.prepare("SELECT type FROM attributes WHERE panel_id = ? AND name = 'PLAN'").bind(panel.id).first("type")).toBe("string");
    }
    expect(JSON.parse((await shard0.prepare("SELECT attrs FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, k0).first<{ attrs: string }>())!.attrs)).toMatchObject({ PLAN: "gold" });
    expect((await api("contact", "update", { data: { EMAIL: "nobody@example.com", PLAN: "x" } })).status).toBe(404);

    // Removing from a list: on the contact's partition; the sums follow.
    expect((await api("contact", "delete", { data: k0, listid: String(b) })).body).toMatchObject({ removed_from: [b] });
    expect(await membersOn(shard0, panel.id)).toEqual([`${k0} in ${a}`]);
    expect(await counts()).toEqual({ All: 2, B: 0 });

    // The admin API's contact page and list view read the same places.
    expect((await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(k0)}`)).body).toMatchObject({ key: k0, lists: [{ id: a, name: "All" }] });
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body.lists.map((l: { name: string; count: number }) => [l.name, l.count])).toEqual([["All", 2], ["B", 0]]);

    // Emptying a list clears every partition, and answers what all of them had.
    expect((await api("lists", "emptylist", { listname: "All" })).body).toMatchObject({ removed: 2 });
    expect([...(await membersOn(shard0, panel.id)), ...(await membersOn(panelData, panel.id))]).toEqual([]);
    expect(await counts()).toEqual({ All: 0, B: 0 });
  });

  it("leaves a panel without a map on its home shard, as before", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const a = (await api("lists", "add", { listname: "A" })).body.listid as number;
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    for (const key of [k0, k1]) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(a) })).status).toBe(200);
    expect(await keysOn(panelData, panel.id)).toEqual([k0, k1].sort());
    expect(await keysOn(shard0, panel.id)).toEqual([]);
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ?").bind(panel.id).first("n")).toBe(0);
    expect((await api("lists", "getall")).body.lists).toMatchObject([{ listname: "A", count: 2 }]);
  });
});
