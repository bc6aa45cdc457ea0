import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { processEventBatches } from "../../../src/services/pipeline/consumer";
import type { PipelineEvent, PipelineStep } from "../../../src/services/pipeline/steps";
import { appendEventBatches } from "../../../src/store/event-batches";
import { createPanel, panelData, type TestPanel } from "../../support/helpers";

// Steps that say they have nothing to do for a panel (PipelineStep.hasWork): their events pass
// them unseen, and a pass where no step has work stores the events and finishes the batches.

let panel: TestPanel;

beforeEach(async () => {
  panel = await createPanel();
});

function step(name: string, work: boolean): PipelineStep & { seen: PipelineEvent[]; asked: number } {
  const self = {
    name,
    seen: [] as PipelineEvent[],
    asked: 0,
    async hasWork(_env: Env, panelId: string) {
      expect(panelId).toBe(panel.id);
      self.asked++;
      return work;
    },
    async run(_env: Env, events: readonly PipelineEvent[]) {
      self.seen.push(...events);
    },
  };
  return self;
}

async function store(guids: string[]): Promise<number> {
  const events = guids.map((guid, i) => ({ channel: "custom_activity" as const, name: "signup", occurredAt: Date.now(), identity: `p${i}@example.com`, uniqueid: `u${i}`, guid, claimed: true }));
  const { batchIds } = await appendEventBatches(panelData, panel.id, events, Date.now());
  return batchIds[0]!;
}

const rows = async () =>
  (await panelData.prepare("SELECT guid, contact_id IS NOT NULL AS known FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id).all()).results;
const pendingBatches = async () => (await panelData.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n;

describe("pipeline steps without work for a panel", () => {
  it("when no step has work, the events become rows with their contacts and the batch leaves the pipeline, no step run", async () => {
    const batch = await store(["n1", "n2", "n3"]);
    const idle = step("idle", false);
    expect((await processEventBatches(env, panel.id, [batch, batch], [idle])).size).toBe(0);
    expect(idle.asked).toBe(1);
    expect(idle.seen).toEqual([]);
    expect(await rows()).toEqual([
      { guid: "n1", known: 1 },
      { guid: "n2", known: 1 },
      { guid: "n3", known: 1 },
    ]);
    expect(await pendingBatches()).toBe(0);
    const links = await panelData.prepare("SELECT COUNT(*) AS n FROM anon_profiles WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(links!.n).toBe(3);
    // Taken again (a redelivered message): nothing is stored twice.
    await processEventBatches(env, panel.id, [batch], [idle]);
    expect(await rows()).toHaveLength(3);
  });

  it("a step without work is passed unseen while the others run, in order, once per event", async () => {
    const batch = await store(["w1", "w2"]);
    const before = step("before", true);
    const idle = step("idle", false);
    const after = step("after", true);
    expect((await processEventBatches(env, panel.id, [batch], [before, idle, after])).size).toBe(0);
    expect(before.seen.map((e) => e.guid)).toEqual(["w1", "w2"]);
    expect(idle.seen).toEqual([]);
    expect(after.seen.map((e) => e.guid)).toEqual(["w1", "w2"]);
    expect(after.seen[0]).toMatchObject({ identity: "p0@example.com", contactId: expect.any(Number) });
    expect(await pendingBatches()).toBe(0);
  });
});
