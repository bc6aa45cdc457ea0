// A campaign's A/B test in Chromium, against the service as `npm start` starts it: two variants
// set on a draft from its screen, read back by the admin API, and the report's variants side by
// side (before sending: nothing sent yet, the winner still to come); variant B previewed as a
// contact and sent as a test copy. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

describe("campaign A/B test in Chromium", () => {
  test("variants of the subject and body are set on a draft, and the report shows them side by side", async () => {
    const panelId = service.printed["demo panel"]!;
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "A/B readers" });
    const created = await adminCall("POST", `/panels/${panelId}/campaigns`, {
      name: "Spring A/B",
      subject: "Spring news",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hello {{NAME|there}}</p>",
      audience: { lists: [list.id] },
      draft: true,
    });
    const page = keep(await signInAsOwner(service)).page;
    await page.goto(`${service.origin}/panels/${panelId}/campaigns/${created.id}`);
    await page.getByRole("heading", { level: 1, name: "Spring A/B" }).waitFor();

    await page.getByText("A/B test", { exact: true }).click();
    const form = page.getByRole("form", { name: "A/B test" });
    await form.getByLabel("Variant A subject").fill("Spring is here, {{NAME|friend}}");
    await form.getByLabel("Variant B subject").fill("Last days of spring");
    await form.getByLabel("Variant B HTML body").fill("<p>Only today, {{NAME|friend}}</p>");
    await form.getByLabel("Test share (%)").fill("30");
    await form.getByLabel("Winner by").selectOption("unique_clicks");
    await form.getByLabel("Wait (minutes)").fill("120");
    await form.getByRole("button", { name: "Save A/B test" }).click();
    await form.getByRole("status").filter({ hasText: "A/B test saved." }).waitFor();

    const stored = (await adminCall("GET", `/panels/${panelId}/campaigns/${created.id}/ab-test`)).ab_test;
    assert.deepEqual(stored.variants, [
      { label: "A", subject: "Spring is here, {{NAME|friend}}", html: null },
      { label: "B", subject: "Last days of spring", html: "<p>Only today, {{NAME|friend}}</p>" },
    ]);
    assert.deepEqual([stored.test_share, stored.metric, stored.wait_minutes], [30, "unique_clicks", 120]);

    const table = page.getByRole("table", { name: "Variants side by side" });
    await table.waitFor();
    const rows = await table.locator("tbody tr td:first-child").allTextContents();
    assert.deepEqual(rows, ["Variant A", "Variant B", "The rest"]);
    await checkAccessibility(page, "campaign-ab-test");
    await screenshot(page, "campaign-ab-test");

    // Variant B previewed as a contact, then a test copy of it.
    await adminCall("POST", `/panels/${panelId}/contacts`, { attributes: { EMAIL: "ada@example.com" } });
    const preview = page.getByRole("form", { name: "Preview as a contact" });
    await preview.getByLabel("Preview as contact").fill("ada@example.com");
    await preview.getByLabel("Preview variant").selectOption({ label: "Variant B" });
    await preview.getByRole("button", { name: "Show", exact: true }).click();
    await page.getByText("(variant B) as ada@example.com").waitFor();
    await page.frameLocator('iframe[title="Preview of the campaign"]').getByText("Only today, friend", { exact: true }).waitFor();
    const test = page.getByRole("form", { name: "Send a test copy" });
    await test.getByLabel("Send a test copy to").fill("qa@example.com");
    await test.getByLabel("Test variant").selectOption({ label: "Variant B" });
    await test.getByRole("button", { name: "Send test", exact: true }).click();
    await test.getByRole("status").filter({ hasText: "Test copy of variant B sent to qa@example.com." }).waitFor();
    const copies = (await adminCall("GET", `/panels/${panelId}/outbox?campaign=${created.id}`)).messages;
    assert.deepEqual(copies.map((m: { to: string; subject: string }) => [m.to, m.subject]), [["qa@example.com", "[Test B] Last days of spring"]]);
    await checkAccessibility(page, "campaign-ab-variant-preview");
  });
});
