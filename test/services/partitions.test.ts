import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactBucket, evenPartitions, type Partition } from "../../src/domain/partitions";
import { partitionOfContact, partitionsOf, setPartitionMap } from "../../src/services/access/partitions";
import { findPanelHome, forgetPanelPlaces } from "../../src/services/access/shards";
import { findKeyOwner } from "../../src/store/users";
import { getPanel, updatePanel } from "../../src/store/panels";
import { sha256Hex } from "../../src/lib/crypto";
import { createPanel, TEST_SHARD } from "../support/helpers";

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
});
