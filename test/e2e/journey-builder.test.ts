// The journey canvas in Chromium, against the service as `npm start` starts it: each of the four
// webhook conditions of spec 6.3 is built by hand (steps dragged from the palette, linked by
// dragging from handle to handle, settings filled in the side panel), saved, started, and fed
// activities through the public API; a loopback receiver, one path per journey, must get exactly
// the events the condition promises with the chosen attributes and parameters. A journey with a
// problem shows the server's message on its node and cannot be started.
// Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, OUTPUT_DIR, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.ts";

/** The journeys' webhooks post to it, one path per journey. */
let receiver: WebhookReceiver;
let panelId: string;
let clientId: string;
const hooks = new Map<string, string>();
const activityIds = new Map<string, string>();

/** The receiver of the journeys' webhooks, and the demo panel's activities and webhooks. */
async function setUpPanel(): Promise<void> {
  receiver = await startWebhookReceiver();
  panelId = service.printed["demo panel"]!;
  const panel = await adminCall("PATCH", `/panels/${panelId}`, { api_mode: true });
  clientId = panel.client_id;
  await adminCall("PUT", `/panels/${panelId}/attributes/CITY`, { type: "string" });
  for (const name of ["signup", "cart", "checkout", "trial", "upgrade", "visit"]) {
    activityIds.set(name, (await adminCall("POST", `/panels/${panelId}/activities`, { name, params: {} })).activityid);
  }
  for (const path of ["/one", "/several", "/not-followed", "/filtered"]) hooks.set(path, await receiver.addWebhook(panelId, `Hook ${path}`, path));
}

serviceForThisFile({ setUp: setUpPanel });
after(async () => {
  await receiver?.close();
});

async function ownerPage(): Promise<Page> {
  return keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } })).page;
}

const node = (page: Page, id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);
const side = (page: Page, id: string) => page.getByRole("complementary", { name: id === "@trigger" ? "Settings of the trigger" : `Settings of ${id}` });

/** A blank canvas named `name`, started by the activity `activity`. */
async function blankJourney(page: Page, name: string, activity: string): Promise<void> {
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/new`);
  await page.getByRole("button", { name: /Blank canvas/ }).click();
  await node(page, "@trigger").waitFor();
  await page.getByLabel("Journey name").fill(name);
  await node(page, "@trigger").click();
  await side(page, "@trigger").getByLabel("Activity", { exact: true }).selectOption(activity);
}

/**
 * Drags a step from the palette onto the canvas, `dx` right of the trigger's left edge and `dy`
 * below its bottom; the step is selected and named `<type>_<n>`.
 */
async function dragStep(page: Page, label: string, dx: number, dy: number): Promise<void> {
  const before = await page.locator(".react-flow__node").count();
  const canvas = (await page.locator(".journey-canvas").boundingBox())!;
  const trigger = (await node(page, "@trigger").boundingBox())!;
  const targetPosition = { x: trigger.x - canvas.x + dx, y: trigger.y + trigger.height - canvas.y + dy };
  await page.getByRole("navigation", { name: "Steps to add" }).getByRole("button", { name: label, exact: true }).dragTo(page.locator(".journey-canvas"), { targetPosition });
  await page.locator(".react-flow__node").nth(before).waitFor();
}

/** Drags from a node's outgoing handle to another node's incoming handle. */
async function connect(page: Page, from: string, handle: string, to: string): Promise<void> {
  await node(page, from).locator(`.react-flow__handle.source[data-handleid="${handle}"]`).dragTo(node(page, to).locator(".react-flow__handle.target"));
  await page
    .locator(`[data-testid="rf__edge-${from}:${handle}->${to}"]`)
    .waitFor({ timeout: 10_000 })
    .catch(async (failure: unknown) => {
      await screenshot(page, "journey-builder-failed-connect");
      throw failure;
    });
}

async function fillWebhook(page: Page, id: string, path: string, param: string): Promise<void> {
  await node(page, id).click();
  const form = side(page, id);
  await form.getByLabel("Webhook", { exact: true }).selectOption(hooks.get(path)!);
  await form.getByLabel("EMAIL", { exact: true }).check();
  await form.getByLabel("CITY", { exact: true }).check();
  await form.getByRole("button", { name: "Add parameter" }).click();
  await form.getByRole("group", { name: "Parameter 1" }).getByLabel("Name").fill("source");
  await form.getByRole("group", { name: "Parameter 1" }).getByLabel("Value").fill(param);
}

/** Saves the draft (the page moves to the journey) and starts it; answers the journey's id. */
async function saveAndStart(page: Page, name: string): Promise<string> {
  await page.getByRole("button", { name: "Save draft" }).click();
  await page.getByRole("heading", { level: 1, name }).waitFor();
  const id = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1)!);
  await page.getByRole("button", { name: "Start journey" }).click();
  await page.locator(".badge.status-running").waitFor();
  assert.equal((await adminCall("GET", `/panels/${panelId}/journeys/${id}`)).status, "running");
  return id;
}

async function contact(email: string, city: string): Promise<void> {
  const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email, CITY: city }) });
  assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
}

async function perform(activity: string, email: string): Promise<void> {
  const posted = await fetch(`${service.origin}/v1/activity/singleactivity/${clientId}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ activityid: activityIds.get(activity), identity: email }),
  });
  assert.equal(((await posted.json()) as { result: string }).result, "Success", `${activity} by ${email}`);
}

const summary = (events: any[]) =>
  events.map((e) => ({ activity: e.event_params.activity_name, email: e.att_params.EMAIL, city: e.att_params.CITY, source: e.custom_params.source })).sort((a, b) => a.email.localeCompare(b.email));

describe("journey builder in Chromium", () => {
  test("the four conditions of spec 6.3, built by hand, send exactly the webhooks they promise", async () => {
    const page = await ownerPage();
    for (const [email, city] of [
      ["ann@example.com", "Pune"],
      ["ben@example.com", "Delhi"],
    ]) {
      await contact(email!, city!);
    }

    // 1. One action: every signup, straight to the webhook.
    await blankJourney(page, "Signups", "signup");
    await dragStep(page, "Webhook", 0, 60);
    await connect(page, "@trigger", "next", "webhook_1");
    await fillWebhook(page, "webhook_1", "/one", "signup-journey");
    await checkAccessibility(page, "journey-builder");
    await screenshot(page, "journey-builder-one-action");
    await saveAndStart(page, "Signups");

    // 2. Several actions: a cart, then a checkout within the hour.
    await blankJourney(page, "Cart then checkout", "cart");
    await dragStep(page, "Wait for event", 0, 60);
    await connect(page, "@trigger", "next", "wait_for_event_1");
    await side(page, "wait_for_event_1").getByLabel("Wait for", { exact: true }).selectOption("activity");
    await side(page, "wait_for_event_1").getByLabel("Activity to wait for").selectOption("checkout");
    await side(page, "wait_for_event_1").getByLabel("Within").fill("1h");
    await dragStep(page, "Webhook", -160, 230);
    await connect(page, "wait_for_event_1", "event", "webhook_1");
    await fillWebhook(page, "webhook_1", "/several", "checkout-journey");
    await screenshot(page, "journey-builder-several-actions");
    await saveAndStart(page, "Cart then checkout");

    // 3. An action not followed by a second: a trial without an upgrade within a minute.
    await blankJourney(page, "Trial without upgrade", "trial");
    await dragStep(page, "Wait for event", 0, 60);
    await connect(page, "@trigger", "next", "wait_for_event_1");
    await side(page, "wait_for_event_1").getByLabel("Wait for", { exact: true }).selectOption("activity");
    await side(page, "wait_for_event_1").getByLabel("Activity to wait for").selectOption("upgrade");
    await side(page, "wait_for_event_1").getByLabel("Within").fill("1m");
    await dragStep(page, "Webhook", 160, 230);
    await connect(page, "wait_for_event_1", "timeout", "webhook_1");
    await fillWebhook(page, "webhook_1", "/not-followed", "trial-journey");
    await saveAndStart(page, "Trial without upgrade");

    // 4. An action by certain contacts: visits by people in Pune.
    await blankJourney(page, "Visits from Pune", "visit");
    await dragStep(page, "Condition", 0, 60);
    await connect(page, "@trigger", "next", "condition_1");
    const clause = side(page, "condition_1").getByRole("group", { name: "Attributes that must hold, clause 1" });
    await clause.getByLabel("Attribute").selectOption("CITY");
    await clause.getByLabel("Value").fill("Pune");
    await dragStep(page, "Webhook", -160, 230);
    await connect(page, "condition_1", "then", "webhook_1");
    await fillWebhook(page, "webhook_1", "/filtered", "visit-journey");
    await screenshot(page, "journey-builder-filtered-action");
    await saveAndStart(page, "Visits from Pune");

    // The activities, through the public API.
    await perform("signup", "ann@example.com");
    await perform("signup", "ben@example.com");
    await perform("cart", "ann@example.com");
    await perform("cart", "ben@example.com");
    await perform("checkout", "ann@example.com");
    await perform("trial", "ann@example.com");
    await perform("trial", "ben@example.com");
    await perform("upgrade", "ann@example.com");
    await perform("visit", "ann@example.com");
    await perform("visit", "ben@example.com");

    // The wait of the third journey ends at the first cron tick after its minute, which start.ts
    // fires once a minute: up to a minute more. The test fires the tick every few seconds instead;
    // a tick fires only the waits that are due.
    const ticks = setInterval(() => void fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(() => undefined), 5_000);
    try {
      assert.deepEqual(summary(await receiver.eventsAt("/one", 2)), [
        { activity: "signup", email: "ann@example.com", city: "Pune", source: "signup-journey" },
        { activity: "signup", email: "ben@example.com", city: "Delhi", source: "signup-journey" },
      ]);
      // The event the wait was for: ann's checkout; ben never checked out.
      assert.deepEqual(summary(await receiver.eventsAt("/several", 1)), [{ activity: "checkout", email: "ann@example.com", city: "Pune", source: "checkout-journey" }]);
      assert.deepEqual(summary(await receiver.eventsAt("/filtered", 1)), [{ activity: "visit", email: "ann@example.com", city: "Pune", source: "visit-journey" }]);
      // The timeout reports the action that was not followed: ben's trial, once the minute is over.
      assert.deepEqual(summary(await receiver.eventsAt("/not-followed", 1)), [{ activity: "trial", email: "ben@example.com", city: "Delhi", source: "trial-journey" }]);
    } finally {
      clearInterval(ticks);
    }
    for (const event of receiver.at("/one")) assert.equal(event.channel, "custom_activity");

    // The canvas counts what went through each node.
    const started = (await adminCall("GET", `/panels/${panelId}/journeys`)).journeys.find((j: { name: string }) => j.name === "Visits from Pune");
    await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/${started.id}`);
    await page.getByLabel("Counters of @trigger").getByText("entered 2").waitFor();
    await page.getByLabel("Counters of webhook_1").getByText("passed 1").waitFor();
    await screenshot(page, "journey-builder-counters");
    // The journey report: both visitors went through the condition, one on to the webhook, whose event was delivered.
    const funnel = page.getByRole("table", { name: "Funnel per step" });
    assert.deepEqual((await funnel.getByRole("row", { name: /^condition_1/ }).getByRole("cell").allTextContents()).slice(0, 2), ["condition", "2"]);
    assert.deepEqual((await funnel.getByRole("row", { name: /^webhook_1/ }).getByRole("cell").allTextContents()).slice(0, 2), ["webhook", "1"]);
    const deliveries = page.getByRole("table", { name: "Webhook event deliveries per hour (events)" });
    assert.deepEqual((await deliveries.getByRole("row").nth(1).getByRole("cell").allTextContents()).slice(0, 3), ["1", "0", "0"]);
    await page.getByRole("region", { name: "Report" }).screenshot({ path: `${OUTPUT_DIR}/journey-report.png` });
  });

  test("a journey with a problem shows the server's message on its node and cannot be started", async () => {
    const page = await ownerPage();
    await blankJourney(page, "Unfinished", "signup");
    await dragStep(page, "Email", 0, 60);
    await connect(page, "@trigger", "next", "email_1");
    const email = node(page, "email_1");
    // The canvas checks with the API's own schema as it is edited.
    await email.getByText("subject: must not be empty").waitFor();
    assert.equal(await page.getByRole("button", { name: "Save draft" }).isEnabled(), true);
    await side(page, "email_1").getByLabel("Subject").fill("Welcome");
    await side(page, "email_1").getByLabel("Sender name").fill("Shop");
    await side(page, "email_1").getByLabel("Sender email").fill("not an address");
    await side(page, "email_1").getByLabel("HTML").fill("<p>Hi</p>");
    // Saving sends it anyway: the server refuses it and its message lands on the node.
    await page.getByRole("button", { name: "Save draft" }).click();
    await page.getByRole("alert").waitFor();
    const problems = (await email.getByRole("list", { name: "Problems of email_1" }).textContent()) ?? "";
    assert.match(problems, /sender_email: /);
    assert.equal((await adminCall("GET", `/panels/${panelId}/journeys`)).journeys.filter((j: { name: string }) => j.name === "Unfinished").length, 0);
    await screenshot(page, "journey-builder-problem");

    // Saved as a draft once fixed; a step linked to nothing then keeps it from being saved or started.
    await side(page, "email_1").getByLabel("Sender email").fill("shop@example.com");
    await page.getByRole("button", { name: "Save draft" }).click();
    await page.getByRole("heading", { level: 1, name: "Unfinished" }).waitFor();
    await dragStep(page, "SMS", 240, 60);
    await node(page, "sms_1").getByText("is not linked: connect it from the trigger or a step").waitFor();
    assert.equal(await page.getByRole("button", { name: "Start journey" }).isDisabled(), true);
    assert.equal(await page.getByRole("button", { name: "Save draft" }).isDisabled(), true);
    const saved = (await adminCall("GET", `/panels/${panelId}/journeys`)).journeys.find((j: { name: string }) => j.name === "Unfinished");
    assert.equal(saved.status, "draft");
  });

  test("the keyboard builds the same graph: palette buttons add and link steps, the side panel links and sets them", async () => {
    const page = await ownerPage();
    await blankJourney(page, "Keyboard built", "signup");
    // The trigger is selected; Enter on a palette button adds the step after it, linked.
    await page.getByRole("navigation", { name: "Steps to add" }).getByRole("button", { name: "Wait for event", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.locator('[data-testid="rf__edge-@trigger:next->wait_for_event_1"]').waitFor({ state: "attached" });
    await screenshot(page, "journey-builder-keyboard");
    const wait = side(page, "wait_for_event_1");
    await wait.getByLabel("Wait for", { exact: true }).selectOption("activity");
    await wait.getByLabel("Activity to wait for").selectOption("upgrade");
    // The new step is selected in turn, so the next one hangs under it, from its first handle.
    await page.getByRole("navigation", { name: "Steps to add" }).getByRole("button", { name: "Webhook", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.locator('[data-testid="rf__edge-wait_for_event_1:event->webhook_1"]').waitFor();
    // Which step it follows, and on which outcome, is a choice in the side panel.
    const hook = side(page, "webhook_1");
    await hook.getByLabel("Follows").selectOption("wait_for_event_1|timeout");
    await page.locator('[data-testid="rf__edge-wait_for_event_1:timeout->webhook_1"]').waitFor();
    await hook.getByLabel("Follows").selectOption("");
    await node(page, "webhook_1").getByText("is not linked: connect it from the trigger or a step").waitFor();
    await hook.getByLabel("Follows").selectOption("wait_for_event_1|timeout");
    await hook.getByLabel("Webhook", { exact: true }).selectOption(hooks.get("/not-followed")!);
    await page.getByRole("button", { name: "Save draft" }).click();
    await page.getByRole("heading", { level: 1, name: "Keyboard built" }).waitFor();
    const saved = (await adminCall("GET", `/panels/${panelId}/journeys`)).journeys.find((j: { name: string }) => j.name === "Keyboard built");
    assert.deepEqual(
      saved.steps.map((s: { id: string; type: string; after?: string; on?: string }) => [s.id, s.type, s.after ?? null, s.on ?? null]),
      [
        ["wait_for_event_1", "wait_for_event", null, null],
        ["webhook_1", "webhook", "wait_for_event_1", "timeout"],
      ],
    );
  });
});
