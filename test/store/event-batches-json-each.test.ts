import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { appendEventBatches, finishEventBatches, type EventToRecord } from "../../src/store/event-batches";
import type { ShardDb } from "../../src/store/shards";
import { withoutJsonbEach } from "../support/json-each";

// Storing a batch's events as rows reads them with jsonb_each (SQLite 3.45 on); a database without
// it must store the very same rows with json_each (decision 0032). This file has its own
// isolate: the fallback it triggers stays in it.

const db = env.SHARD_0 as ShardDb;

function events(tag: string): EventToRecord[] {
  const params = { name: "Kettle ✓ \"quoted\" \\ \n😀", prid: 1234, price: 29.5, big: 123456789012, nested: { list: [1, "a", null, true] } };
  return [
    { channel: "custom_activity", name: "add_to_cart", occurredAt: 1706704500000, activityId: 3, identity: `ada-${tag}@example.com`, uniqueid: `visitor-${tag}`, source: "web", params, guid: `${tag}-1`, claimed: true, assetId: "ast_web_1" },
    { channel: "custom_activity", name: "add_to_cart", occurredAt: 1706704501000, activityId: 3, uniqueid: `anon-${tag}`, source: "app", params: {}, guid: `${tag}-2`, claimed: false },
    { channel: "email", name: "open", occurredAt: 1706704502000, identity: `ada-${tag}@example.com`, params: { ua: "x" }, guid: `${tag}-3`, claimed: false, msgid: `m-${tag}`, campaignId: "c1" },
  ];
}

async function storedRows(panelId: string) {
  const { results } = await db
    .prepare(
      `SELECT e.channel, e.name, e.activity_id, c.pk_value AS contact, e.uniqueid, e.identity, e.source, e.params, e.occurred_at, e.msgid, e.campaign_id, e.journey_id, e.asset_id
       FROM events e LEFT JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ? ORDER BY e.id`,
    )
    .bind(panelId)
    .all<Record<string, unknown>>();
  return results;
}

describe("storing recorded events as rows", () => {
  it("stores the same rows with json_each where the database has no jsonb_each, and keeps to json_each after", async () => {
    const panel = (id: string) => ({ id, primaryKey: "EMAIL" });
    const now = Date.now();
    // The same events, each panel naming its own contacts by the same tag.
    const newer = await appendEventBatches(db, "p-jsonb", events("t"), now);
    await finishEventBatches(db, panel("p-jsonb"), newer.batchIds, "lease-a", now, now + 60_000);

    const old = withoutJsonbEach(db);
    for (const round of [1, 2]) {
      const recorded = await appendEventBatches(db, `p-json-${round}`, events("t"), now);
      await finishEventBatches(old.db, panel(`p-json-${round}`), recorded.batchIds, `lease-${round}`, now, now + 60_000);
    }

    const expected = await storedRows("p-jsonb");
    expect(expected).toHaveLength(3);
    expect(JSON.parse(expected[0]!.params as string)).toEqual(events("t")[0]!.params);
    expect(expected.map((row) => row.contact)).toEqual(["ada-t@example.com", null, "ada-t@example.com"]);
    expect(await storedRows("p-json-1")).toEqual(expected);
    expect(await storedRows("p-json-2")).toEqual(expected);
    // Refused once; the second pass went to json_each at once.
    expect(old.refused()).toBe(1);
  });
});
