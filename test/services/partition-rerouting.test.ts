import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactBucket } from "../../src/domain/partitions";
import type { NewEvent } from "../../src/domain/events";
import { setPartitionMap } from "../../src/services/access/partitions";
import { processEventBatches } from "../../src/services/pipeline/consumer";
import { recordEvents } from "../../src/services/pipeline/record";
import { nudgeEventBatches } from "../../src/services/pipeline/nudge";
import { isPanelMovingError } from "../../src/lib/moving";
import { PIPELINE_STEPS } from "../../src/services/pipeline-steps";
import { MOVE_TUNING, runMoveStep, type MoveTuning } from "../../src/services/panels/move";
import { getPanel } from "../../src/store/panels";
import { insertPanelMove } from "../../src/store/panel-moves";
import { appendEventBatches, appendRecordedEvents, batchesToReroute, rerouteLease, takeEventBatches } from "../../src/store/event-batches";
import type { ShardDb } from "../../src/store/shards";
import { eventually } from "../support/activity";
import { apiFor, createPanel, panelData, TEST_SHARD } from "../support/helpers";
import { keyOn, keysOn, shard0, TWO } from "../support/partitions";

// Decisions 0038 and 0047: an event batch recorded on a shard for buckets the panel's map now
// places elsewhere (a split's source, by an isolate holding the map from before the switch, or a
// batch pending at it) is handed on by the consumer: each event ends on its key's shard once.

const event = (identity: string, page: string, guid?: string): NewEvent => ({ channel: "custom_activity", name: "visit", identity, params: { page }, occurredAt: Date.now(), guid });

/** The panel's events on `db`, as "key page→contact key" ("-": no contact on this shard), sorted. */
async function eventsOn(db: ShardDb, panelId: string): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT e.identity || ' ' || (e.params ->> '$.page') || '→' || COALESCE(c.pk_value, '-') AS e
       FROM events e LEFT JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ? ORDER BY 1`,
    )
    .bind(panelId)
    .all<{ e: string }>();
  return results.map((r) => r.e);
}

async function pendingOn(db: ShardDb, panelId: string): Promise<number> {
  return (await db.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ?").bind(panelId).first<number>("n"))!;
}

async function settled(panelId: string): Promise<void> {
  await eventually(async () => ((await pendingOn(shard0, panelId)) + (await pendingOn(panelData, panelId)) === 0 ? true : undefined));
}

describe("event batches recorded for another partition's buckets (decisions 0038, 0047)", () => {
  it("hands on the moving buckets' events of a batch recorded on a split's source with the old map: each event on its key's shard once, no contact made on the source", async () => {
    const AT = 2048;
    const moving = (panelId: string, key: string) => contactBucket(panelId, key) >= AT;
    const panel = await createPanel();
    const api = apiFor(panel);
    const keys = Array.from({ length: 12 }, (_, i) => `reroute${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
    const mover = keys.find((k) => moving(panel.id, k))!;
    const stayer = keys.find((k) => !moving(panel.id, k))!;
    const newMover = Array.from({ length: 100 }, (_, i) => `fresh${i}@example.com`).find((k) => moving(panel.id, k))!;

    // The split of 0047, run to its switch: buckets 2048–4095 now on SHARD_0, the source's fence up.
    const moveId = `mov_reroute_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    const tuning: MoveTuning = { ...MOVE_TUNING, pageRows: 25, fenceBelow: 200, stepMs: 60_000, settleMs: 1_000 };
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, tuning, () => clock);
    expect(await step()).toEqual({ next: "now" });
    expect(await step()).toEqual({ next: "later", ms: tuning.settleMs });
    expect((await getPanel(env.DB, panel.id))!.partitions).toHaveLength(2);

    // An isolate holding the map from before the switch (none: all on the home) records there. A
    // caller's guid for a moving key is claimed in its bucket, which the source's fence refuses
    // (the API answers 503 and the retry reads the map afresh); without one, the batch is recorded.
    const stale = { id: panel.id, shard: TEST_SHARD, partitions: [] };
    await expect(recordEvents(env, stale, [event(newMover, "/c", "order-7")])).rejects.toSatisfy(isPanelMovingError);
    const recorded = await recordEvents(env, stale, [event(mover, "/a"), event(stayer, "/b", "order-8"), event(newMover, "/c")]);
    expect(recorded).toMatchObject({ recorded: 3, duplicates: 0 });
    await settled(panel.id);
    expect(await eventsOn(shard0, panel.id)).toEqual([`${mover} /a→${mover}`, `${newMover} /c→${newMover}`].sort());
    expect(await eventsOn(panelData, panel.id)).toEqual([`${stayer} /b→${stayer}`]);
    // The new identity's contact was made on its partition's shard only.
    expect((await keysOn(shard0, panel.id)).includes(newMover)).toBe(true);
    expect((await keysOn(panelData, panel.id)).includes(newMover)).toBe(false);
    // The staying event's guid keeps its claim on the source: sent again, a duplicate.
    expect(await recordEvents(env, { id: panel.id }, [event(stayer, "/b", "order-8")])).toMatchObject({ duplicates: 1 });

    // The cleaning ends the split: the source keeps only its own buckets, and the events stand.
    clock += tuning.settleMs;
    expect(await step()).toEqual({ next: "none" });
    await settled(panel.id);
    expect((await keysOn(panelData, panel.id)).filter((k) => moving(panel.id, k))).toEqual([]);
    expect(await eventsOn(shard0, panel.id)).toEqual([`${mover} /a→${mover}`, `${newMover} /c→${newMover}`].sort());
    expect(await eventsOn(panelData, panel.id)).toEqual([`${stayer} /b→${stayer}`]);
  });

  it("doubles nothing when the hand-off is repeated after a crash before the source batch was rewritten", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [k0, k0b, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 1)];
    // Recorded on the home (SHARD_1, buckets 2048–4095) as if the panel had no map; k0 and k0b belong on SHARD_0.
    const events = [event(k0, "/x", "dup-guid"), event(k1, "/y"), event(k0b, "/z")].map((e, i) => ({ ...e, guid: e.guid ?? `gen-${panel.id}-${i}`, claimed: e.guid !== undefined }));
    const { batchIds } = await appendEventBatches(panelData, panel.id, events, Date.now());
    const now = Date.now();
    const stored = { id: panel.id, primaryKey: "EMAIL" };
    // A pass sets the batch apart and hands its SHARD_0 events on, then dies before rewriting it.
    const taken = await takeEventBatches(panelData, stored, batchIds, "L1", now, now + 60_000, [[2048, 4095]]);
    expect(taken).toMatchObject({ batches: [], misplaced: batchIds });
    const [apart] = await batchesToReroute(panelData, panel.id, batchIds, rerouteLease("L1"));
    const handed = await appendRecordedEvents(shard0, panel.id, apart!.events.filter((e) => e.k !== k1), apart!.receivedAt, now);
    expect(handed.taken.size).toBe(0);

    // The next pass, once the lease ran out, finds the batch again and hands the same events on: a no-op there.
    const failed = await processEventBatches(env, panel.id, batchIds, PIPELINE_STEPS, now + 61_000);
    expect([...failed]).toEqual([]);
    // The first hand-off's batch, whose nudge the crash lost, reaches the consumer too (the re-drive's part).
    await nudgeEventBatches(env.EVENTS, panel.id, handed.batchIds, handed.sizes, 0);
    await settled(panel.id);
    expect(await eventsOn(shard0, panel.id)).toEqual([`${k0} /x→${k0}`, `${k0b} /z→${k0b}`].sort());
    expect(await eventsOn(panelData, panel.id)).toEqual([`${k1} /y→${k1}`]);
    expect(await keysOn(shard0, panel.id)).toEqual([k0, k0b].sort());
    expect(await keysOn(panelData, panel.id)).toEqual([k1]);
  });

  it("leaves a batch whose events all belong to its shard as it was, and a panel without a map unchecked", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [k1, k1b] = [keyOn(panel.id, 1), keyOn(panel.id, 1, 1)];
    const own = [event(k1, "/1"), event(k1b, "/2")].map((e, i) => ({ ...e, guid: `own-${panel.id}-${i}`, claimed: false }));
    const { batchIds } = await appendEventBatches(panelData, panel.id, own, Date.now());
    const now = Date.now();
    const taken = await takeEventBatches(panelData, { id: panel.id, primaryKey: "EMAIL" }, batchIds, "L2", now, now + 60_000, [[2048, 4095]]);
    expect(taken.misplaced).toEqual([]);
    expect(taken.batches.map((b) => b.events.map((e) => e.identity))).toEqual([[k1, k1b]]);

    const plain = await createPanel();
    const other = await appendEventBatches(panelData, plain.id, [{ ...event("someone@example.com", "/3"), guid: `plain-${plain.id}`, claimed: false }], now);
    const mapless = await takeEventBatches(panelData, { id: plain.id, primaryKey: "EMAIL" }, other.batchIds, "L3", now, now + 60_000);
    expect(mapless.misplaced).toEqual([]);
    expect(mapless.batches).toHaveLength(1);
  });
});
