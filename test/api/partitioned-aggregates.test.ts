import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS, utcDayOf } from "../../src/domain/time";
import { setPartitionMap } from "../../src/services/access/partitions";
import { contactCountsCron } from "../../src/services/overview/history";
import { archiveOldEvents } from "../../src/services/segments/archived-events";
import type { ShardDb } from "../../src/store/shards";
import { defineActivity, postBatch } from "../support/activity";
import { admin, createPanel, panelData, type TestPanel } from "../support/helpers";
import { keyOn, shard0, TWO, settledOnBoth as settled } from "../support/partitions";

// Decision 0038, the aggregates of a panel split over two partitions (buckets 0–2047 on SHARD_0,
// 2048–4095 on SHARD_1, its home): each shard counts the events recorded there and keeps their
// retention; the Home screen sums the shards, the cron archives each shard's old events.


const eventCount = async (db: ShardDb, panelId: string) => (await db.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panelId).first<number>("n"))!;

/** A panel, split over TWO unless `split` is false, with the activity "Viewed"; its time zone UTC, so Home's day is the UTC day. */
async function panelWithActivity(split: boolean): Promise<{ panel: TestPanel; viewed: string }> {
  const panel = await createPanel({ timezone: "UTC" });
  const viewed = await defineActivity(panel, "Viewed");
  if (split) expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  return { panel, viewed };
}

/** Posts one "Viewed" event per key through the batch API, that happened at `at`. */
async function view(panel: TestPanel, viewed: string, keys: readonly string[], at: number): Promise<void> {
  const posted = await postBatch(
    panel.clientId,
    keys.map((identity) => ({ activityid: viewed, identity, timestamp: new Date(at).toISOString() })),
  );
  expect(posted.status, JSON.stringify(posted.body)).toBe(200);
  await settled(panel.id);
}

describe("the Home screen of a panel split over two shards (decision 0038)", () => {
  it("sums today's events and each day's events and contacts over both shards", async () => {
    const { panel, viewed } = await panelWithActivity(true);
    const now = Date.now();
    const today = utcDayOf(now);
    const [k0, k0b, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 1)];
    await view(panel, viewed, [k0, k1], now);
    // Two days ago, received now: counted on the day it happened, on each key's shard.
    await view(panel, viewed, [k0, k0b, k1], today - 2 * DAY_MS + 3_600_000);
    expect(await eventCount(shard0, panel.id)).toBe(3);
    expect(await eventCount(panelData, panel.id)).toBe(2);

    const overview = await admin("GET", `/panels/${panel.id}/overview`);
    expect(overview.status).toBe(200);
    expect(overview.body).toMatchObject({ events_today: 5, contacts: 3 });

    // The day's contact count, kept per shard by the cron, for yesterday (as if it ran then).
    await contactCountsCron.run(env, today - DAY_MS + 60_000);
    const history = await admin("GET", `/panels/${panel.id}/overview/history?days=3`);
    expect(history.status).toBe(200);
    expect(history.body.days).toEqual([today - 2 * DAY_MS, today - DAY_MS, today]);
    expect(history.body.events).toEqual([{ name: "custom_activity:Viewed", counts: [3, 0, 2] }]);
    expect(history.body.contacts).toEqual([null, 3, 3]);
  });

  it("archives the old events of both shards to R2, read back through the contact's events; a panel without a map as before", async () => {
    const split = await panelWithActivity(true);
    const whole = await panelWithActivity(false);
    const now = Date.now();
    const old = now - 40 * DAY_MS;
    const [k0, k1] = [keyOn(split.panel.id, 0), keyOn(split.panel.id, 1)];
    for (const { panel } of [split, whole]) {
      expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    }
    await view(split.panel, split.viewed, [k0, k1], old);
    await view(split.panel, split.viewed, [k0, k1], now);
    await view(whole.panel, whole.viewed, ["ada@example.com"], old);
    // As if the old events had been received when they happened.
    for (const db of [shard0, panelData]) await db.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id IN (?, ?) AND occurred_at < ?").bind(split.panel.id, whole.panel.id, now - DAY_MS).run();

    await archiveOldEvents.run(env, now);

    // Each shard's old event left it; today's stayed.
    expect(await eventCount(shard0, split.panel.id)).toBe(1);
    expect(await eventCount(panelData, split.panel.id)).toBe(1);
    expect(await eventCount(panelData, whole.panel.id)).toBe(0);
    // One part per shard for the split panel's day (their first ids differ), one for the other panel.
    expect((await env.FILES.list({ prefix: `events/${split.panel.id}/` })).objects).toHaveLength(2);
    expect((await env.FILES.list({ prefix: `events/${whole.panel.id}/` })).objects).toHaveLength(1);
    // The archive reads back through the contact's events, on each key's shard.
    for (const key of [k0, k1]) {
      const events = await admin("GET", `/panels/${split.panel.id}/contacts/${encodeURIComponent(key)}/events`);
      expect(events.status).toBe(200);
      expect(events.body.events.map((e: { identity: string }) => e.identity)).toEqual([key, key]);
    }
    const ada = await admin("GET", `/panels/${whole.panel.id}/contacts/ada%40example.com/events`);
    expect(ada.body.events).toHaveLength(1);
  });
});
