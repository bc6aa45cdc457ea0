// The Topics screen in Chromium (issue 45, item 4), against the service started as `npm start`
// starts it: an owner adds a topic (a taken name refused under the field), renames and
// describes it, and deletes it after the confirmation dialog; a viewer reads the list with no
// write offered. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Locator } from "playwright-core";
import { checkAccessibility, confirmInDialog, screenshot, signInAs, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let panelId = "";

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "viewer@example.com", role: "viewer", password: "viewer passphrase" });
  },
});

/** The refusal shown under a form field, which the field names as its description. */
async function errorOf(field: Locator): Promise<string> {
  await field.and(field.page().locator("[aria-invalid=true]")).waitFor();
  const ids = ((await field.getAttribute("aria-describedby")) ?? "").split(" ").filter((id) => id.endsWith("-error"));
  assert.equal(ids.length, 1, "the field is described by its error");
  return (await field.page().locator(`[id="${ids[0]}"]`).textContent()) ?? "";
}

const topics = async () => (await adminCall("GET", `/panels/${panelId}/topics`)).topics as Array<{ id: string; name: string; description: string }>;

describe("the Topics screen in Chromium", () => {
  test("an owner adds, renames, describes and deletes a topic; a taken name is refused under its field", async () => {
    const { page } = keep(await signInAsOwner(service));
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Topics", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Topics" }).waitFor();
    await page.getByText("No topics yet").waitFor();
    await checkAccessibility(page, "topics-empty");

    const form = page.getByRole("form", { name: "New topic" });
    await form.getByLabel("Topic name").fill("Product news");
    await form.getByLabel("Description (optional)").fill("New features, once a month");
    await form.getByRole("button", { name: "Add topic" }).click();
    const row = page.getByRole("row", { name: "Topic Product news" });
    await row.waitFor();
    assert.equal(await row.getByRole("rowheader").textContent(), "Product news");
    assert.equal(await row.getByRole("cell").first().textContent(), "New features, once a month");

    await form.getByLabel("Topic name").fill("PRODUCT NEWS");
    await form.getByRole("button", { name: "Add topic" }).click();
    assert.equal(await errorOf(form.getByLabel("Topic name")), 'the panel already has a topic named "PRODUCT NEWS"');
    assert.equal((await topics()).length, 1);
    await checkAccessibility(page, "topics-refused");
    await screenshot(page, "topics");

    await row.getByRole("button", { name: "Edit Product news", exact: true }).click();
    const edit = page.getByRole("form", { name: "Edit Product news" });
    await edit.getByLabel("Topic name").fill("Releases");
    await edit.getByLabel("Description (optional)").fill("What shipped");
    await edit.getByRole("button", { name: "Save topic" }).click();
    await page.getByRole("row", { name: "Topic Releases" }).waitFor();
    assert.deepEqual((await topics()).map((t) => [t.name, t.description]), [["Releases", "What shipped"]]);

    await page.getByRole("button", { name: "Delete Releases", exact: true }).click();
    await confirmInDialog(page, "Delete topic");
    await page.getByText("No topics yet").waitFor();
    assert.deepEqual(await topics(), []);
  });

  test("a viewer reads the topics with no write offered", async () => {
    await adminCall("POST", `/panels/${panelId}/topics`, { name: "Events" });
    const { page } = keep(await signInAs(service, "viewer@example.com", "viewer passphrase"));
    await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/topics`);
    await page.getByRole("heading", { level: 1, name: "Topics" }).waitFor();
    await page.getByRole("row", { name: "Topic Events" }).waitFor();
    await page.getByText("Adding, renaming and deleting topics needs the marketer role; you are a viewer in this panel.").waitFor();
    assert.equal(await page.getByRole("form", { name: "New topic" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: "Delete Events", exact: true }).count(), 0);
    await checkAccessibility(page, "topics-viewer");
  });
});
