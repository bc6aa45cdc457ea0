// A draft's audience size, its preview as a chosen contact at desktop and phone widths, and the
// checks before scheduling, in Chromium against the service as `npm start` starts it.
// Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

describe("campaign preview in Chromium", () => {
  test("a draft shows its audience size, previews as a contact at 390 px, and warns before scheduling", async () => {
    const panelId = service.printed["demo panel"]!;
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Preview readers" });
    for (const [email, name] of [["ann@example.com", "Ann"], ["ben@example.com", ""]]) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email, NAME: name }), listid: String(list.id) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    const created = await adminCall("POST", `/panels/${panelId}/campaigns`, {
      name: "Preview one",
      subject: "Hi {{NAME|friend}}",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: '<p>Hello {{NAME|there}}, {{COUPON|no coupon}}</p><img src="logo.png" width="20">',
      audience: { lists: [list.id] },
      draft: true,
    });
    const page = keep(await signInAsOwner(service)).page;
    await page.goto(`${service.origin}/panels/${panelId}/campaigns/${created.id}`);
    await page.getByRole("heading", { level: 1, name: "Preview one" }).waitFor();
    await page.getByText("Reaches 2 contacts now.").waitFor();

    const preview = page.getByRole("region", { name: "Preview", exact: true });
    const frame = page.frameLocator('iframe[title="Preview of the campaign"]');
    await frame.getByText("Hello there, no coupon").waitFor();
    await preview.getByLabel("Preview as contact").fill("ann@example.com");
    await preview.getByRole("button", { name: "Show", exact: true }).click();
    await frame.getByText("Hello Ann, no coupon").waitFor();
    await preview.getByText("Hi Ann").waitFor();
    await preview.getByRole("button", { name: "Phone (390 px)" }).click();
    const width = await page.locator('iframe[title="Preview of the campaign"]').evaluate((el) => el.getBoundingClientRect().width);
    assert.equal(Math.round(width), 390);

    const checks = page.getByRole("region", { name: "Checks before scheduling" });
    await checks.getByRole("button", { name: "Check the campaign" }).click();
    const warnings = checks.getByRole("list", { name: "Warnings" });
    await warnings.waitFor();
    const texts = await warnings.getByRole("listitem").allTextContents();
    assert.equal(texts.length, 3, texts.join("\n"));
    assert.match(texts[0]!, /^Merge tag COUPON:/);
    assert.match(texts[1]!, /^Unsubscribe:/);
    assert.match(texts[2]!, /^Image logo.png:/);
    await page.locator('iframe[title="Preview of the campaign"]').scrollIntoViewIfNeeded();
    await checkAccessibility(page, "campaign-preview");
    await screenshot(page, "campaign-preview");
  });
});
