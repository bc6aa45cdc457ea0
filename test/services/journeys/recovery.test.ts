import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { POINT_LEASE_MS } from "../../../src/services/journeys/engine";
import { ENTRIES_PER_MESSAGE, redriveListEntries } from "../../../src/services/journeys/list-entries";
import { journeysPipelineStep } from "../../../src/services/journeys/pipeline-step";
import { journeyTimers } from "../../../src/services/journeys/timers";
import { getEventsByIds } from "../../../src/store/events";
import { enterInstances } from "../../../src/store/journeys/instances";
import { eventually } from "../../support/activity";
import { admin, countRows, createPanel, type TestPanel, panelData, TEST_SHARD } from "../../support/helpers";
import { act, addMembersQuietly, cartPanel, countersOf, MINUTE, smsListJourney, startJourney } from "../../support/journeys";

/** The real JOURNEYS queue, remembering what was sent through it. */
function watchedJourneysQueue() {
  const sent: unknown[] = [];
  const queue = {
    send: async (body: unknown) => {
      sent.push(body);
      await env.JOURNEYS.send(body);
    },
    sendBatch: async (messages: Array<{ body: unknown }>) => {
      sent.push(...messages.map((m) => m.body));
      await env.JOURNEYS.sendBatch(messages);
    },
  } as unknown as Queue;
  return { env: { ...env, JOURNEYS: queue } as Env, sent };
}

/** `count` contacts with a MOBILE each, written straight into D1; returns their ids. */
async function seedContacts(panel: TestPanel, count: number): Promise<number[]> {
  const { results } = await panelData.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
     SELECT ?1, 'c' || i || '@example.com', json_object('EMAIL', 'c' || i || '@example.com', 'MOBILE', '+1555' || printf('%06d', i)), 0, 0 FROM n
     RETURNING id`,
  )
    .bind(panel.id, count)
    .all<{ id: number }>();
  return results.map((r) => r.id).sort((a, b) => a - b);
}

/** Instances of `journeyId` for each contact, written as an entering consumer that died before continuing them did. */
async function enteredThenCrashed(panel: TestPanel, journeyId: string, contactIds: readonly number[], crash: number, key = (id: number) => `list:0:${id}:1`) {
  for (let i = 0; i < contactIds.length; i += 100) {
    const entries = contactIds.slice(i, i + 100).map((contactId) => ({ instanceId: `jin_${crypto.randomUUID()}`, panelId: panel.id, journeyId, contactId, entryKey: key(contactId), eventId: null, version: 1 }));
    await enterInstances(panelData, entries, crash, crash + POINT_LEASE_MS);
  }
}

async function smsCount(panel: TestPanel): Promise<{ messages: number; recipients: number }> {
  const row = await panelData.prepare("SELECT COUNT(*) AS messages, COUNT(DISTINCT recipient) AS recipients FROM journey_messages WHERE panel_id = ? AND channel = 'sms'")
    .bind(panel.id)
    .first<{ messages: number; recipients: number }>();
  return row!;
}

async function completed(journey: { path: string }, count: number) {
  await eventually(async () => ((await countersOf(journey)).completed === count ? true : undefined), 25_000);
}

describe("journey work left behind by a crash", () => {
  it("instances written but never continued are handed to the queue in pages at the first cron tick after their lease, each continued once", async () => {
    const panel = await createPanel();
    const { journey } = await smsListJourney(panel);
    const ids = await seedContacts(panel, 400);
    const crash = Date.now() - 2 * MINUTE;
    await enteredThenCrashed(panel, journey.id, ids, crash);

    // Within the lease, the cron leaves them to the (dead) holder.
    const early = watchedJourneysQueue();
    await journeyTimers.run(early.env, crash + POINT_LEASE_MS - 1000);
    expect(early.sent).toEqual([]);
    expect(await countersOf(journey)).toMatchObject({ entered: 400, completed: 0 });

    // The first tick after it: a page continued by the cron itself, the rest nudged in pages.
    const tick = watchedJourneysQueue();
    await journeyTimers.run(tick.env, Date.now());
    expect(tick.sent).toEqual(Array.from({ length: 4 }, () => ({ type: "points", panel: panel.id, shard: TEST_SHARD })));
    await completed(journey, 400);
    expect(await smsCount(panel)).toEqual({ messages: 400, recipients: 400 });
  });

  it("due timers beyond what one cron run continues itself are handed to the queue", async () => {
    const panel = await createPanel();
    const { journey } = await smsListJourney(panel, "Later");
    // The definition of the journey and of the version its instances walk (migration 0052).
    const steps = JSON.stringify([{ id: "pause", type: "delay", for: "1h" }, { id: "hi", type: "sms", text: "Hi", after: "pause" }]);
    await panelData.batch([
      panelData.prepare("UPDATE journeys SET definition = json_set(definition, '$.steps', json(?)) WHERE id = ?").bind(steps, journey.id),
      panelData.prepare("UPDATE journey_versions SET definition = json_set(definition, '$.steps', json(?)) WHERE journey_id = ?").bind(steps, journey.id),
    ]);
    const ids = await seedContacts(panel, 230);
    const before = Date.now() - 2 * 60 * MINUTE;
    await enteredThenCrashed(panel, journey.id, ids, before);
    // Each instance went on to its delay, due an hour after it entered.
    await panelData.batch([
      panelData.prepare("UPDATE journey_points SET continued_at = ?1 WHERE journey_id = ?2").bind(before, journey.id),
      panelData.prepare(
        `INSERT INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, due_at, created_at)
         SELECT id, 'pause', panel_id, journey_id, contact_id, 'delay', ?1, ?2 FROM journey_instances WHERE journey_id = ?3`,
      ).bind(before + 60 * MINUTE, before, journey.id),
    ]);
    const tick = watchedJourneysQueue();
    await journeyTimers.run(tick.env, Date.now());
    expect(tick.sent).toEqual([{ type: "points", panel: panel.id, shard: TEST_SHARD }]);
    await completed(journey, 230);
    expect(await smsCount(panel)).toEqual({ messages: 230, recipients: 230 });
  });

  it("an event whose journeys step runs again finishes the instances an earlier run wrote and died on", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "hi", type: "sms", text: "Hi" }] }, null);
    await act(panel, cart, "late@example.com");
    await admin("POST", `${journey.path}/status`, { status: "running" });
    const stored = await panelData.prepare("SELECT id, contact_id FROM events WHERE panel_id = ?").bind(panel.id).first<{ id: number; contact_id: number }>();
    // The first run wrote the instance and died before its first step.
    await enteredThenCrashed(panel, journey.id, [stored!.contact_id], Date.now() - 2 * MINUTE, () => `event:${stored!.id}`);
    const events = [...(await getEventsByIds(panelData, panel.id, [stored!.id])).values()];
    await journeysPipelineStep.run(env, events);
    await journeysPipelineStep.run(env, events);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
    expect(await smsCount(panel)).toEqual({ messages: 1, recipients: 1 });
  });

  it("list entries whose nudges were lost are nudged once per page of the backlog, and each enters once", async () => {
    const panel = await createPanel();
    const { listId, journey } = await smsListJourney(panel);
    const emails = Array.from({ length: ENTRIES_PER_MESSAGE * 2 + 30 }, (_, i) => `m${i}@example.com`);
    await addMembersQuietly(panel, listId, emails);
    const tick = watchedJourneysQueue();
    await redriveListEntries.run(tick.env, Date.now());
    expect(tick.sent).toHaveLength(3);
    await completed(journey, emails.length);
    expect(await countRows("SELECT COUNT(*) AS n FROM journey_list_entries WHERE panel_id = ?", panel.id)).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM journey_messages WHERE panel_id = ?", panel.id)).toBe(emails.length);
  });
});
