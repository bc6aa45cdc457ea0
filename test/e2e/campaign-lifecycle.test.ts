// A campaign's lifecycle in Chromium, against the service as `npm start` starts it: a draft saved
// from the admin API is scheduled from its screen, cancelled and deleted behind a confirmation;
// with the panel's lead time set to 0 in Settings, a draft shows "Send now" and goes out at the
// next cron tick. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, confirmInDialog, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

async function draftTo(panelId: string, listId: number, name: string): Promise<string> {
  const created = await adminCall("POST", `/panels/${panelId}/campaigns`, {
    name,
    subject: "Spring news",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    html: "<p>Hello {{NAME|there}}</p>",
    audience: { lists: [listId] },
    draft: true,
  });
  assert.equal(created.status, "draft");
  return created.id as string;
}

const status = (page: Page) => page.locator('dl[aria-label="Campaign"] .badge');

/** Waits until the campaign's status badge reads `text`. */
async function statusIs(page: Page, text: string): Promise<void> {
  await page.locator('dl[aria-label="Campaign"] .badge', { hasText: new RegExp(`^${text}$`) }).waitFor();
}

describe("campaign lifecycle in Chromium", () => {
  test("a draft is scheduled, cancelled and deleted from its screen; at lead time 0 it is sent now", async () => {
    const panelId = service.printed["demo panel"]!;
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Lifecycle readers" });
    for (const email of ["ann@example.com", "ben@example.com"]) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email }), listid: String(list.id) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    const first = await draftTo(panelId, list.id, "Lifecycle one");
    const page = keep(await signInAsOwner(service)).page;
    await page.goto(`${service.origin}/panels/${panelId}/campaigns/${first}`);
    await page.getByRole("heading", { level: 1, name: "Lifecycle one" }).waitFor();
    await statusIs(page, "draft");
    const actions = page.getByRole("region", { name: "Campaign actions" });
    assert.deepEqual(await actions.getByRole("button").allTextContents(), ["Schedule", "Clone", "Delete"]);
    await checkAccessibility(page, "campaign-draft");
    await screenshot(page, "campaign-draft");

    // Scheduled a month ahead, in the panel's zone; then cancelled, behind a confirmation.
    const month = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 16);
    await actions.getByLabel("Schedule for").fill(month);
    await actions.getByRole("button", { name: "Schedule", exact: true }).click();
    await statusIs(page, "scheduled");
    assert.deepEqual(await actions.getByRole("button").allTextContents(), ["Reschedule", "Back to draft", "Cancel campaign", "Clone"]);
    await actions.getByRole("button", { name: "Cancel campaign" }).click();
    await confirmInDialog(page, "Cancel campaign");
    await statusIs(page, "cancelled");
    assert.deepEqual(await actions.getByRole("button").allTextContents(), ["Clone", "Delete"]);
    await actions.getByRole("button", { name: "Delete" }).click();
    await confirmInDialog(page, "Delete");
    await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
    const gone = await fetch(`${service.origin}/admin/v1/panels/${panelId}/campaigns/${first}`, { headers: { authorization: `Bearer ${service.adminToken}` } });
    assert.equal(gone.status, 404);

    // The owner sets the lead time to 0: a draft then offers Send now, and goes out at the next tick.
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Settings", exact: true }).click();
    const settings = page.getByRole("form", { name: "Campaign settings" });
    await settings.getByLabel("Lead time, in minutes").fill("0");
    await settings.getByRole("button", { name: "Save campaign settings" }).click();
    await page.getByRole("status").filter({ hasText: "Campaign settings saved." }).waitFor();
    const second = await draftTo(panelId, list.id, "Lifecycle two");
    await page.goto(`${service.origin}/panels/${panelId}/campaigns/${second}`);
    await statusIs(page, "draft");
    await actions.getByRole("button", { name: "Send now" }).click();
    await statusIs(page, "scheduled");
    await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
    for (const deadline = Date.now() + 90_000; (await adminCall("GET", `/panels/${panelId}/campaigns/${second}`)).status !== "sent"; await new Promise((r) => setTimeout(r, 500))) {
      if (Date.now() > deadline) throw new Error("the campaign was not sent");
    }
    await page.reload();
    await statusIs(page, "sent");
    assert.deepEqual(await actions.getByRole("button").allTextContents(), ["Clone", "Delete"]);
    await actions.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("alertdialog").getByText("It reached its recipients, so it is archived").waitFor();
    await confirmInDialog(page, "Archive");
    await statusIs(page, "archived");
    await checkAccessibility(page, "campaign-archived");
    await screenshot(page, "campaign-archived");
    assert.equal(await status(page).count(), 1);
  });
});
