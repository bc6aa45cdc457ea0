import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactBucket, evenPartitions, type Partition } from "../../src/domain/partitions";
import { partitionOfContact, partitionsOf, setPartitionMap } from "../../src/services/access/partitions";
import { findPanelHome, forgetPanelPlaces } from "../../src/services/access/shards";
import { findKeyOwner } from "../../src/store/users";
import { getPanel, updatePanel } from "../../src/store/panels";
import { startPanelMove } from "../../src/services/panels/move";
import { sha256Hex } from "../../src/lib/crypto";
import { admin, apiFor, createPanel, panelData, TEST_SHARD } from "../support/helpers";
import type { ShardDb } from "../../src/store/shards";

const shard0 = env.SHARD_0 as unknown as ShardDb;

/** The panel's lists as a shard holds them (name and the shard's own member counter). */
async function listsOn(db: ShardDb, panelId: string) {
  const { results } = await db.prepare("SELECT id, name, description, member_count AS count FROM lists WHERE panel_id = ? AND deleted_at IS NULL ORDER BY id").bind(panelId).all();
  return results;
}

async function attributesOn(db: ShardDb, panelId: string) {
  const { results } = await db.prepare("SELECT name, type FROM attributes WHERE panel_id = ? ORDER BY name").bind(panelId).all<{ name: string; type: string }>();
  return results.map((a) => `${a.name}:${a.type}`);
}

// Two shards locally (wrangler.toml: SHARD_0, SHARD_1): four partitions alternate over them.
const FOUR: Partition[] = evenPartitions([0, 1, 0, 1]);

/** A key of the panel whose bucket falls in `partition`. */
function keyIn(panelId: string, partition: Partition): string {
  for (let i = 0; ; i++) {
    const bucket = contactBucket(panelId, `user${i}@example.com`);
    if (partition.firstBucket <= bucket && bucket <= partition.lastBucket) return `user${i}@example.com`;
  }
}

describe("partitions of a panel (decision 0038)", () => {
  it("a panel without a map is one partition: every bucket on its home shard", async () => {
    const panel = (await getPanel(env.DB, (await createPanel()).id))!;
    expect(panel.partitions).toEqual([]);
    const [only, ...rest] = partitionsOf(env, panel);
    expect(rest).toEqual([]);
    expect(only).toMatchObject({ firstBucket: 0, lastBucket: 4095, shard: TEST_SHARD, state: "active" });
    expect(only!.db).toBe(env.SHARD_1);
    for (const key of ["a@example.com", "b@example.com", "visitor-9"]) expect(partitionOfContact(env, panel, key).shard).toBe(TEST_SHARD);
  });

  it("a panel given four partitions resolves each key to its bucket's shard, and every read of the directory carries the map", async () => {
    const created = await createPanel();
    const set = await setPartitionMap(env, created.id, FOUR);
    expect(set.ok).toBe(true);

    // The directory entry as the cache of panels by id, the key lookup and an update read it.
    forgetPanelPlaces();
    const home = (await findPanelHome(env, created.id))!;
    expect(home.panel.partitions).toEqual(FOUR);
    expect((await findKeyOwner(env.DB, await sha256Hex(created.apiKey)))!.panel.partitions).toEqual(FOUR);
    expect((await updatePanel(env.DB, created.id, { name: "Renamed" }, Date.now()))!.partitions).toEqual(FOUR);

    const panel = home.panel;
    expect(partitionsOf(env, panel).map((p) => [p.firstBucket, p.lastBucket, p.shard])).toEqual([
      [0, 1023, 0],
      [1024, 2047, 1],
      [2048, 3071, 0],
      [3072, 4095, 1],
    ]);
    for (const partition of FOUR) {
      const key = keyIn(panel.id, partition);
      const found = partitionOfContact(env, panel, key);
      expect(found).toMatchObject(partition);
      expect(found.db).toBe(partition.shard === 0 ? env.SHARD_0 : env.SHARD_1);
    }

    // An empty map: one partition on the home shard again.
    expect((await setPartitionMap(env, created.id, [])).ok).toBe(true);
    expect((await findPanelHome(env, created.id))!.panel.partitions).toEqual([]);
  });

  it("work naming a shard the cached entry lacks reads that panel's entry afresh, and no other panel's", async () => {
    const { panelHomeNaming } = await import("../../src/services/access/partitions");
    const { setPanelPartitions } = await import("../../src/store/panel-partitions");
    const [split, other] = [await createPanel(), await createPanel()];
    forgetPanelPlaces();
    const cachedOther = (await findPanelHome(env, other.id))!.panel;
    const { panel: before } = (await findPanelHome(env, split.id))!;
    expect(before.partitions).toEqual([]);
    // The directory gains the map (as a split's switch writes it) while this isolate holds the old entry.
    await setPanelPartitions(env.DB, split.id, FOUR);
    expect((await findPanelHome(env, split.id))!.panel.partitions).toEqual([]);
    const named = await panelHomeNaming(env, split.id, before.shard === 0 ? 1 : 0);
    expect(named.panel.partitions).toEqual(FOUR);
    // The other panel's entry is still the cached object, not read again.
    expect((await findPanelHome(env, other.id))!.panel).toBe(cachedOther);
  });

  it("refuses a map that leaves buckets out, overlaps, or names a shard the deployment lacks, and changes nothing", async () => {
    const created = await createPanel();
    const refusal = async (partitions: Partition[]) => {
      const result = await setPartitionMap(env, created.id, partitions);
      if (result.ok) throw new Error("the map was taken");
      return result.problem;
    };
    const part = (firstBucket: number, lastBucket: number, shard = 0): Partition => ({ firstBucket, lastBucket, shard, state: "active" });
    expect(await refusal([part(0, 2000), part(2002, 4095)])).toMatchObject({ kind: "invalid", fields: [{ field: "partitions", message: "buckets 2001–2001 are in no partition" }] });
    expect(await refusal([part(0, 2000), part(1999, 4095)])).toMatchObject({ fields: [{ field: "partitions", message: expect.stringContaining("overlap") }] });
    expect(await refusal([part(0, 2047), part(2048, 4095, 7)])).toMatchObject({ fields: [{ field: "partitions", message: "this deployment has no shard 7 (shards 0 to 1)" }] });
    expect((await getPanel(env.DB, created.id))!.partitions).toEqual([]);
    expect(await setPartitionMap(env, "pnl_missing", FOUR)).toMatchObject({ ok: false, problem: { kind: "not_found" } });
  });

  it("mirrors the panel's lists and attributes onto every partition shard: copied with the map, then kept in the same call as the home's change (decision 0041)", async () => {
    const created = await createPanel();
    const api = apiFor(created);
    const before = (await api("lists", "add", { listname: "Before", desc: "made first" })).body.listid as number;
    expect((await setPartitionMap(env, created.id, evenPartitions([0, TEST_SHARD]))).ok).toBe(true);
    // Copied with the map: the home's lists and attributes, each counter the shard's own.
    expect(await listsOn(shard0, created.id)).toEqual(await listsOn(panelData, created.id));
    expect(await attributesOn(shard0, created.id)).toEqual(await attributesOn(panelData, created.id));

    const after = (await api("lists", "add", { listname: "After" })).body.listid as number;
    expect(after).toBe(before + 1);
    expect((await api("lists", "edit", { id: before, listname: "Renamed", desc: "changed" })).status).toBe(200);
    const defined = await admin("PUT", `/panels/${created.id}/attributes/city`, { type: "string" });
    expect(defined.status).toBe(200);
    expect(await listsOn(shard0, created.id)).toEqual([
      { id: before, name: "Renamed", description: "changed", count: 0 },
      { id: after, name: "After", description: "", count: 0 },
    ]);
    expect(await attributesOn(shard0, created.id)).toContain("CITY:string");
    expect(await attributesOn(shard0, created.id)).toEqual(await attributesOn(panelData, created.id));

    // Deleting a list takes the mirror's row too (no members: at once).
    expect((await api("lists", "delete", { listname: "After" })).status).toBe(200);
    expect(await listsOn(shard0, created.id)).toEqual([{ id: before, name: "Renamed", description: "changed", count: 0 }]);

    // A panel with a map does not move whole (its partitions move by the split, not built).
    expect(await startPanelMove(env, (await getPanel(env.DB, created.id))!, 0, Date.now())).toMatchObject({ ok: false, problem: { kind: "conflict", fields: [{ field: "shard" }] } });

    // Back to one partition: the mirror the map left goes.
    expect((await setPartitionMap(env, created.id, [])).ok).toBe(true);
    expect(await listsOn(shard0, created.id)).toEqual([]);
    expect(await attributesOn(shard0, created.id)).toEqual([]);
  });

  it("refuses a new map for a panel holding contacts, on any of its shards, and changes nothing", async () => {
    const created = await createPanel();
    expect((await apiFor(created)("contact", "add", { data: { EMAIL: "held@example.com" } })).status).toBe(200);
    expect(await setPartitionMap(env, created.id, evenPartitions([0, TEST_SHARD]))).toMatchObject({ ok: false, problem: { kind: "conflict", fields: [{ field: "partitions" }] } });
    expect((await getPanel(env.DB, created.id))!.partitions).toEqual([]);
    expect(await listsOn(shard0, created.id)).toEqual([]);
  });
});
