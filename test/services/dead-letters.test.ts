import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../src/jobs/queues";
import { newImportJob } from "../../src/services/imports";
import { MAX_REDRIVES } from "../../src/services/pipeline/redrive";
import { appendEventBatches } from "../../src/store/event-batches";
import { getImportJob, insertImportJob } from "../../src/store/imports";
import { admin, createPanel, panelData } from "../support/helpers";

/** A queue that remembers what was sent to it, with the delay asked for. */
function spyQueue() {
  const sent: Array<{ body: unknown; delaySeconds?: number }> = [];
  const queue = {
    send: async (body: unknown, options?: { delaySeconds?: number }) => void sent.push({ body, delaySeconds: options?.delaySeconds }),
    sendBatch: async (messages: Array<{ body: unknown; delaySeconds?: number }>) => void sent.push(...messages),
  } as unknown as Queue;
  return { queue, sent };
}

function spiedEnv() {
  const [imports, events, sends, journeys] = [spyQueue(), spyQueue(), spyQueue(), spyQueue()];
  return {
    env: { ...env, IMPORTS: imports.queue, EVENTS: events.queue, SENDS: sends.queue, JOURNEYS: journeys.queue } as Env,
    imports: imports.sent,
    events: events.sent,
    sends: sends.sent,
    journeys: journeys.sent,
  };
}

/** Delivers bodies on the dead-letter queue through the Worker's queue wiring. */
async function deadLetter(handlerEnv: Env, ...bodies: unknown[]) {
  const batch = createMessageBatch(
    "apiv2-dlq-default",
    bodies.map((body) => ({ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body })),
  );
  const exec = createExecutionContext();
  await handleQueue(batch, handlerEnv, exec);
  return getQueueResult(batch, exec);
}

async function lettersOf(panelId: string | null) {
  const { body } = await admin("GET", "/dead-letters?limit=500");
  return (body.dead_letters as any[]).filter((letter) => letter.panel_id === panelId);
}

describe("the dead-letter queue's consumer", () => {
  it("records an import's message and re-drives the job, counting the attempt its dead consumer never counted", async () => {
    const panel = await createPanel();
    await env.FILES.put(`test/${panel.id}/dead.csv`, "EMAIL\nx@example.com\n");
    const job = newImportJob({ panelId: panel.id, sources: [{ key: `test/${panel.id}/dead.csv` }] });
    await insertImportJob(panelData, job);
    const spied = spiedEnv();
    const body = { type: "import", panelId: panel.id, jobId: job.id };
    expect((await deadLetter(spied.env, body)).explicitAcks).toHaveLength(1);
    expect(spied.imports.map((m) => m.body)).toEqual([body]);
    expect(await getImportJob(panelData, panel.id, job.id)).toMatchObject({ attempts: 1, lastError: expect.stringMatching(/gave up on the job's message/) });
    expect(await lettersOf(panel.id)).toEqual([
      expect.objectContaining({ queue: "apiv2-dlq-default", kind: "imports", action: "attempt 1: nudged", message: JSON.stringify(body), attempts: 1 }),
    ]);
  });

  it("re-drives event batches at once, counting the re-drive, and fails a batch past the last", async () => {
    const panel = await createPanel();
    const now = Date.now();
    const event = (guid: string) => ({ channel: "custom_activity" as const, name: "signup", identity: `${guid}@example.com`, occurredAt: now, guid, claimed: true });
    const fresh = (await appendEventBatches(panelData, panel.id, [event("fresh")], now)).batchIds[0]!;
    const worn = (await appendEventBatches(panelData, panel.id, [event("worn")], now)).batchIds[0]!;
    await panelData.prepare("UPDATE event_batches SET redrives = ? WHERE id = ?").bind(MAX_REDRIVES, worn).run();
    const spied = spiedEnv();
    await deadLetter(spied.env, { panel: panel.id, batches: [fresh, worn] });
    expect(spied.events.map((m) => m.body)).toEqual([{ panel: panel.id, batches: [fresh] }]);
    const states = await panelData.prepare("SELECT id, state, redrives FROM event_batches WHERE panel_id = ? ORDER BY id").bind(panel.id).all();
    expect(states.results).toEqual([
      { id: fresh, state: "pending", redrives: 1 },
      { id: worn, state: "failed", redrives: MAX_REDRIVES + 1 },
    ]);
    expect((await lettersOf(panel.id))[0]).toMatchObject({ kind: "events", action: "1 batch(es) nudged, 1 marked failed" });
  });

  it("nudges a campaign batch again after a pause while the campaign sends, and journey work after a pause", async () => {
    const panel = await createPanel();
    const now = Date.now();
    await panelData.batch([
      panelData.prepare("INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at) VALUES (?, 1, 'Dead', 'dead', '', 0, 0)").bind(panel.id),
      panelData.prepare(
        `INSERT INTO campaigns (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key, status, request_id, created_at, updated_at)
         SELECT ?1, ?2, id, 'C', 'S', 'Shop', 'shop@example.com', '[]', '', ?3, 'none', 'sending', 'r', ?3, ?3 FROM lists WHERE panel_id = ?2`,
      ).bind(`cmp_${panel.id}`, panel.id, now),
    ]);
    const spied = spiedEnv();
    const send = { kind: "campaign_batch", panelId: panel.id, campaignId: `cmp_${panel.id}`, batch: 3 };
    const gone = { ...send, campaignId: "cmp_gone" };
    const points = { type: "points", panel: panel.id };
    await deadLetter(spied.env, send, gone, points);
    expect(spied.sends).toEqual([{ body: send, delaySeconds: 60 }]);
    expect(spied.journeys).toEqual([{ body: points, delaySeconds: 30 }]);
    expect((await lettersOf(panel.id)).map((letter) => [letter.kind, letter.action])).toEqual([
      ["journeys", "nudged again in 30 s"],
      ["sends", "nothing left: the campaign is not sending"],
      ["sends", "nudged again in 60 s"],
    ]);
  });

  it("records a body no consumer reads, and acknowledges it", async () => {
    const spied = spiedEnv();
    const marker = crypto.randomUUID();
    expect((await deadLetter(spied.env, { what: marker })).explicitAcks).toHaveLength(1);
    const letters = await lettersOf(null);
    expect(letters.find((letter) => letter.message.includes(marker))).toMatchObject({ kind: "unknown", action: "none: no consumer reads this body" });
  });

  it("records a cron sweep whose consumer died, and leaves the sweep to the next tick", async () => {
    const spied = spiedEnv();
    const marker = `housekeeping-${crypto.randomUUID()}`;
    expect((await deadLetter(spied.env, { cron: marker, shard: 0, now: Date.now() })).explicitAcks).toHaveLength(1);
    const letters = await lettersOf(null);
    expect(letters.find((letter) => letter.message.includes(marker))).toMatchObject({ kind: "cron", action: "none: the next cron tick sweeps again" });
  });
});
