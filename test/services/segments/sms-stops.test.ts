import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dependenciesOf, type SegmentNode } from "../../../src/domain/segments";
import { setPartitionMap } from "../../../src/services/access/partitions";
import { segmentsCron } from "../../../src/services/segments/membership";
import { insertSegment } from "../../../src/store/segments";
import { admin, apiFor, createPanel, panelData, TEST_SHARD } from "../../support/helpers";
import { keyOn, TWO } from "../../support/partitions";

// A saved segment's `reachable: sms` reads the number's stop on the contact's shard; a stop or a
// lift changes no contact, so shard migration 0121 marks such segments for a build on each shard
// whose stops changed, and the segments cron brings their stored members up to date. Migration
// 0124 marks only the segments flagged as reading it, each once however many stops arrive.

/** The segment's build state on TEST_SHARD: `cursor` null when built, `due` 1 when another pass follows. */
const buildState = async (segmentId: string) =>
  (await panelData.prepare("SELECT build_cursor AS cursor, rebuild_due AS due FROM segments WHERE id = ?").bind(segmentId).first<{ cursor: number | null; due: number }>())!;

/** Runs the segments cron until the segment is built (its save's own build may still be under way). */
async function builtAfterCron(segmentId: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  do await segmentsCron.run(env, Date.now());
  while ((await buildState(segmentId)).cursor !== null && Date.now() < deadline);
  expect(await buildState(segmentId)).toEqual({ cursor: null, due: 0 });
}

describe("a saved segment reading SMS reachability", () => {
  it("loses a member whose number is stopped, and takes it back when the stop is lifted, on either shard of a partitioned panel", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const keys = [keyOn(panel.id, 0), keyOn(panel.id, TEST_SHARD), keyOn(panel.id, 0, 1)];
    const phones = ["919800000701", "919800000702", "919800000703"];
    for (const [i, EMAIL] of keys.entries()) expect((await apiFor(panel)("contact", "add", { data: { EMAIL, MOBILE: `+${phones[i]}` } })).status).toBe(200);
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Textable", match: { all: [{ reachable: "sms" }] } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const members = async () => {
      await segmentsCron.run(env, Date.now());
      const page = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}/contacts?limit=10`);
      expect(page.status).toBe(200);
      return page.body.contacts.map((c: { EMAIL: string }) => c.EMAIL).sort();
    };
    expect(await members()).toEqual([...keys].sort());

    // An operator stops two numbers, one of a contact on each shard.
    for (const phone of phones.slice(0, 2)) expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/${phone}`)).status).toBe(200);
    expect(await members()).toEqual([keys[2]]);
    // A lift sends to the number again: its contact is a member again.
    expect((await admin("DELETE", `/panels/${panel.id}/sms/suppressions/${phones[0]}`)).status).toBe(200);
    expect(await members()).toEqual([keys[0], keys[2]].sort());
  });
});

describe("which segments an SMS stop marks for a build", () => {
  it("a segment edited to read `reachable: sms` is marked by a stop and a lift, and not once edited back", async () => {
    const panel = await createPanel();
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune", MOBILE: "+919800000801" } })).status).toBe(200);
    const inPune = { attribute: "CITY", op: "eq", value: "Pune" };
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [inPune] } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const segment = saved.body.id as string;
    const edit = async (match: object) => expect((await admin("PUT", `/panels/${panel.id}/segments/${segment}`, { name: "Pune", match })).status).toBe(200);
    const stop = async (phone: string) => expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/${phone}`)).status).toBe(200);

    await builtAfterCron(segment);
    await stop("919800000802");
    expect(await buildState(segment)).toEqual({ cursor: null, due: 0 });

    await edit({ all: [inPune, { reachable: "sms" }] });
    await builtAfterCron(segment);
    await stop("919800000803");
    expect(await buildState(segment)).toEqual({ cursor: 0, due: 0 });
    await builtAfterCron(segment);
    expect((await admin("DELETE", `/panels/${panel.id}/sms/suppressions/919800000803`)).status).toBe(200);
    expect(await buildState(segment)).toEqual({ cursor: 0, due: 0 });

    await edit({ all: [inPune] });
    await builtAfterCron(segment);
    await stop("919800000804");
    expect(await buildState(segment)).toEqual({ cursor: null, due: 0 });
  });

  it("a burst of stops and lifts writes each segment reading `reachable: sms` at most once, and none of the panel's other segments", async () => {
    const panel = await createPanel();
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune" } })).status).toBe(200);
    const save = async (name: string, match: SegmentNode) =>
      (await insertSegment(panelData, { id: `seg_${crypto.randomUUID().slice(0, 8)}`, panelId: panel.id, name, match, dependencies: dependenciesOf(match) }, Date.now())).id;
    const others: string[] = [];
    for (let i = 0; i < 20; i++) others.push(await save(`City ${i}`, { all: [{ attribute: "CITY", op: "eq", value: `City ${i}` }] } as SegmentNode));
    const textable = { any: [{ not: { attribute: "CITY", op: "eq", value: "Delhi" } }, { all: [{ reachable: "sms" }] }] } as SegmentNode;
    // Four segments reading it, in each state a build can be in.
    const reading = { built: await save("Built", textable), passing: await save("Passing", textable), starting: await save("Starting", textable), due: await save("Due", textable) };
    const states: Record<keyof typeof reading, [number | null, number]> = { built: [null, 0], passing: [7, 0], starting: [0, 0], due: [5, 1] };
    for (const id of [...others, reading.built]) await panelData.prepare("UPDATE segments SET build_cursor = NULL WHERE id = ?").bind(id).run();
    for (const [name, [cursor, due]] of Object.entries(states)) {
      await panelData.prepare("UPDATE segments SET build_cursor = ?, rebuild_due = ? WHERE id = ?").bind(cursor, due, reading[name as keyof typeof reading]).run();
    }

    // Every write of a segment row from here on, counted by a trigger of this test's own.
    await panelData.prepare("CREATE TABLE test_segment_writes (segment_id TEXT NOT NULL)").run();
    await panelData.prepare("CREATE TRIGGER test_segment_written AFTER UPDATE ON segments BEGIN INSERT INTO test_segment_writes VALUES (NEW.id); END").run();
    try {
      const writes = async () => {
        const { results } = await panelData.prepare("SELECT segment_id AS id, COUNT(*) AS n FROM test_segment_writes GROUP BY segment_id").all<{ id: string; n: number }>();
        return Object.fromEntries(results.map((r) => [r.id, r.n]));
      };
      const phones = JSON.stringify(Array.from({ length: 10 }, (_, i) => `9198000009${String(i).padStart(2, "0")}`));
      // As the cron's stop copies write them: a page of stops in one statement.
      await panelData
        .prepare("INSERT INTO sms_suppressions (panel_id, phone, reason, created_at) SELECT ?, value, 'stop', ? FROM json_each(?) WHERE true ON CONFLICT DO NOTHING")
        .bind(panel.id, Date.now(), phones)
        .run();
      // Marked once: a built segment to build from its first contact, one whose build has passed contacts to pass again.
      expect(await writes()).toEqual({ [reading.built]: 1, [reading.passing]: 1 });
      expect(await buildState(reading.built)).toEqual({ cursor: 0, due: 0 });
      expect(await buildState(reading.passing)).toEqual({ cursor: 7, due: 1 });
      expect(await buildState(reading.starting)).toEqual({ cursor: 0, due: 0 });
      expect(await buildState(reading.due)).toEqual({ cursor: 5, due: 1 });

      // Lifted again: each build to come reads the stops as they are then, so nothing is written.
      await panelData.prepare("DELETE FROM sms_suppressions WHERE panel_id = ? AND phone IN (SELECT value FROM json_each(?))").bind(panel.id, phones).run();
      expect(await writes()).toEqual({ [reading.built]: 1, [reading.passing]: 1 });
    } finally {
      await panelData.prepare("DROP TRIGGER test_segment_written").run();
      await panelData.prepare("DROP TABLE test_segment_writes").run();
    }
  });
});
