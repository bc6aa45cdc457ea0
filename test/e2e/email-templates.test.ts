// The Email templates screen in Chromium, against the service started as `npm start` starts it:
// an owner saves a template (a taken name refused under the field), a campaign is scheduled from
// it on the Campaigns screen, and a later edit of the template leaves the campaign's copy as it
// was; the template is deleted with the campaign unharmed. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Locator } from "playwright-core";
import { checkAccessibility, confirmInDialog, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

/** The refusal shown under a form field, which the field names as its description. */
async function errorOf(field: Locator): Promise<string> {
  await field.and(field.page().locator("[aria-invalid=true]")).waitFor();
  const ids = ((await field.getAttribute("aria-describedby")) ?? "").split(" ").filter((id) => id.endsWith("-error"));
  assert.equal(ids.length, 1, "the field is described by its error");
  return (await field.page().locator(`[id="${ids[0]}"]`).textContent()) ?? "";
}

describe("the Email templates screen in Chromium", () => {
  test("an owner saves a template, schedules a campaign from it, edits the template (the campaign keeps its copy) and deletes it", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/lists`, { name: "Readers" });
    const { page } = keep(await signInAsOwner(service));
    const nav = page.getByRole("navigation", { name: "Screens" });
    await nav.getByRole("link", { name: "Email templates", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Email templates" }).waitFor();
    await page.getByText("No email templates yet").waitFor();

    const form = page.getByRole("form", { name: "New email template" });
    await form.getByLabel("Template name").fill("Welcome");
    await form.getByLabel("Subject").fill("Welcome, {{NAME|friend}}");
    await form.getByLabel("Preheader (optional)").fill("Your first week");
    // A new email starts in the visual editor; hand-written HTML goes in "Code".
    await form.getByRole("button", { name: "Code", exact: true }).click();
    await form.getByLabel("HTML body").fill("<h1>Hello {{NAME|there}}</h1><p>Glad you came.</p>");
    await page.frameLocator(`iframe[title="Preview of the template's HTML body"]`).getByRole("heading", { name: "Hello {{NAME|there}}" }).waitFor();
    await checkAccessibility(page, "email-templates-new");
    await form.getByRole("button", { name: "Add template" }).click();
    const row = page.getByRole("row", { name: /Welcome/ });
    await row.waitFor();
    assert.equal(await row.getByRole("rowheader").textContent(), "Welcome");
    assert.deepEqual((await row.getByRole("cell").allTextContents()).slice(0, 2), ["Welcome, {{NAME|friend}}", "1 KB"]);

    // A taken name (whatever the case) is refused under the name, and nothing is added.
    await form.getByLabel("Template name").fill("WELCOME");
    await form.getByLabel("Subject").fill("Another");
    await form.getByRole("button", { name: "Add template" }).click();
    assert.equal(await errorOf(form.getByLabel("Template name")), 'the panel already has an email template named "WELCOME"');
    assert.equal((await adminCall("GET", `/panels/${panelId}/email-templates`)).templates.length, 1);
    await checkAccessibility(page, "email-templates-refused");
    await screenshot(page, "email-templates");
    const [template] = (await adminCall("GET", `/panels/${panelId}/email-templates`)).templates;

    // A campaign from the template: its subject and body copied when scheduled.
    await nav.getByRole("link", { name: "Campaigns", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
    await page.getByLabel("Campaign name").fill("Welcome wave");
    await page.getByLabel("Sender name").fill("Shop");
    await page.getByLabel("Sender email").fill("shop@example.com");
    await page.getByLabel("Email template").selectOption({ label: "Welcome" });
    await page.getByText("The body is the template “Welcome” as it is when you save the campaign").waitFor();
    await page.frameLocator('iframe[title="Preview of the HTML body"]').getByRole("heading", { name: "Hello {{NAME|there}}" }).waitFor();
    await page.getByRole("group", { name: "Send to" }).getByLabel("List Readers", { exact: false }).check();
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel("Send at").fill(`${day}T09:30`);
    await checkAccessibility(page, "campaign-from-template");
    await page.getByRole("button", { name: "Schedule campaign" }).click();
    await page.getByText(`Campaign “Welcome wave” scheduled for ${day} 09:30:00`).waitFor();
    await screenshot(page, "campaign-from-template");
    const stored = () => adminCall("GET", `/panels/${panelId}/campaigns`).then((answer: any) => answer.campaigns.find((c: any) => c.name === "Welcome wave"));
    const campaign = await stored();
    assert.equal(campaign.subject, "Welcome, {{NAME|friend}}");
    assert.equal(campaign.email_template, template.id);

    // The template changes on its screen; the scheduled campaign keeps what it copied.
    await nav.getByRole("link", { name: "Email templates", exact: true }).click();
    await page.getByRole("row", { name: /Welcome/ }).getByRole("button", { name: "Edit Welcome" }).click();
    const edit = page.getByRole("form", { name: "Edit Welcome" });
    await edit.getByLabel("Subject").fill("Changed subject");
    await edit.getByRole("button", { name: "Save template" }).click();
    await page.getByRole("cell", { name: "Changed subject" }).waitFor();
    assert.equal((await stored()).subject, "Welcome, {{NAME|friend}}");

    await page.getByRole("button", { name: "Delete Welcome" }).click();
    await confirmInDialog(page, "Delete template");
    await page.getByText("No email templates yet").waitFor();
    assert.equal((await stored()).status, "scheduled");
  });
});
