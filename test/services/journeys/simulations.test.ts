import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../../src/jobs/queues";
import { recordEvents } from "../../../src/services/pipeline/record";
import { startSimulation } from "../../../src/services/simulations/simulate";
import { getPanel } from "../../../src/store/panels";
import { eventually, pipelineSettled } from "../../support/activity";
import { collectingQueue, withBindings, type CollectingQueue } from "../../support/cron";
import { changeContactTopics } from "../../../src/services/topics/choices";
import { admin, apiFor, contactsOf, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { NO_MOBILE, PHONE_STOPPED, PUSH_TURNED_OFF } from "../../../src/domain/send-skips";
import { setPushOptOut } from "../../../src/store/preferences";
import { putPushSubscription } from "../../../src/store/push";
import { contactBucket } from "../../../src/domain/partitions";
import { suppressPhone } from "../../../src/store/sms";
import { suppressAddress } from "../../../src/store/suppressions";
import { recordingBinds } from "../../support/recorded-binds";
import { splitBranchOf, type SplitStep } from "../../../src/domain/journey";
import { branchFigures } from "../../../src/domain/split-confidence";
import { addMembersQuietly, cartPanel, createWebhook, delivered, startJourney } from "../../support/journeys";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Records a custom activity of `who` as it arrived `msAgo` back (received when it happened, as live events are). */
async function happened(panel: TestPanel, name: string, who: string, msAgo: number, params: Record<string, unknown> = {}) {
  const at = Date.now() - msAgo;
  await recordEvents(env, { id: panel.id }, [{ channel: "custom_activity", name, identity: who, params, occurredAt: at }], { now: at });
}

/** Hands the kept IMPORTS messages to the consumer (each twice: a redelivery changes nothing) until none is left. */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<number> {
  let steps = 0;
  while (imports.bodies.length && steps < 50) {
    const bodies = imports.bodies.splice(0);
    const batch = createMessageBatch("apiv2-imports-default", [...bodies, ...bodies].map((body, i) => ({ id: `sim-${steps}-${i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
    steps += bodies.length;
  }
  return steps;
}

const count = async (table: string, panel: TestPanel) => (await panelData.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE panel_id = ?`).bind(panel.id).first<{ n: number }>())!.n;

describe("journey simulations on history", () => {
  it("refuses days outside 1–30 naming days, and an unknown version, starting nothing", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "d", type: "delay", for: "1h" }] }, null);
    for (const days of [0, 31, 2.5, "7"]) {
      const refused = await admin("POST", `${journey.path}/simulations`, { days });
      expect(refused.status, JSON.stringify(days)).toBe(400);
      expect(JSON.stringify(refused.body)).toContain("days");
    }
    const missing = await admin("POST", `${journey.path}/simulations`, {});
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain("days");
    const version = await admin("POST", `${journey.path}/simulations`, { days: 7, version: 9 });
    expect(version.status).toBe(404);
    expect(JSON.stringify(version.body)).toContain("version");
    expect((await admin("GET", `${journey.path}/simulations`)).body.simulations).toEqual([]);
  });

  it("runs a draft over the recorded activities in queue steps with progress, counting per step, and sends nothing", async () => {
    const panel = await createPanel({ name: "Sim Shop" });
    await cartPanel(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "w", type: "wait_for_event", events: { activity: "purchase" }, within: "1d" },
          { id: "thanks", type: "email", after: "w", on: "event", subject: "Thanks {{EMAIL}}", html: "<p>Thank you</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "hook", type: "webhook", after: "w", on: "timeout", webhook: hook.id, params: { reason: "no purchase" } },
        ],
      },
      null,
    );
    // a buys within the day; b does not; c's day is not over yet. An activity older than 7 days is not simulated.
    await happened(panel, "add_to_cart", "a@example.com", 5 * DAY, { name: "shoes", price: 10 });
    await happened(panel, "add_to_cart", "b@example.com", 5 * DAY - HOUR, { name: "hat", price: 5 });
    await happened(panel, "purchase", "a@example.com", 5 * DAY - 2 * HOUR, { prid: 1 });
    await happened(panel, "add_to_cart", "c@example.com", 2 * HOUR, { name: "scarf", price: 7 });
    await happened(panel, "add_to_cart", "old@example.com", 8 * DAY, { name: "sock", price: 1 });
    await pipelineSettled(panel.id);

    // One event per step, through the IMPORTS queue.
    const imports = collectingQueue();
    const stepEnv = withBindings(env, { IMPORTS: imports, SIMULATION_STEP_EVENTS: "1" } as Partial<Env>);
    const loaded = (await getPanel(env.DB, panel.id))!;
    const started = await startSimulation(stepEnv, panelData, loaded, journey.id, { days: 7 }, { operator: null }, Date.now());
    if (!started.ok) throw new Error(JSON.stringify(started.problem));
    const id = started.value.simulation.id;
    const running = await admin("GET", `${journey.path}/simulations/${id}`);
    expect(running.status).toBe(200);
    expect(running.body).toMatchObject({ id, state: "running", version: 1, days: 7, events_read: 1, result: null });
    expect(running.body.progress).toBeGreaterThan(0);
    expect(running.body.progress).toBeLessThan(1);

    expect(await drainImports(stepEnv, imports)).toBeGreaterThanOrEqual(3);
    const done = await admin("GET", `${journey.path}/simulations/${id}`);
    expect(done.body).toMatchObject({ state: "done", progress: 1, events_read: 4, error: null });
    const result = done.body.result;
    expect(result).toMatchObject({ entered: 3, active: 1, completed: 2, exited: 0, messages: { email: 1 }, webhooks: { hook: 1 } });
    expect(result.steps).toEqual({ w: { acted: 3, waiting: 1 }, thanks: { acted: 1, waiting: 0 }, hook: { acted: 1, waiting: 0 } });
    expect(result.samples.messages).toEqual([expect.objectContaining({ step_id: "thanks", channel: "email", contact_key: "a@example.com", content: expect.objectContaining({ subject: "Thanks a@example.com" }) })]);
    expect(result.samples.webhooks).toHaveLength(1);
    expect(result.samples.webhooks[0]).toMatchObject({ step_id: "hook", webhook: hook.id, payload: { journey_name: "Cart reminder", custom_params: { reason: "no purchase" }, event_params: { identity: "b@example.com" } } });

    // Nothing happened for real: no instance, no message, no webhook call; the journey is still a draft.
    expect(await count("journey_instances", panel)).toBe(0);
    expect(await count("journey_messages", panel)).toBe(0);
    expect(await delivered(hook)).toEqual([]);
    expect((await admin("GET", journey.path)).body).toMatchObject({ status: "draft", counters: { entered: 0 } });

    // Through the API (one step here, done in the request), kept with the version.
    const again = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body).toMatchObject({ state: "done", version: 1, result: { entered: 3 } });
    const listed = await admin("GET", `${journey.path}/simulations?version=1`);
    expect(listed.body.simulations.map((s: { id: string }) => s.id)).toEqual([again.body.id, id]);
    expect((await admin("GET", `${journey.path}/simulations?version=2`)).body.simulations).toEqual([]);
  });

  it("applies the panel's caps, quiet hours and topics as the engine would: skipped for a cap or a left topic, deferred past quiet hours", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { message_rules: { caps: [{ channel: "email", max: 1, days: 1 }], quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }] } })).status).toBe(200);
    const news = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Product news" })).body;
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "mail", type: "email", topic: news.id, subject: "News", html: "<p>News</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "text", type: "sms", after: "mail", text: "Hi" },
        ],
      },
      null,
    );
    // Noon three days ago, UTC (the panel's zone).
    const noon = Math.floor(Date.now() / DAY) * DAY - 3 * DAY + 12 * HOUR;
    const ago = (at: number) => Date.now() - at;
    await happened(panel, "add_to_cart", "a@example.com", ago(noon));
    // a again within the day: its email is skipped for the cap (its SMS goes).
    await happened(panel, "add_to_cart", "a@example.com", ago(noon + HOUR));
    // b at 22:00: its email goes, its SMS waits for 09:00.
    await happened(panel, "add_to_cart", "b@example.com", ago(noon + 10 * HOUR));
    // c left the email's topic: skipped there, the journey goes on to the SMS.
    await happened(panel, "add_to_cart", "c@example.com", ago(noon + HOUR / 2));
    // d had a campaign email an hour before: its recorded send fills the cap.
    await happened(panel, "add_to_cart", "d@example.com", ago(noon + 2 * HOUR));
    await pipelineSettled(panel.id);
    const ids = new Map((await contactsOf(panel.id)).map((c) => [c.key, c.id]));
    await changeContactTopics(panelData, panel.id, ids.get("c@example.com")!, new Map([[news.id, false]]), { via: "preference_page", client: { ip: null, userAgent: null }, panelName: "Shop" }, Date.now());
    await panelData
      .prepare("INSERT INTO contact_sends (panel_id, contact_id, channel, at, send_key) VALUES (?, ?, 'email', ?, 'campaign:test')")
      .bind(panel.id, ids.get("d@example.com")!, noon + HOUR)
      .run();

    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 5, completed: 5, active: 0, messages: { email: 2, sms: 5 }, skipped: { cap: 2, topic: 1 }, deferred: 1 } });
    expect(simulated.body.result.steps).toEqual({
      mail: { acted: 5, waiting: 0, skipped_cap: 2, skipped_topic: 1 },
      text: { acted: 5, waiting: 0, deferred: 1 },
    });
    expect(simulated.body.result.samples.messages.filter((m: { step_id: string }) => m.step_id === "mail").map((m: { contact_key: string }) => m.contact_key)).toEqual(["a@example.com", "b@example.com"]);
    // Nothing was counted for real.
    expect(await count("contact_sends", panel)).toBe(1);
  });

  it("counts the messages the senders would skip, per step with the reason they record: no address on the channel, a suppressed one", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    expect((await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: "AC0123456789abcdef0123456789abcdef", auth_token: "tok", from: "+15005550006" })).status).toBe(200);
    expect((await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "mailto:ops@shop.example" } })).status).toBe(200);
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "mail", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "text", type: "sms", after: "mail", text: "Hi" },
          { id: "note", type: "bpn", after: "text", text: "Hi" },
        ],
      },
      null,
    );
    // a reaches every channel; b's address, number and push are stopped; c has no number and no browser.
    const add = apiFor(panel);
    await add("contact", "add", { data: { EMAIL: "a@example.com", MOBILE: "+15550001" } });
    await add("contact", "add", { data: { EMAIL: "b@example.com", MOBILE: "+15550002" } });
    await add("contact", "add", { data: { EMAIL: "c@example.com" } });
    for (const who of ["a", "b", "c"]) await happened(panel, "add_to_cart", `${who}@example.com`, HOUR);
    await pipelineSettled(panel.id);
    const ids = new Map((await contactsOf(panel.id)).map((c) => [c.key, c.id]));
    await suppressAddress(panelData, panel.id, "b@example.com", "hard_bounce", null, 0);
    await suppressPhone(panelData, panel.id, "15550002", "stop", 0);
    await setPushOptOut(panelData, panel.id, ids.get("b@example.com")!, true, 0);
    await putPushSubscription(panelData, { panelId: panel.id, kind: "web", address: "https://push.example/a", p256dh: "k", auth: "a", platform: null, contactKey: "a@example.com", uniqueid: null, bucket: contactBucket(panel.id, "a@example.com") }, 0);

    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 1 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 3, completed: 3, messages: { email: 2, sms: 1, bpn: 1 }, skipped: { cap: 0, topic: 0, address: 2, suppressed: 3 } } });
    expect(simulated.body.result.steps).toEqual({
      mail: { acted: 3, waiting: 0, skipped_suppressed: 1, skip_reasons: { "the address is suppressed (hard bounce)": 1 } },
      text: { acted: 3, waiting: 0, skipped_address: 1, skipped_suppressed: 1, skip_reasons: { [NO_MOBILE]: 1, [PHONE_STOPPED]: 1 } },
      note: { acted: 3, waiting: 0, skipped_address: 1, skipped_suppressed: 1, skip_reasons: { "the contact has no web push subscription": 1, [PUSH_TURNED_OFF]: 1 } },
    });
    // A skipped message is no sample: none was sent.
    const sampled = (step: string) => simulated.body.result.samples.messages.filter((m: { step_id: string }) => m.step_id === step).map((m: { contact_key: string }) => m.contact_key);
    expect([sampled("mail"), sampled("text"), sampled("note")]).toEqual([["a@example.com", "c@example.com"], ["a@example.com"], ["a@example.com"]]);
    expect(await count("journey_messages", panel)).toBe(0);
  });

  it("follows a wait for an open to its timeout, counting as unknown the waits after a message that would have gone out (not those after a skipped one)", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "mail", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "opened", type: "wait_for_event", after: "mail", events: ["open", "click"], within: "1d" },
          { id: "thanks", type: "email", after: "opened", on: "event", subject: "Thanks", html: "<p>Thanks</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "again", type: "email", after: "opened", on: "timeout", subject: "Again", html: "<p>Again</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        ],
      },
      null,
    );
    // a's day is over, c's is not; b's address is suppressed: its wait can only time out.
    await happened(panel, "add_to_cart", "a@example.com", 3 * DAY);
    await happened(panel, "add_to_cart", "b@example.com", 3 * DAY);
    await happened(panel, "add_to_cart", "c@example.com", HOUR);
    await pipelineSettled(panel.id);
    await suppressAddress(panelData, panel.id, "b@example.com", "unsubscribe", null, 0);

    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 3, completed: 2, active: 1, unknown: 2, messages: { email: 3 }, skipped: { suppressed: 2 } } });
    expect(simulated.body.result.steps).toEqual({
      mail: { acted: 3, waiting: 0, skipped_suppressed: 1, skip_reasons: { "the address is suppressed (unsubscribed)": 1 } },
      opened: { acted: 3, waiting: 1, unknown: 2 },
      again: { acted: 2, waiting: 0, skipped_suppressed: 1, skip_reasons: { "the address is suppressed (unsubscribed)": 1 } },
    });
  });

  it("counts an A/B split's conversions per branch: the goal's activity within its window after the split, hold-outs included; an open goal's are unknown", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    // A gets an email, B is a hold-out (its instance ends at the split).
    const splitThen = (goal: Record<string, unknown>) => ({
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "ab", type: "split", branches: [{ percent: 50, then: "mail" }, { percent: 50 }], goal },
        { id: "mail", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      ],
    });
    const journey = await startJourney(panel, splitThen({ activity: "purchase", within: "1d" }), null);
    const ab = (await admin("GET", journey.path)).body.steps.find((s: { id: string }) => s.id === "ab") as SplitStep;
    // Carts six days back, until each branch has two contacts (the branch is a hash of the contact).
    const branches: [string[], string[]] = [[], []];
    const cartAt = new Map<string, number>();
    while (branches[0].length < 2 || branches[1].length < 2) {
      const key = `ab${cartAt.size}@example.com`;
      cartAt.set(key, 6 * DAY - cartAt.size * HOUR);
      await happened(panel, "add_to_cart", key, cartAt.get(key)!);
      await pipelineSettled(panel.id);
      const id = (await contactsOf(panel.id)).find((c) => c.key === key)!.id;
      branches[splitBranchOf(journey.id, ab, id)]!.push(key);
    }
    const [a, b] = branches;
    // Of each branch, the first buys within the day after its cart (the split), the second two days after: too late.
    for (const key of [a[0]!, b[0]!]) await happened(panel, "purchase", key, cartAt.get(key)! - 20 * HOUR);
    for (const key of [a[1]!, b[1]!]) await happened(panel, "purchase", key, cartAt.get(key)! - 2 * DAY);
    // A purchase before its cart does not convert (nor one of a contact in no branch).
    await happened(panel, "purchase", a.at(-1)!, cartAt.get(a.at(-1)!)! + HOUR);
    await happened(panel, "purchase", "nobody@example.com", DAY);
    await pipelineSettled(panel.id);

    // One event a step: the split entries waiting for their goal are carried in the state in R2.
    const imports = collectingQueue();
    const stepEnv = withBindings(env, { IMPORTS: imports, SIMULATION_STEP_EVENTS: "1" } as Partial<Env>);
    const started = await startSimulation(stepEnv, panelData, (await getPanel(env.DB, panel.id))!, journey.id, { days: 7 }, { operator: null }, Date.now());
    if (!started.ok) throw new Error(JSON.stringify(started.problem));
    await drainImports(stepEnv, imports);
    const done = await admin("GET", `${journey.path}/simulations/${started.value.simulation.id}`);
    expect(done.body).toMatchObject({ state: "done", result: { entered: a.length + b.length, completed: a.length + b.length, messages: { email: a.length } } });
    const [split] = done.body.result.splits;
    expect(split).toMatchObject({ step_id: "ab", goal: { activity: "purchase", within: "1d" }, winner: null, method: "two_proportion_z_test_vs_a", conversions_unknown: null });
    expect(split.branches.map(({ label, entered, converted }: { label: string; entered: number; converted: number }) => ({ label, entered, converted }))).toEqual([
      { label: "A", entered: a.length, converted: 1 },
      { label: "B", entered: b.length, converted: 1 },
    ]);
    // Rate and confidence as the live report computes them.
    expect(split.branches.map(({ entered, converted, rate, confidence }: Record<string, number>) => ({ entered, converted, rate, confidence }))).toEqual(
      branchFigures([
        { entered: a.length, converted: 1 },
        { entered: b.length, converted: 1 },
      ]),
    );

    // An open of the branch's messages cannot be known: no conversions, and why.
    const opened = await startJourney(panel, splitThen({ message_event: "open", within: "1d" }), null);
    const simulated = await admin("POST", `${opened.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    const [unknown] = simulated.body.result.splits;
    expect(unknown.conversions_unknown).toContain("whether one would have been opened is not known");
    expect(unknown.branches.reduce((n: number, br: { entered: number }) => n + br.entered, 0)).toBe(a.length + b.length);
    for (const br of unknown.branches) expect(br).toMatchObject({ converted: null, rate: null, confidence: null });
  });

  it("erasing a contact drops the samples naming it from the kept results, leaving the figures and others' samples", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "mail", type: "email", subject: "Hi {{EMAIL}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
          { id: "hook", type: "webhook", after: "mail", webhook: hook.id },
        ],
      },
      null,
    );
    await happened(panel, "add_to_cart", "a@example.com", 2 * DAY);
    await happened(panel, "add_to_cart", "b@example.com", DAY);
    await pipelineSettled(panel.id);
    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.body.result.samples.messages.map((m: { contact_key: string }) => m.contact_key)).toEqual(["a@example.com", "b@example.com"]);
    expect(simulated.body.result.samples.webhooks).toHaveLength(2);

    expect((await admin("DELETE", `/panels/${panel.id}/contacts/a%40example.com`)).status).toBe(200);
    const after = (await admin("GET", `${journey.path}/simulations/${simulated.body.id}`)).body.result;
    expect(after.samples.messages.map((m: { contact_key: string }) => m.contact_key)).toEqual(["b@example.com"]);
    expect(after.samples.webhooks.map((w: { contact_id: string }) => w.contact_id)).toEqual([simulated.body.result.samples.webhooks[1].contact_id]);
    expect(JSON.stringify(after)).not.toContain("a@example.com");
    expect(after).toMatchObject({ entered: 2, messages: { email: 2 }, webhooks: { hook: 2 } });
  });

  it("simulates a list-triggered journey from the members' added time", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    const journey = await startJourney(
      panel,
      { trigger: { type: "list", listid: list }, steps: [{ id: "hello", type: "email", subject: "Hi {{EMAIL}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }] },
      null,
    );
    await addMembersQuietly(panel, list, ["a@example.com", "b@example.com", "old@example.com"]);
    // old joined before the simulated days.
    await panelData.prepare("UPDATE list_members SET added_at = ? WHERE panel_id = ? AND contact_id = (SELECT id FROM contacts WHERE panel_id = ? AND pk_value = 'old@example.com')").bind(Date.now() - 10 * DAY, panel.id, panel.id).run();
    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 2, completed: 2, messages: { email: 2 } } });
    expect(simulated.body.result.samples.messages.map((m: { contact_key: string }) => m.contact_key).sort()).toEqual(["a@example.com", "b@example.com"]);
    expect(await count("journey_instances", panel)).toBe(0);
  });

  it("simulates a saved segment's journey from the joins in its history, each contact once at its first join", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const keys = ["a@example.com", "b@example.com", "c@example.com", "old@example.com", "left@example.com"];
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key, CITY: "Pune" } })).status).toBe(200);
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(segment.status).toBe(201);
    const segmentPath = `/panels/${panel.id}/segments/${segment.body.id}`;
    await eventually(async () => ((await admin("GET", segmentPath)).body.members === 5 ? true : undefined));
    // left joined and has left since: its join is recorded all the same.
    await api("contact", "update", { data: { EMAIL: "left@example.com", CITY: "Goa" } });
    await eventually(async () => ((await admin("GET", segmentPath)).body.members === 4 ? true : undefined));
    const journey = await startJourney(
      panel,
      { trigger: { type: "segment", segment: segment.body.id }, steps: [{ id: "hello", type: "email", subject: "Hi {{EMAIL}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }] },
      null,
    );
    // Joins (days back) in an order other than the contacts' ids; old joined before the simulated days.
    const ids = new Map((await contactsOf(panel.id)).map((c) => [c.key, c.id]));
    const joined: Record<string, number> = { "c@example.com": 5 * DAY, "b@example.com": 4 * DAY, "a@example.com": 3 * DAY, "left@example.com": 2 * DAY, "old@example.com": 10 * DAY };
    for (const [key, ago] of Object.entries(joined)) {
      await panelData.prepare("UPDATE segment_changes SET at = ? WHERE panel_id = ? AND segment_id = ? AND contact_id = ? AND change = 'enter'").bind(Date.now() - ago, panel.id, segment.body.id, ids.get(key)!).run();
    }
    // b left and joined again a day ago: the journey enters it once (its entry key is `segment:<contact>`), at its first join.
    const change = panelData.prepare("INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at) VALUES (?, ?, ?, ?, ?)");
    await panelData.batch([
      change.bind(segment.body.id, panel.id, ids.get("b@example.com")!, "exit", Date.now() - 2 * DAY),
      change.bind(segment.body.id, panel.id, ids.get("b@example.com")!, "enter", Date.now() - DAY),
    ]);

    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 4, completed: 4, active: 0, messages: { email: 4 } } });
    expect(simulated.body.result.steps).toEqual({ hello: { acted: 4, waiting: 0 } });
    // Three samples a step, in join order.
    const samples = simulated.body.result.samples.messages as Array<{ contact_key: string; at: number; content: { subject: string } }>;
    expect(samples.map((m) => m.contact_key)).toEqual(["c@example.com", "b@example.com", "a@example.com"]);
    expect(samples[1]!.content.subject).toBe("Hi b@example.com");
    expect(samples[1]!.at).toBeLessThan(Date.now() - 4 * DAY + HOUR);
    expect(await count("journey_instances", panel)).toBe(0);
    expect(await count("journey_messages", panel)).toBe(0);

  });

  it("simulates a segment filter of the journey's own: the contacts matching it now enter at their last write in the range, those unchanged since before it do not", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const [key, city] of [["a@example.com", "Pune"], ["b@example.com", "Pune"], ["c@example.com", "Goa"], ["old@example.com", "Pune"]]) {
      expect((await api("contact", "add", { data: { EMAIL: key, CITY: city } })).status).toBe(200);
    }
    const journey = await startJourney(
      panel,
      { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: [{ id: "hello", type: "email", subject: "Hi {{EMAIL}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }, { id: "d", type: "delay", for: "2d", after: "hello" }] },
      null,
    );
    // b was written 5 days back, a an hour back: a still waits at the delay. c does not match; old was last written before the range.
    const written: Record<string, number> = { "a@example.com": HOUR, "b@example.com": 5 * DAY, "c@example.com": 3 * DAY, "old@example.com": 10 * DAY };
    for (const [key, ago] of Object.entries(written)) {
      await panelData.prepare("UPDATE contacts SET updated_at = ? WHERE panel_id = ? AND pk_value = ?").bind(Date.now() - ago, panel.id, key).run();
    }

    const simulated = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(simulated.status, JSON.stringify(simulated.body)).toBe(202);
    expect(simulated.body).toMatchObject({ state: "done", result: { entered: 2, completed: 1, active: 1, messages: { email: 2 } } });
    expect(simulated.body.result.steps).toEqual({ hello: { acted: 2, waiting: 0 }, d: { acted: 2, waiting: 1 } });
    const samples = simulated.body.result.samples.messages as Array<{ contact_key: string; at: number }>;
    expect(samples.map((m) => m.contact_key)).toEqual(["b@example.com", "a@example.com"]);
    expect(samples[0]!.at).toBeLessThan(Date.now() - 5 * DAY + HOUR);
    expect(await count("journey_instances", panel)).toBe(0);
  });

  it("reads a contact once a step when its events fall on several pages of it, and simulates it as the events come", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const journey = await startJourney(
      panel,
      {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "w", type: "wait_for_event", events: { activity: "purchase" }, within: "1d" },
          { id: "thanks", type: "email", after: "w", on: "event", subject: "Thanks {{EMAIL}}", html: "<p>Thanks</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        ],
      },
      null,
    );
    // a's cart opens the step's first page of events (5,000) and its purchase is on the second:
    // 5,000 views of x come between them, written straight into the shard.
    await happened(panel, "add_to_cart", "a@example.com", 5 * DAY, { name: "shoes", price: 10 });
    await happened(panel, "purchase", "a@example.com", 5 * DAY - 2 * HOUR, { prid: 1 });
    await happened(panel, "view", "x@example.com", 5 * DAY - HOUR);
    await pipelineSettled(panel.id);
    await panelData
      .prepare(
        `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 5000)
         INSERT INTO events (panel_id, guid, channel, name, contact_id, identity, source, params, occurred_at, received_at, bucket)
         SELECT e.panel_id, 'view-' || i, e.channel, e.name, e.contact_id, e.identity, e.source, e.params, ?2 + i, ?2 + i, e.bucket FROM seq, events e WHERE e.panel_id = ?1 AND e.name = 'view'`,
      )
      .bind(panel.id, Date.now() - 5 * DAY + HOUR)
      .run();
    // The contacts' reads by id, each with the ids it was given.
    const { db: recording, bound } = recordingBinds(panelData, (sql) => sql.startsWith("SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND id IN"));

    const started = await startSimulation(env, recording, (await getPanel(env.DB, panel.id))!, journey.id, { days: 7 }, { operator: null }, Date.now());
    if (!started.ok) throw new Error(JSON.stringify(started.problem));
    const done = await admin("GET", `${journey.path}/simulations/${started.value.simulation.id}`);
    // One step read all 5,003 events; a bought within its day: thanked.
    expect(done.body).toMatchObject({ state: "done", events_read: 5003, result: { entered: 1, completed: 1, active: 0, messages: { email: 1 } } });
    expect(done.body.result.steps).toEqual({ w: { acted: 1, waiting: 0 }, thanks: { acted: 1, waiting: 0 } });
    // a read once for the step (not once per page it is on) and once for its sample; x, never entered, not at all.
    const a = (await contactsOf(panel.id)).find((c) => c.key === "a@example.com")!.id;
    expect(bound.map((values) => JSON.parse(values[1] as string))).toEqual([[a], [a]]);
  });

  it("enters a list's members between events over several steps, each step keeping only the entries not yet taken", async () => {
    const panel = await createPanel();
    const list = (await apiFor(panel)("lists", "add", { listname: "Readers" })).body.listid as number;
    const journey = await startJourney(
      panel,
      { trigger: { type: "list", listid: list }, steps: [{ id: "hello", type: "email", subject: "Hi {{EMAIL}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }] },
      null,
    );
    const joined = { "a@example.com": 5 * DAY, "b@example.com": 3 * DAY, "c@example.com": DAY };
    await addMembersQuietly(panel, list, Object.keys(joined));
    for (const [key, ago] of Object.entries(joined)) {
      await panelData.prepare("UPDATE list_members SET added_at = ? WHERE panel_id = ? AND contact_id = (SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?)").bind(Date.now() - ago, panel.id, panel.id, key).run();
    }
    // Events between the joins make the steps: one event a step.
    await happened(panel, "view", "x@example.com", 4 * DAY);
    await happened(panel, "view", "x@example.com", 2 * DAY);
    await pipelineSettled(panel.id);

    const imports = collectingQueue();
    const stepEnv = withBindings(env, { IMPORTS: imports, SIMULATION_STEP_EVENTS: "1" } as Partial<Env>);
    const started = await startSimulation(stepEnv, panelData, (await getPanel(env.DB, panel.id))!, journey.id, { days: 7 }, { operator: null }, Date.now());
    if (!started.ok) throw new Error(JSON.stringify(started.problem));
    // The first step took a (joined before the first event): the state it keeps holds b and c only.
    const kept = await env.FILES.list({ prefix: `simulations/${panel.id}/${started.value.simulation.id}/` });
    expect(kept.objects).toHaveLength(1);
    const state = await (await env.FILES.get(kept.objects[0]!.key))!.json<{ entries: Array<[number, number]>; entriesTaken: number; entered: number }>();
    expect({ entries: state.entries.length, taken: state.entriesTaken, entered: state.entered }).toEqual({ entries: 2, taken: 0, entered: 1 });

    await drainImports(stepEnv, imports);
    const done = await admin("GET", `${journey.path}/simulations/${started.value.simulation.id}`);
    expect(done.body).toMatchObject({ state: "done", events_read: 2, result: { entered: 3, completed: 3, messages: { email: 3 } } });
    expect(done.body.result.samples.messages.map((m: { contact_key: string }) => m.contact_key)).toEqual(Object.keys(joined));
  });
});
