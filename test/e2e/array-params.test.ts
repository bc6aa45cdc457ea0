// Array activity parameters in the panel (issue 40, CONTRACT 10), in Chromium against the service
// as `npm start` starts it: an operator declares an activity whose parameter `items` is an array
// of objects with a typed member `prid`; the journey builder's parameter clause then offers
// `items.prid` (not the bare `items`); the journey, started, sends its webhook for the event one
// of whose items has prid 12 and not for the other. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.ts";

let receiver: WebhookReceiver;
let panelId: string;
let hookId: string;

async function setUp(): Promise<void> {
  receiver = await startWebhookReceiver();
  panelId = service.printed["demo panel"]!;
  await adminCall("PATCH", `/panels/${panelId}`, { api_mode: true });
  hookId = await receiver.addWebhook(panelId, "Orders", "/orders");
}

serviceForThisFile({ setUp });
after(async () => {
  await receiver?.close();
});

const side = (page: Page, id: string) => page.getByRole("complementary", { name: id === "@trigger" ? "Settings of the trigger" : `Settings of ${id}` });

async function order(identity: string, items: unknown[]): Promise<void> {
  const posted = await fetch(`${service.origin}/v1/activity/upload`, {
    method: "POST",
    headers: { "api-key": service.printed["API key"]!, "content-type": "application/json" },
    body: JSON.stringify([{ activity_name: "order", identity, activity_params: { total: 41.5, items } }]),
  });
  assert.equal(((await posted.json()) as { recorded: number }).recorded, 1, identity);
}

test("an operator declares an array parameter with typed members; the journey builder filters on items.prid", async () => {
  const page = keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } })).page;

  // Declare `order`: total (float) and items, an array of {prid: integer, name: string}.
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/data`);
  const form = page.getByRole("form", { name: "New activity" });
  await form.getByLabel("Activity name").fill("order");
  await form.getByLabel("Parameter 1 name").fill("total");
  await form.getByLabel("Parameter 1 type").selectOption("float");
  await form.getByRole("button", { name: "Add a parameter" }).click();
  await form.getByLabel("Parameter 2 name").fill("items");
  await form.getByLabel("Parameter 2 type").selectOption("array");
  await form.getByLabel("Parameter 2 member 1 name").fill("prid");
  await form.getByLabel("Parameter 2 member 1 type").selectOption("integer");
  await form.getByRole("button", { name: "Add a member to parameter 2" }).click();
  await form.getByLabel("Parameter 2 member 2 name").fill("name");
  await checkAccessibility(page, "activity-array-parameter");
  await screenshot(page, "activity-array-parameter");
  await form.getByRole("button", { name: "Define activity" }).click();
  await page.getByRole("cell", { name: "total (float), items (array of {prid: integer, name: string})" }).waitFor();
  const defined = (await adminCall("GET", `/panels/${panelId}/activities`)).activities.find((a: { name: string }) => a.name === "order");
  assert.deepEqual(defined.params, { total: "float", items: { type: "array", of: { prid: "integer", name: "string" } } });

  // A journey on it: the trigger's parameter clause names the array's members, not the array.
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/new`);
  await page.getByRole("button", { name: /Blank canvas/ }).click();
  await page.locator('.react-flow__node[data-id="@trigger"]').waitFor();
  await page.getByLabel("Journey name").fill("Kettle buyers");
  await page.locator('.react-flow__node[data-id="@trigger"]').click();
  const trigger = side(page, "@trigger");
  await trigger.getByLabel("Activity", { exact: true }).selectOption("order");
  await trigger.getByRole("group", { name: "Parameters that must hold" }).getByRole("button", { name: "Add clause" }).click();
  const clause = trigger.getByRole("group", { name: "Parameters that must hold, clause 1" });
  const offered = await clause.getByLabel("Attribute").locator("option").allTextContents();
  assert.deepEqual(offered, ["(choose)", "total", "items.prid", "items.name"]);
  await clause.getByLabel("Attribute").selectOption("items.prid");
  await clause.getByLabel("Value").fill("12");
  await page.getByRole("navigation", { name: "Steps to add" }).getByRole("button", { name: "Webhook", exact: true }).focus();
  await page.keyboard.press("Enter");
  await page.locator('[data-testid="rf__edge-@trigger:next->webhook_1"]').waitFor({ state: "attached" });
  await side(page, "webhook_1").getByLabel("Webhook", { exact: true }).selectOption(hookId);
  await screenshot(page, "journey-builder-array-member-clause");
  await page.getByRole("button", { name: "Save draft" }).click();
  await page.getByRole("heading", { level: 1, name: "Kettle buyers" }).waitFor();
  const id = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1)!);
  assert.deepEqual((await adminCall("GET", `/panels/${panelId}/journeys/${id}`)).trigger, {
    type: "activity",
    activity: "order",
    // Typed as the member is (integer) when saved.
    params: [{ attribute: "items.prid", op: "eq", value: 12 }],
  });
  await page.getByRole("button", { name: "Start journey" }).click();
  await page.locator(".badge.status-running").waitFor();

  // Any item whose prid is 12: the first order passes, the second does not.
  const kettle = [
    { prid: 3, name: "Mug" },
    { prid: 12, name: "Kettle" },
  ];
  await order("kettle@example.com", kettle);
  await order("mugs@example.com", [{ prid: 3, name: "Mug" }]);
  const events = await receiver.eventsAt("/orders", 1);
  assert.equal(events.length, 1, JSON.stringify(events));
  assert.equal(events[0].event_params.identity, "kettle@example.com");
  assert.deepEqual(events[0].payload_params, { items: [{ total: 41.5, items: kettle }] });
});
