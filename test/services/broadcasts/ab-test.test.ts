import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { abOrderKey, abSeed } from "../../../src/domain/ab-test";
import { decideDueAbTests } from "../../../src/services/broadcasts/ab-decision";
import { compileAudience } from "../../../src/services/broadcasts/audience";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { campaignMessageId } from "../../../src/domain/email-message";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { abTestResults } from "../../../src/services/broadcasts/ab-test";
import type { EmailProvider } from "../../../src/services/channels/email/provider";
import { abGroupTallies, keepAbResults } from "../../../src/store/campaigns/ab-tests";
import { cancelCampaign, getCampaign } from "../../../src/store/campaigns/definitions";
import { countEngagement, markBounced, markUnsubscribed } from "../../../src/store/campaigns/messages";
import { publishCampaign, publishStep, startPublish } from "../../../src/store/campaigns/publish";
import { claimBatch } from "../../../src/store/campaigns/sends";
import { deleteCampaignMessages } from "../../../src/store/housekeeping";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { campaign, fireCron, outbox, scheduleIn, waitForCampaign } from "../../support/broadcasts";
import { collectingQueue, withBindings } from "../../support/cron";
import { planOf, recording } from "../../support/plans";
import { namingMessages, talliesFromMessages } from "../../support/ab-tallies";

const NAMES = ["Ada", "Bob", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kim", "Lu"];

/** A panel with a list of twelve contacts. */
async function panelWithList(): Promise<{ panel: TestPanel; list: number }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname: "Customers" })).body.listid as number;
  for (const name of NAMES) await api("contact", "add", { data: { EMAIL: `${name.toLowerCase()}@example.com`, NAME: name }, listid: list });
  return { panel, list };
}

async function draft(panel: TestPanel, list: number): Promise<string> {
  const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
    name: "Spring",
    subject: "Hello {{NAME|friend}}",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    html: "<p>Hi {{NAME|there}}</p>",
    audience: { lists: [list] },
    draft: true,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

const TEST = {
  variants: [{ subject: "A: sale for {{NAME|you}}" }, { subject: "B: last chance", html: "<p>Only today, {{NAME|friend}}</p>" }],
  test_share: 50,
  metric: "unique_opens",
  wait_minutes: 60,
};

const setTest = (panel: TestPanel, id: string, body: unknown = TEST) => admin("PUT", `/panels/${panel.id}/campaigns/${id}/ab-test`, body);
const act = (panel: TestPanel, id: string, action: string) => admin("POST", `/panels/${panel.id}/campaigns/${id}/${action}`, {});

/** Schedules and publishes the campaign now, 4 recipients per batch, without nudging the queue; returns its publication time. */
async function publishByHand(panel: TestPanel, id: string): Promise<number> {
  expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { schedule_date: scheduleIn(60 * 24 * 50) })).status).toBe(200);
  const stored = (await getCampaign(panelData, panel.id, id))!;
  const now = Date.now();
  expect(await publishCampaign(panelData, stored, 4, now, await compileAudience(panelData, panel.id, stored.audience!, now))).toBe(NAMES.length);
  return now;
}

/** A draft to the list of twelve with TEST, scheduled: the campaign as stored, its audience compiled at `now`. */
async function scheduledTest(now: number) {
  const { panel, list } = await panelWithList();
  const id = await draft(panel, list);
  expect((await setTest(panel, id)).status).toBe(200);
  expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { schedule_date: scheduleIn(60 * 24 * 50) })).status).toBe(200);
  const stored = (await getCampaign(panelData, panel.id, id))!;
  return { panel, id, stored, audience: await compileAudience(panelData, panel.id, stored.audience!, now) };
}

const winner = async (panel: TestPanel, id: string) => (await getCampaign(panelData, panel.id, id))!.abWinner;

const sendBatches = async (panel: TestPanel, id: string, provider = emailProvider(env)) => {
  for (const batch of [0, 1, 2]) await sendCampaignBatch(env, provider, { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch } satisfies SendNudge);
};

async function groups(id: string): Promise<Array<{ contact_id: number; ab_group: string; variant: number | null; status: string }>> {
  return (await panelData.prepare("SELECT contact_id, ab_group, variant, status FROM campaign_messages WHERE campaign_id = ? ORDER BY contact_id").bind(id).all<any>()).results;
}

/** Opens the sent test messages of `variant`, `count` of them. */
async function open(panel: TestPanel, id: string, variant: number, count: number, at: number): Promise<void> {
  const rows = (await groups(id)).filter((r) => r.ab_group === "test" && r.variant === variant).slice(0, count);
  for (const row of rows) await countEngagement(panelData, { panelId: panel.id, campaignId: id, contactId: row.contact_id }, "open", at);
}

describe("A/B tests of a campaign", () => {
  it("refuses a test that breaks a rule, naming the field, and one on a campaign that already sends", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    const field = async (body: unknown) => {
      const answer = await setTest(panel, id, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      return answer.body.errors.map((e: any) => e.field);
    };
    expect(await field({ ...TEST, variants: [{ subject: "only one" }] })).toEqual(["variants"]);
    expect(await field({ ...TEST, variants: Array.from({ length: 5 }, (_, i) => ({ subject: `S${i}` })) })).toEqual(["variants"]);
    expect(await field({ ...TEST, variants: [{ subject: "A" }, {}] })).toEqual(["variants.1.subject"]);
    expect(await field({ ...TEST, test_share: 51 })).toEqual(["test_share"]);
    expect(await field({ ...TEST, test_share: 0 })).toEqual(["test_share"]);
    expect(await field({ ...TEST, metric: "revenue" })).toEqual(["metric"]);
    expect(await field({ ...TEST, wait_minutes: 0 })).toEqual(["wait_minutes"]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body).toEqual({ ab_test: null });

    const set = await setTest(panel, id);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.ab_test).toEqual({ variants: 2, metric: "unique_opens", winner: null });
    const read = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test;
    expect(read.variants).toEqual([
      { label: "A", subject: "A: sale for {{NAME|you}}", html: null },
      { label: "B", subject: "B: last chance", html: "<p>Only today, {{NAME|friend}}</p>" },
    ]);
    expect(read).toMatchObject({ test_share: 50, metric: "unique_opens", wait_minutes: 60, results: { winner: null, decide_at: null } });

    await publishByHand(panel, id);
    const late = await setTest(panel, id);
    expect(late.status).toBe(409);
    expect(late.body.errors[0]).toMatchObject({ field: "status", message: expect.stringContaining("the campaign is sending") });
    expect((await admin("DELETE", `/panels/${panel.id}/campaigns/${id}/ab-test`)).status).toBe(409);
  });

  it("published in several steps, holds every recipient until the last step has ranked them all, and decides only after it", async () => {
    const now = Date.now();
    const { panel, id, stored, audience } = await scheduledTest(now);
    // It starts (the campaign as it started: sending, its recipients still to insert, its test kept).
    expect(await startPublish(panelData, stored, now)).toMatchObject({ id, status: "sending", publishing: true, publishedAt: now, abTest: stored.abTest });
    let steps = 0;
    for (;;) {
      // Three contact ids a step: twelve contacts take at least four steps.
      const step = (await publishStep(panelData, stored, 4, 3, now, audience))!;
      steps++;
      if (step.done) break;
      // Before the last step none can be claimed (the recipients ranked so far wait for the rest), and the wait has not begun.
      for (let batch = 0; batch < NAMES.length; batch++) await sendCampaignBatch(env, emailProvider(env), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch });
      expect(await outbox(panel)).toHaveLength(0);
      await decideDueAbTests(env, panelData, now + 61 * 60_000);
      expect(await winner(panel, id)).toBeNull();
    }
    expect(steps).toBeGreaterThanOrEqual(4);
    const rows = await groups(id);
    expect(rows).toHaveLength(NAMES.length);
    expect(rows.filter((r) => r.ab_group === "test")).toHaveLength(6);
    expect(rows.filter((r) => r.ab_group === "rest")).toHaveLength(6);
    // Each step began a batch of its own: every batch number the steps used.
    const batches = (await panelData.prepare("SELECT DISTINCT batch FROM campaign_messages WHERE campaign_id = ?").bind(id).all<{ batch: number }>()).results;
    for (const { batch } of batches) await sendCampaignBatch(env, emailProvider(env), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch });
    expect(await outbox(panel)).toHaveLength(6);
  });

  it("ranks in steps that each read their recipients from the held ones' index, never the campaign's rows whole", async () => {
    const now = Date.now();
    const { id, stored, audience } = await scheduledTest(now);
    await startPublish(panelData, stored, now);
    const { db, caught } = recording(panelData);
    while (!(await publishStep(db, stored, 4, 5, now, audience))!.done);
    const ranks = caught.filter((c) => /^\s*UPDATE campaign_messages SET\s+ab_group/.test(c.sql));
    // Twelve recipients, five a step: three ranking steps.
    expect(ranks).toHaveLength(3);
    for (const rank of ranks) {
      const plan = await planOf(panelData, rank);
      // The step's recipients read from the held ones' index, a step's worth; each then found by key, not by walking the campaign's held rows.
      expect(plan.match(/campaign_messages_ab_held/g)).toHaveLength(1);
      expect(plan).toMatch(/SEARCH campaign_messages USING INDEX \S+ \(campaign_id=\? AND contact_id=\?\)/);
      expect(plan).not.toMatch(/SCAN campaign_messages\b/);
    }
    expect((await groups(id)).filter((r) => r.ab_group === "test")).toHaveLength(6);
  });

  it("counts the wait from the end of publication (its last step), not from its start", async () => {
    const start = Date.now();
    const { panel, id, stored, audience } = await scheduledTest(start);
    await startPublish(panelData, stored, start);
    // The first steps at the start, the last one 30 minutes later (a large audience, a slow queue).
    expect((await publishStep(panelData, stored, 4, 3, start, audience))!.done).toBe(false);
    const end = start + 30 * 60_000;
    for (;;) if ((await publishStep(panelData, stored, 4, 3, end, audience))!.done) break;
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test.decide_at).toBe(new Date(end + 60 * 60_000).toISOString());
    // An hour after the start is half an hour after the end: not yet.
    await decideDueAbTests(env, panelData, start + 61 * 60_000);
    expect(await winner(panel, id)).toBeNull();
    await decideDueAbTests(env, panelData, end + 60 * 60_000);
    expect(await winner(panel, id)).toBe(0);
  });

  it("previews each variant as a chosen contact and sends a test copy of each; a variant the test lacks is refused under variant", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    const preview = (query: string) => admin("GET", `/panels/${panel.id}/campaigns/${id}/preview?${query}`);
    // Without a test, naming a variant is refused.
    expect((await preview("variant=A")).body.errors).toEqual([{ field: "variant", message: "the campaign has no A/B test" }]);
    expect((await setTest(panel, id)).status).toBe(200);

    expect((await preview("contact=ada@example.com&variant=A")).body).toEqual({ subject: "A: sale for Ada", html: "<p>Hi Ada</p>", contact: "ada@example.com" });
    expect((await preview("contact=bob@example.com&variant=B")).body).toEqual({ subject: "B: last chance", html: "<p>Only today, Bob</p>", contact: "bob@example.com" });
    expect((await preview("contact=bob@example.com")).body).toMatchObject({ subject: "Hello Bob", html: "<p>Hi Bob</p>" });
    expect((await preview("variant=C")).body.errors).toEqual([{ field: "variant", message: "the A/B test has variants A to B, not C" }]);
    expect((await preview("variant=b")).body.errors).toEqual([{ field: "variant", message: "must be a variant's letter: A, B, C or D" }]);

    const test = (body: unknown) => admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, body);
    expect((await test({ email: "ada@example.com", variant: "A" })).status).toBe(200);
    expect((await test({ emails: ["bob@example.com"], variant: "B" })).status).toBe(200);
    const refused = await test({ email: "ada@example.com", variant: "D" });
    expect([refused.status, refused.body.errors]).toEqual([400, [{ field: "variant", message: "the A/B test has variants A to B, not D" }]]);
    const copies = (await admin("GET", `/panels/${panel.id}/outbox?campaign=${id}`)).body.messages;
    expect(copies.map((m: any) => [m.to, m.subject]).sort()).toEqual([
      ["ada@example.com", "[Test A] A: sale for Ada"],
      ["bob@example.com", "[Test B] B: last chance"],
    ]);
    const bob = (await admin("GET", `/panels/${panel.id}/outbox/${encodeURIComponent(copies.find((m: any) => m.to === "bob@example.com").id)}`)).body;
    expect(bob.html).toContain("<p>Only today, Bob</p>");
    expect(bob.raw).toContain("X-Test-Send: B");
    // Test copies are no recipients: the campaign was never published.
    expect((await getCampaign(panelData, panel.id, id))!.status).toBe("draft");
  });

  it("sends the test share split evenly and deterministically, waits, picks the winner by unique opens and sends it to the rest, each contact once", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);

    // Half the audience is tested, in the order of the campaign's hash of each contact, the variants in turn.
    const rows = await groups(id);
    const seed = abSeed(id);
    const order = rows.map((r) => r.contact_id).sort((a, b) => abOrderKey(seed, a) - abOrderKey(seed, b) || a - b);
    const tested = order.slice(0, 6);
    expect(rows.filter((r) => r.ab_group === "test").map((r) => r.contact_id).sort((a, b) => a - b)).toEqual([...tested].sort((a, b) => a - b));
    tested.forEach((contactId, rank) => expect(rows.find((r) => r.contact_id === contactId)!.variant).toBe(rank % 2));
    expect(rows.filter((r) => r.ab_group === "rest").every((r) => r.variant === null)).toBe(true);

    await sendBatches(panel, id);
    const first = await outbox(panel);
    expect(first).toHaveLength(6);
    expect(first.filter((m) => m.subject.startsWith("A: sale for ")).length).toBe(3);
    expect(first.filter((m) => m.subject === "B: last chance").length).toBe(3);
    // The rest waits: the campaign sends on, nothing more goes out before the winner.
    expect((await campaign(panel, id)).status).toBe("sending");
    await sendBatches(panel, id);
    expect(await outbox(panel)).toHaveLength(6);

    await open(panel, id, 0, 1, published + 60_000);
    await open(panel, id, 1, 2, published + 60_000);
    await decideDueAbTests(env, panelData, published + 59 * 60_000);
    expect(await winner(panel, id)).toBeNull();
    await decideDueAbTests(env, panelData, published + 60 * 60_000);
    expect(await winner(panel, id)).toBe(1);
    await sendBatches(panel, id);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 12, sent: 12 }, ab_test: { winner: "B" } });

    const messages = await outbox(panel);
    expect(messages.map((m) => m.to).sort()).toEqual(NAMES.map((n) => `${n.toLowerCase()}@example.com`).sort());
    expect(messages.filter((m) => m.subject === "B: last chance")).toHaveLength(9);

    const report = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    expect(report).toMatchObject({
      metric: "unique_opens",
      winner: "B",
      decide_at: expect.any(String),
      variants: [
        { label: "A", subject: "A: sale for {{NAME|you}}", own_html: false, winner: false, recipients: 3, sent: 3, unique_opens: 1, open_rate: 0.3333 },
        { label: "B", subject: "B: last chance", own_html: true, winner: true, recipients: 3, sent: 3, unique_opens: 2, open_rate: 0.6667 },
      ],
      rest: { variant: "B", recipients: 6, sent: 6 },
    });
    // The rest's copies are the winner's body.
    const restRow = (await groups(id)).find((r) => r.ab_group === "rest")!;
    const copy = (await admin("GET", `/panels/${panel.id}/messages/${id}.${restRow.contact_id}/copy`)).body;
    expect(copy).toMatchObject({ subject: "B: last chance", html: expect.stringContaining("Only today, ") });

    // Housekeeping prunes the messages after CAMPAIGN_MESSAGES_DAYS: the tallies are kept first, the report unchanged.
    await keepAbResults(panelData, id);
    while ((await deleteCampaignMessages(panelData, id, 5)) > 0);
    expect(await groups(id)).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toEqual(report);
  });

  it("releases the rest with the decision's one row, never a statement over the rest: each rest recipient takes the winner as its batch is claimed, counted the winner's before and after", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    await open(panel, id, 1, 1, published + 60_000);
    // The decision's nudges are kept, so nothing claims the rest before the test looks at it.
    const sends = collectingQueue();
    const { db, caught } = recording(panelData);
    expect(await decideDueAbTests(withBindings(env, { SENDS: sends } as Partial<Env>), db, published + 60 * 60_000)).toBe(1);
    expect(await winner(panel, id)).toBe(1);
    expect(sends.bodies.length).toBeGreaterThan(0);
    // Its one write is the campaign's row, found by key: no statement writes (or walks) the rest's rows,
    // so the release costs the same for six recipients or millions (decision 0056).
    const writes = caught.filter((c) => /^\s*(UPDATE|INSERT|DELETE|REPLACE)\b/i.test(c.sql));
    expect(writes.map((w) => w.sql.trim().split(/\s+/).slice(0, 2).join(" "))).toEqual(["UPDATE campaigns"]);
    const plan = await planOf(panelData, writes[0]!);
    expect(plan).toMatch(/^SEARCH campaigns USING (INDEX \S+|INTEGER PRIMARY KEY|PRIMARY KEY) \(id=\?\)$/);
    const rest = () => groups(id).then((rows) => rows.filter((r) => r.ab_group === "rest"));
    expect((await rest()).map((r) => [r.variant, r.status])).toEqual(Array(6).fill([null, "queued"]));
    // Released but not yet sent, the rest is the winner's in the report, each group's count exact.
    const results = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    expect(await results()).toMatchObject({
      winner: "B",
      variants: [
        { label: "A", recipients: 3, sent: 3 },
        { label: "B", recipients: 3, sent: 3, unique_opens: 1 },
      ],
      rest: { variant: "B", recipients: 6, sent: 0 },
    });

    // The winner is written with the claim, to the claimed batch's rows only, found by key.
    const claim = recording(panelData);
    expect(await claimBatch(claim.db, { id, panelId: panel.id }, 99, "plan", Date.now(), 0, true)).toEqual([]);
    const claimPlan = await planOf(panelData, claim.caught.find((c) => /SET status = 'sending'/.test(c.sql))!);
    expect(claimPlan).toMatch(/^SEARCH campaign_messages USING (PRIMARY KEY|INDEX \S+) \(campaign_id=\? AND batch=\?\)/);
    expect(claimPlan).not.toMatch(/SCAN campaign_messages\b/);
    // Each claim gives its rest recipients the winner; every one gets B's subject, once.
    await sendBatches(panel, id);
    expect((await rest()).map((r) => [r.variant, r.status])).toEqual(Array(6).fill([1, "sent"]));
    const messages = await outbox(panel);
    expect(new Set(messages.map((m) => m.to)).size).toBe(12);
    expect(messages.filter((m) => m.subject === "B: last chance")).toHaveLength(9);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 12, sent: 12 } });
    expect(await results()).toMatchObject({ variants: [{ recipients: 3, sent: 3 }, { recipients: 3, sent: 3 }], rest: { variant: "B", recipients: 6, sent: 6 } });
  });

  it("a tie goes to the first variant", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id, { ...TEST, metric: "unique_clicks", test_share: 20 })).status).toBe(200);
    const published = await publishByHand(panel, id);
    // 20 % of 12 is 2.4: two recipients, one per variant.
    expect((await groups(id)).filter((r) => r.ab_group === "test")).toHaveLength(2);
    await sendBatches(panel, id);
    await decideDueAbTests(env, panelData, published + 60 * 60_000);
    expect(await winner(panel, id)).toBe(0);
  });

  it("cancel during the wait: the rest never goes, and is counted skipped", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    expect((await act(panel, id, "cancel")).body).toMatchObject({ status: "cancelled", counters: { sent: 6, skipped: 6, queued: 0 } });
    await decideDueAbTests(env, panelData, published + 2 * 60 * 60_000);
    expect(await winner(panel, id)).toBeNull();
    await sendBatches(panel, id);
    expect(await outbox(panel)).toHaveLength(6);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toMatchObject({ winner: null, rest: { variant: null, recipients: 6, sent: 0 } });
  });

  it("pause during the wait holds the decision until the campaign is resumed", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    expect((await act(panel, id, "pause")).body.status).toBe("paused");
    await decideDueAbTests(env, panelData, published + 2 * 60 * 60_000);
    expect(await winner(panel, id)).toBeNull();
    expect((await act(panel, id, "resume")).body.status).toBe("sending");
    // Resumed, nothing of the rest is nudged before the winner.
    expect(await outbox(panel)).toHaveLength(6);
    await decideDueAbTests(env, panelData, published + 2 * 60 * 60_000);
    expect(await winner(panel, id)).toBe(0);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 12 } });
    expect(await outbox(panel)).toHaveLength(12);
  });

  it("a decision whose nudges were lost (a crash) is sent by the stalled-campaign sweep a minute later, each contact once", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id, { ...TEST, wait_minutes: 1 })).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    const failing = { sendBatch: () => Promise.reject(new Error("queue down")), send: () => Promise.reject(new Error("queue down")) } as unknown as Queue;
    const decidedAt = Math.max(published + 60_000, Date.now());
    await expect(decideDueAbTests(withBindings(env, { SENDS: failing }), panelData, decidedAt)).rejects.toThrow(/queue down/);
    expect(await winner(panel, id)).toBe(0);
    // The sweep nudges the released rest once a minute passed.
    await fireCron(decidedAt + 61_000);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 12, sent: 12 } });
    const messages = await outbox(panel);
    expect(new Set(messages.map((m) => m.to)).size).toBe(12);
    expect(messages).toHaveLength(12);
  });
});

/** The outbox provider, refusing (for good) the messages whose ids are `refused`. */
function refusing(refused: ReadonlySet<string>): EmailProvider {
  const real = emailProvider(env);
  return {
    name: real.name,
    idempotent: real.idempotent,
    realEmail: real.realEmail,
    async send(messages, now) {
      const passed = await real.send(messages.filter((m) => !refused.has(m.id)), now);
      return messages.map((m) => (refused.has(m.id) ? { ok: false, retryable: false, error: "mailbox refused" } : passed.shift()!));
    },
  };
}

describe("an A/B test's figures (decision 0057)", () => {
  it("are kept by the triggers, equal at every step to a GROUP BY over the messages, exact in the report before and after the winner, sends, opens, clicks, bounces, unsubscribes and the pruning", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id, { ...TEST, metric: "unique_clicks" })).status).toBe(200);
    const published = await publishByHand(panel, id);
    const counted = () => abGroupTallies(panelData, panel.id, id);
    const same = async () => expect(await counted()).toEqual(await talliesFromMessages(panelData, id));
    const report = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    const read = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test.results;
    const figures = (recipients: number, sent: number, more: Record<string, number> = {}) => ({ recipients, sent, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, ...more });

    // Ranked: three a variant, six held; nothing sent.
    await same();
    expect(await counted()).toEqual([
      { group: "rest", variant: null, recipients: 6, sent: 0, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, bounces: 0, unsubscribes: 0 },
      { group: "test", variant: 0, recipients: 3, sent: 0, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, bounces: 0, unsubscribes: 0 },
      { group: "test", variant: 1, recipients: 3, sent: 0, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, bounces: 0, unsubscribes: 0 },
    ]);
    expect(await report()).toMatchObject({ winner: null, variants: [figures(3, 0), figures(3, 0)], rest: { variant: null, ...figures(6, 0) } });

    // The test share goes out but for one of A's, refused for good.
    const refusedA = (await groups(id)).find((r) => r.ab_group === "test" && r.variant === 0)!;
    await sendBatches(panel, id, refusing(new Set([campaignMessageId(id, refusedA.contact_id)])));
    await same();
    expect(await report()).toMatchObject({ variants: [figures(3, 2), figures(3, 3)], rest: figures(6, 0) });
    expect((await counted()).find((t) => t.group === "test" && t.variant === 0)).toMatchObject({ failed: 1 });

    // Opens (one recipient twice), clicks, a bounce and an unsubscribe, each counted once where it belongs.
    const sentOf = async (variant: number) => (await groups(id)).filter((r) => r.ab_group === "test" && r.variant === variant && r.status === "sent");
    const [a] = await sentOf(0);
    const [b1, b2] = await sentOf(1);
    const at = published + 60_000;
    for (const [row, kind] of [[a, "open"], [a, "open"], [b1, "open"], [b1, "click"], [b2, "click"], [b2, "click"]] as const) {
      expect(await countEngagement(panelData, { panelId: panel.id, campaignId: id, contactId: row!.contact_id }, kind, at)).not.toBeNull();
    }
    expect(await markUnsubscribed(panelData, { panelId: panel.id, campaignId: id, contactId: b2!.contact_id }, at)).not.toBeNull();
    const providerId = await panelData.prepare("SELECT provider_msg_id FROM campaign_messages WHERE campaign_id = ? AND contact_id = ?").bind(id, a!.contact_id).first<string>("provider_msg_id");
    expect(await markBounced(panelData, providerId!, at)).not.toBeNull();
    await same();
    expect(await counted()).toEqual([
      { group: "rest", variant: null, recipients: 6, sent: 0, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, bounces: 0, unsubscribes: 0 },
      { group: "test", variant: 0, recipients: 3, sent: 2, failed: 1, skipped: 0, opens: 2, unique_opens: 1, clicks: 0, unique_clicks: 0, bounces: 1, unsubscribes: 0 },
      { group: "test", variant: 1, recipients: 3, sent: 3, failed: 0, skipped: 0, opens: 1, unique_opens: 1, clicks: 3, unique_clicks: 2, bounces: 0, unsubscribes: 1 },
    ]);

    // The winner by unique clicks: B. Released, its rest is B's before and after it is sent (its claim's write of the variant counts nothing).
    await decideDueAbTests(withBindings(env, { SENDS: collectingQueue() } as Partial<Env>), panelData, published + 60 * 60_000);
    expect(await winner(panel, id)).toBe(1);
    await same();
    expect(await report()).toMatchObject({ winner: "B", rest: { variant: "B", ...figures(6, 0) } });
    await sendBatches(panel, id);
    await same();
    const [rest] = (await groups(id)).filter((r) => r.ab_group === "rest");
    expect(await countEngagement(panelData, { panelId: panel.id, campaignId: id, contactId: rest!.contact_id }, "click", at)).not.toBeNull();
    await same();
    const results = {
      winner: "B",
      variants: [
        { label: "A", ...figures(3, 2, { opens: 2, unique_opens: 1, open_rate: 0.5 }) },
        { label: "B", ...figures(3, 3, { opens: 1, unique_opens: 1, clicks: 3, unique_clicks: 2, click_rate: 0.6667 }) },
      ],
      rest: { variant: "B", ...figures(6, 6, { clicks: 1, unique_clicks: 1 }) },
    };
    expect(await report()).toMatchObject(results);
    expect(await read()).toEqual(await report());
    const before = await report();

    // Pruned: nothing kept in the campaign's row (the counters outlive the rows), the figures unchanged.
    await keepAbResults(panelData, id);
    while ((await deleteCampaignMessages(panelData, id, 5)) > 0);
    expect(await groups(id)).toEqual([]);
    expect(await panelData.prepare("SELECT ab_results FROM campaigns WHERE id = ?").bind(id).first("ab_results")).toBeNull();
    expect(await report()).toEqual(before);
  });

  it("are read, for the report and for the winner's pick, from a few counter rows found by key, never from the campaign's messages", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    await open(panel, id, 1, 2, published + 60_000);

    const reading = recording(panelData);
    const results = await abTestResults([reading.db], (await getCampaign(panelData, panel.id, id))!);
    expect(results).toMatchObject({ variants: [{ recipients: 3, sent: 3, unique_opens: 0 }, { recipients: 3, sent: 3, unique_opens: 2 }], rest: { recipients: 6, sent: 0 } });
    // The decision's reads: every statement before its one write.
    const deciding = recording(panelData);
    expect(await decideDueAbTests(withBindings(env, { SENDS: collectingQueue() } as Partial<Env>), deciding.db, published + 60 * 60_000)).toBe(1);
    expect(await winner(panel, id)).toBe(1);
    const decision = deciding.caught.slice(0, deciding.caught.findIndex((c) => /^\s*UPDATE campaigns SET ab_winner/.test(c.sql)));
    for (const reads of [reading.caught, decision]) {
      expect(reads.some((c) => /\bFROM campaign_ab_tallies\b/.test(c.sql))).toBe(true);
      expect(namingMessages(reads)).toEqual([]);
      for (const statement of reads) {
        const plan = await planOf(panelData, statement);
        expect(plan).not.toMatch(/\bSCAN (campaign_ab_tallies|campaign_messages)\b/);
        if (/FROM campaign_ab_tallies/.test(statement.sql)) expect(plan).toMatch(/SEARCH campaign_ab_tallies USING PRIMARY KEY \(campaign_id=\?\)/);
      }
    }
  });

  it("of a campaign published before shard migration 0113 (not counted) are read from its messages, and kept before they are pruned", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    expect((await setTest(panel, id)).status).toBe(200);
    const published = await publishByHand(panel, id);
    await sendBatches(panel, id);
    await open(panel, id, 0, 1, published + 60_000);
    // As the migration leaves a campaign that had begun publishing: no counters, marked so.
    await panelData.batch([
      panelData.prepare("UPDATE campaigns SET ab_tallied = 0 WHERE id = ?").bind(id),
      panelData.prepare("DELETE FROM campaign_ab_tallies WHERE campaign_id = ?").bind(id),
    ]);
    const report = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    expect(await report()).toMatchObject({ variants: [{ recipients: 3, sent: 3, unique_opens: 1 }, { recipients: 3, sent: 3, unique_opens: 0 }], rest: { recipients: 6, sent: 0 } });
    expect(await abGroupTallies(panelData, panel.id, id)).toEqual(await talliesFromMessages(panelData, id));
    const before = await report();
    await keepAbResults(panelData, id);
    while ((await deleteCampaignMessages(panelData, id, 5)) > 0);
    expect(await panelData.prepare("SELECT ab_results FROM campaigns WHERE id = ?").bind(id).first("ab_results")).not.toBeNull();
    expect(await report()).toEqual(before);
  });
});

describe("a claimed batch after a cancel", () => {
  it("is not handed to the provider: its recipients are settled skipped", async () => {
    const { panel, list } = await panelWithList();
    const id = await draft(panel, list);
    await publishByHand(panel, id);
    // The cancel lands while the sender renders the claimed batch (it reads the body then).
    const files = new Proxy(env.FILES, {
      get(target, prop) {
        if (prop === "get") {
          return async (key: string) => {
            await cancelCampaign(panelData, panel.id, id, ["sending"], Date.now());
            return target.get(key);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await sendCampaignBatch({ ...env, FILES: files }, emailProvider(env), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 });
    expect(await outbox(panel)).toHaveLength(0);
    expect((await campaign(panel, id))).toMatchObject({ status: "cancelled", counters: { sent: 0, skipped: 12, queued: 0 } });
  });
});
