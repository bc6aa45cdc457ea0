import { describe, expect, it } from "vitest";
import {
  BUCKETS,
  bucketRangesOn,
  contactBucket,
  evenPartitions,
  fnv1a32,
  partitionMapProblem,
  partitionOfBucket,
  wholePanelPartition,
  type Partition,
} from "../../src/domain/partitions";

const part = (firstBucket: number, lastBucket: number, shard = 0): Partition => ({ firstBucket, lastBucket, shard, state: "active" });

describe("contact buckets", () => {
  it("hash with FNV-1a 32 (the published test vectors)", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("hash the UTF-8 bytes of the key, as Buffer.from(key) gives them", () => {
    expect(fnv1a32("p:é")).toBe(0x5cfb9eb7);
    expect(fnv1a32("p:日本")).toBe(0x31f2548f);
    expect(fnv1a32("p:😀")).toBe(0xb64df25e);
  });

  it("are the hash of panel:key modulo 4096", () => {
    expect(contactBucket("p1", "alice@example.com")).toBe(0xd6a7a995 % 4096);
    expect(contactBucket("p1", "alice@example.com")).toBe(2453);
    expect(contactBucket("p1", "bob@example.com")).toBe(162);
    expect(contactBucket("panel-x", "+919812345678")).toBe(3776);
    // The panel is hashed in: the same key falls elsewhere in another panel.
    expect(contactBucket("p2", "alice@example.com")).not.toBe(2453);
    // Panels asked in turn (the panel prefix's state is kept between calls), keys of every UTF-8 length.
    for (const [panel, key] of [["p1", "é@x.io"], ["p2", "日本"], ["p1", "😀"], ["panel-x", "a"], ["p2", ""]] as const) {
      expect(contactBucket(panel, key)).toBe(fnv1a32(`${panel}:${key}`) % 4096);
    }
  });

  it("spread keys over every bucket range", () => {
    const counts = new Array<number>(4).fill(0);
    for (let i = 0; i < 4000; i++) counts[Math.floor(contactBucket("p1", `user${i}@example.com`) / (BUCKETS / 4))]!++;
    for (const n of counts) expect(n).toBeGreaterThan(850);
  });
});

describe("partition maps", () => {
  it("a panel made before partitions is one partition of every bucket on its shard", () => {
    expect(wholePanelPartition(1)).toEqual([part(0, 4095, 1)]);
    expect(partitionMapProblem(wholePanelPartition(1))).toBeNull();
  });

  it("accept ranges that cover 0..4095 once, in any order", () => {
    expect(partitionMapProblem([part(2048, 4095, 1), part(0, 2047)])).toBeNull();
    expect(partitionMapProblem(evenPartitions([0, 1, 2]))).toBeNull();
  });

  it("refuse gaps, overlaps, reversed and out-of-range ranges, saying which buckets", () => {
    expect(partitionMapProblem([])).toBe("a panel has at least one partition");
    expect(partitionMapProblem([part(0, 1000), part(1002, 4095)])).toBe("buckets 1001–1001 are in no partition");
    expect(partitionMapProblem([part(0, 1000), part(1000, 4095)])).toBe("buckets 1000–4095 overlap the partition before (which ends at 1000)");
    expect(partitionMapProblem([part(1, 4095)])).toBe("buckets 0–0 are in no partition");
    expect(partitionMapProblem([part(0, 4094)])).toBe("buckets 4095–4095 are in no partition");
    expect(partitionMapProblem([part(0, 4096)])).toBe("buckets 0–4096 fall outside 0–4095");
    expect(partitionMapProblem([part(0, 10), part(20, 11), part(11, 4095)])).toContain("end before they start");
    expect(partitionMapProblem([part(0, 4095, -1)])).toBe("buckets 0–4095 name no shard (-1)");
  });

  it("find the partition of a bucket", () => {
    const map = evenPartitions([0, 1, 2, 3]);
    expect(map.map((p) => [p.firstBucket, p.lastBucket])).toEqual([
      [0, 1023],
      [1024, 2047],
      [2048, 3071],
      [3072, 4095],
    ]);
    expect(partitionOfBucket(map, 0).shard).toBe(0);
    expect(partitionOfBucket(map, 1024).shard).toBe(1);
    expect(partitionOfBucket(map, 4095).shard).toBe(3);
  });
});

describe("a shard's bucket ranges", () => {
  it("are its partitions' ranges in bucket order, none for a shard without one", () => {
    const map = [part(3072, 4095, 1), part(0, 1023, 1), part(1024, 3071, 2)];
    expect(bucketRangesOn(map, 1)).toEqual([
      [0, 1023],
      [3072, 4095],
    ]);
    expect(bucketRangesOn(map, 2)).toEqual([[1024, 3071]]);
    expect(bucketRangesOn(map, 0)).toEqual([]);
  });
});
