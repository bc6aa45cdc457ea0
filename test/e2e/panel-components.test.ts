// The panel's shared table and confirmation dialog in Chromium (web/src/components/): a list
// screen's table sorts by a header, pages past its page size and shows the screen's empty state;
// the dialog cancelled by Escape leaves the data as it was, and confirmed performs the action.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

const nav = (page: Page, screen: string) => page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: screen, exact: true });

/** The e-mail addresses in the users table's rows, top to bottom. */
async function emails(page: Page): Promise<string[]> {
  const rows = page.getByRole("table", { name: "Users of the panel" }).getByRole("row");
  const cells = await rows.evaluateAll((trs) => trs.slice(1).map((tr) => (tr as { cells: { textContent: string | null }[] }).cells[0]!.textContent ?? ""));
  return cells;
}

describe("the panel's table and confirmation dialog in Chromium", () => {
  test("a list screen's table sorts by a header button, pages 50 rows at a time, and shows the empty state without a table", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = keep(await signInAsOwner(service)).page;

    // Empty state: the demo panel has no webhook yet, so the screen says so instead of an empty table.
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/webhooks`)).webhooks, []);
    await nav(page, "Webhooks").click();
    await page.getByRole("heading", { level: 2, name: "No webhooks yet" }).waitFor();
    assert.equal(await page.getByRole("table").count(), 0);

    // 55 users beside the demo's one: 56 rows, two pages.
    for (let i = 0; i < 55; i++) await adminCall("POST", `/panels/${panelId}/users`, { email: `table${String(i).padStart(2, "0")}@example.com` });
    await nav(page, "Users and API keys").click();
    const table = page.getByRole("table", { name: "Users of the panel" });
    await table.waitFor();
    const email = table.getByRole("columnheader", { name: "Email" });
    assert.equal(await email.getAttribute("aria-sort"), "none");
    assert.equal(await table.getByRole("columnheader", { name: "Actions" }).getByRole("button").count(), 0, "a column without a sort value has no sort button");

    await email.getByRole("button", { name: "Email" }).click();
    assert.equal(await email.getAttribute("aria-sort"), "ascending");
    let shown = await emails(page);
    assert.equal(shown.length, 50);
    assert.deepEqual(shown.slice(0, 3), ["demo@example.com", "table00@example.com", "table01@example.com"]);
    await checkAccessibility(page, "users-table-sorted");
    await screenshot(page, "users-table-sorted");

    const pages = page.getByRole("navigation", { name: "Users of the panel pages" });
    assert.equal(await pages.getByRole("button", { name: "Previous" }).isDisabled(), true);
    await pages.getByRole("button", { name: "Next" }).click();
    shown = await emails(page);
    assert.deepEqual(shown, ["table49@example.com", "table50@example.com", "table51@example.com", "table52@example.com", "table53@example.com", "table54@example.com"]);
    assert.equal(await pages.getByRole("button", { name: "Next" }).isDisabled(), true);

    // Sorting again turns the order round and goes back to the first page.
    await email.getByRole("button", { name: "Email" }).click();
    assert.equal(await email.getAttribute("aria-sort"), "descending");
    shown = await emails(page);
    assert.equal(shown.length, 50);
    assert.deepEqual(shown.slice(0, 2), ["table54@example.com", "table53@example.com"]);
    await pages.getByRole("button", { name: "Previous" }).waitFor();
    assert.equal(await pages.getByRole("button", { name: "Previous" }).isDisabled(), true);
  });

  test("deleting a list asks first: Escape cancels and keeps the list, focus back on the button; confirming deletes it", async () => {
    const panelId = service.printed["demo panel"]!;
    const doomed = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Doomed" });
    const page = keep(await signInAsOwner(service)).page;
    await nav(page, "Lists").click();
    const card = page.getByRole("listitem", { name: "List Doomed" });
    const remove = card.getByRole("button", { name: "Delete Doomed" });

    await remove.click();
    const dialog = page.getByRole("alertdialog", { name: "Delete this list?" });
    await dialog.waitFor();
    await dialog.getByText('The list "Doomed" and its 0 memberships will be deleted; this cannot be undone. Its contacts stay.').waitFor();
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent), "Cancel", "focus moves into the dialog, on the safe choice");
    await checkAccessibility(page, "confirm-dialog");
    await screenshot(page, "confirm-dialog");

    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute("aria-label")), "Delete Doomed", "focus goes back to the button that asked");
    const lists = (await adminCall("GET", `/panels/${panelId}/lists`)).lists as { id: number }[];
    assert.ok(lists.some((list) => list.id === doomed.id), "Escape deleted nothing");
    await card.waitFor();

    await remove.click();
    await dialog.getByRole("button", { name: "Delete list" }).click();
    await card.waitFor({ state: "detached" });
    const after = (await adminCall("GET", `/panels/${panelId}/lists`)).lists as { id: number }[];
    assert.ok(!after.some((list) => list.id === doomed.id), "confirming deleted the list");
  });
});
