// The visual email editor (issue 43, item 4) in Chromium, against the service as `npm start`
// starts it: a marketer builds a campaign's email from blocks (heading, text, button, footer),
// undoes a deletion, saves a draft, and the campaign's preview shows the button's link and the
// footer's unsubscribe link; the stored body is MJML's table-based HTML with {{UNSUBSCRIBE}} and
// the source beside it, which the edit form opens again. Screenshots at desktop and 390 px go to
// test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

const SHOP = "https://shop.example.com/spring?from=email";

describe("the visual email editor in Chromium", () => {
  test("builds an email from blocks, undoes a deletion, saves it, and the preview has the button's link and the unsubscribe link", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/lists`, { name: "Editor readers" });
    const { page } = keep(await signInAsOwner(service));
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Campaigns", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
    const form = page.getByRole("form", { name: "New campaign" });
    await form.getByLabel("Campaign name").fill("Spring from blocks");
    await form.getByLabel("Subject line").fill("Spring is here, {{NAME|friend}}");
    await form.getByLabel("Sender name").fill("Shop");
    await form.getByLabel("Sender email").fill("shop@example.com");
    await form.getByRole("group", { name: "Send to" }).getByLabel("List Editor readers", { exact: false }).check();

    // A new email starts in the visual editor: a heading, a text and the footer.
    const blocks = form.getByRole("region", { name: "Blocks" });
    await blocks.getByRole("group", { name: "1. Heading" }).getByLabel("Heading text").fill("Spring sale, {{NAME|friend}}");
    await blocks.getByRole("group", { name: "2. Text" }).getByLabel("Text", { exact: true }).fill("Everything is 20% off & more.");
    await form.getByRole("group", { name: "Add to blocks" }).getByRole("button", { name: "Add button" }).click();
    const button = blocks.getByRole("group", { name: "3. Button" });
    await button.getByLabel("Button label").fill("Shop the sale");
    await button.getByLabel("Button link").fill(SHOP);
    await button.getByText("Style").click();
    await button.getByLabel("Background colour").fill("#ff6600");
    await blocks.getByRole("group", { name: "4. Footer" }).getByLabel("Footer text").fill("Shop Ltd, 1 High Street");

    // Delete the text, then undo: it is back.
    await blocks.getByRole("button", { name: "Delete 2. Text" }).click();
    await blocks.getByRole("group", { name: "2. Button" }).waitFor();
    await form.getByRole("button", { name: "Undo" }).click();
    assert.equal(await blocks.getByRole("group", { name: "2. Text" }).getByLabel("Text", { exact: true }).inputValue(), "Everything is 20% off & more.");

    // The live preview is MJML's rendering.
    const live = page.frameLocator('iframe[title="Preview of the HTML body"]');
    await live.getByRole("link", { name: "Shop the sale" }).waitFor();
    assert.equal(await live.getByRole("link", { name: "Shop the sale" }).getAttribute("href"), SHOP);
    await live.getByRole("link", { name: "Unsubscribe" }).waitFor();
    await checkAccessibility(page, "email-editor");
    await screenshot(page, "email-editor");

    await form.getByRole("button", { name: "Save as draft" }).click();
    await page.getByText("Campaign “Spring from blocks” saved as a draft.").waitFor();
    const campaign = (await adminCall("GET", `/panels/${panelId}/campaigns`)).campaigns.find((c: { name: string }) => c.name === "Spring from blocks");
    const stored = await adminCall("GET", `/panels/${panelId}/campaigns/${campaign.id}/body`);
    assert.deepEqual(stored.body_source.blocks.map((b: { type: string }) => b.type), ["heading", "text", "button", "footer"]);
    assert.match(stored.html, /<table/);
    assert.ok(stored.html.includes('href="{{UNSUBSCRIBE}}"'), "the footer links to {{UNSUBSCRIBE}}");
    assert.ok(stored.html.includes('href="{{PREFERENCES}}"'), "the footer links to {{PREFERENCES}}");

    // The campaign's preview (merge tags filled) has the button's link and the unsubscribe link.
    await page.getByRole("link", { name: "Spring from blocks" }).click();
    await page.getByRole("heading", { level: 1, name: "Spring from blocks" }).waitFor();
    const preview = page.frameLocator('iframe[title="Preview of the campaign"]');
    await preview.getByText("Spring sale, friend").waitFor();
    assert.equal(await preview.getByRole("link", { name: "Shop the sale" }).getAttribute("href"), SHOP);
    await preview.getByRole("link", { name: "Unsubscribe" }).waitFor();

    // The edit form opens the saved blocks again in the visual editor.
    await page.getByText("Edit", { exact: true }).click();
    const edit = page.getByRole("form", { name: "Edit campaign" });
    assert.equal(await edit.getByRole("group", { name: "3. Button" }).getByLabel("Button link").inputValue(), SHOP);
    await checkAccessibility(page, "email-editor-campaign");
    await screenshot(page, "email-editor-campaign");
    await page.setViewportSize({ width: 390, height: 844 });
    await edit.getByRole("group", { name: "1. Heading" }).scrollIntoViewIfNeeded();
    const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
    assert.ok(width <= 390, `the page is ${width} px wide at 390 px`);
    await screenshot(page, "responsive-390-email-editor");
  });
});
