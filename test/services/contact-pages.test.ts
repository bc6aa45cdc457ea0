import { describe, expect, it } from "vitest";
import { bucketRangesOn } from "../../src/domain/partitions";
import { mergedContactPage, type OwningShard } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { TEST_SHARD } from "../support/helpers";
import { keyOn, TWO } from "../support/partitions";

// mergedContactPage's read-on (decision 0047): a split's source may hold many copies of moved
// contacts' rows that stand for nothing on the target (a segment's members re-checked there,
// the source's copies left as they were). A page reads on a bounded number of times, then
// answers the rows known so far with where the next page goes on from.

interface Row {
  id: number;
  key: string;
}

const PANEL = "p_contact_pages";

describe("a merged contact page over a split's source full of left-out rows", () => {
  it("reads each shard a bounded number of times, and its pages, followed, give every owned row once in order", async () => {
    const own0 = [0, 1, 2].map((n, i) => ({ id: 1000 + i * 2, key: keyOn(PANEL, 0, n) }));
    const own1 = [0, 1, 2].map((n, i) => ({ id: 1001 + i * 2, key: keyOn(PANEL, TEST_SHARD, n) }));
    // Rows on SHARD_0 of contacts in the other shard's buckets, with no row there: all before the owned ones.
    const stale = Array.from({ length: 200 }, (_, i) => ({ id: 1 + i, key: keyOn(PANEL, TEST_SHARD, 3 + i) }));
    const held = new Map<string, Row[]>([
      ["s0", [...stale, ...own0]],
      ["s1", own1],
    ]);
    const shards: OwningShard[] = [
      { db: "s1" as unknown as ShardDb, buckets: bucketRangesOn(TWO, TEST_SHARD) },
      { db: "s0" as unknown as ShardDb, buckets: bucketRangesOn(TWO, 0) },
    ];
    const limit = 5;
    let reads = 0;
    const pageOf = (cursor: number) => (db: ShardDb, last: Row | undefined) => {
      reads++;
      const after = last?.id ?? cursor;
      return Promise.resolve(held.get(db as unknown as string)!.filter((r) => r.id > after).sort((a, b) => a.id - b.id).slice(0, limit));
    };

    const listed: number[] = [];
    const readsPerPage: number[] = [];
    let cursor = 0;
    for (let pages = 0; pages < 100; pages++) {
      reads = 0;
      const page = await mergedContactPage<Row>(PANEL, shards, pageOf(cursor), (a, b) => a.id - b.id, limit);
      readsPerPage.push(reads);
      listed.push(...page.rows.map((r) => r.id));
      const next = page.rows.length === limit ? page.rows.at(-1) : page.readTo;
      if (!next) break;
      cursor = next.id;
    }
    expect(listed).toEqual([1000, 1001, 1002, 1003, 1004, 1005]);
    // A first read of each shard and at most 4 reads on: never the 40 reads the 200 rows would take.
    expect(Math.max(...readsPerPage)).toBeLessThanOrEqual(2 + 4);
  });
});
