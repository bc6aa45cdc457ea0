// Signup forms (issue 45) in Chromium, against the service started as `npm start` starts it: an
// owner makes a form on the Signup forms screen (its snippet shown), a visitor subscribes on the
// hosted page on a phone and on a desktop, follows the confirmation link from the local mailbox
// (LOCAL_MAILBOX) and presses its button; the contact is then a member of the list. Each page is
// checked with axe and saved as a screenshot under test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, openBrowser, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

/** The local mailbox's page of the newest mail whose subject and recipient match, once the log names it. */
async function mailboxLink(subject: string, to: string): Promise<string> {
  const pattern = new RegExp(`Local mailbox: "${subject.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}" to ${to.replace(/\./g, "\\.")}: (\\S+)`, "g");
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = [...service.output().matchAll(pattern)].at(-1)?.[1];
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no mail "${subject}" to ${to} in the local mailbox`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function subscribe(page: Page, hostedUrl: string, address: string, name: string, label: string): Promise<void> {
  await page.goto(hostedUrl);
  await page.getByRole("heading", { level: 1, name: "Fern & Co news" }).waitFor();
  assert.equal(await page.locator("html").getAttribute("lang"), "en");
  // No script on the page, and its policy would run none: the form is a plain HTML form post.
  assert.equal(await page.locator("script").count(), 0);
  await checkAccessibility(page, `signup-form-${label}`);
  await screenshot(page, `signup-form-${label}`);
  await page.getByLabel("Email address").fill(address);
  await page.getByLabel("Your name (optional)").fill(name);
  await page.getByRole("button", { name: "Subscribe" }).click();
  await page.getByRole("heading", { level: 1, name: "Check your inbox" }).waitFor();
  assert.match((await page.getByRole("status").textContent())!, /We sent you a link: follow it to confirm\./);
  await checkAccessibility(page, `signup-form-sent-${label}`);
  await screenshot(page, `signup-form-sent-${label}`);

  const mailbox = await mailboxLink("Confirm your subscription: Fern & Co news", address);
  await page.goto(mailbox);
  const link = page.getByRole("link", { name: /\/f\/frm_\w+\/confirm\// });
  await link.click();
  await page.getByRole("heading", { level: 1, name: "Confirm your subscription" }).waitFor();
  await checkAccessibility(page, `signup-confirm-${label}`);
  await screenshot(page, `signup-confirm-${label}`);
  await page.getByRole("button", { name: "Confirm my subscription" }).click();
  await page.getByRole("heading", { level: 1, name: "Subscription confirmed" }).waitFor();
  assert.match((await page.getByRole("status").textContent())!, /Welcome to Fern & Co news!/);
  await checkAccessibility(page, `signup-confirmed-${label}`);
  await screenshot(page, `signup-confirmed-${label}`);
}

describe("signup forms in Chromium", () => {
  test("an owner makes a form and sees its snippet; visitors subscribe on a phone and a desktop and confirm from their mail", async () => {
    const panelId = service.printed["demo panel"]!;
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Fern news" });
    await adminCall("PUT", `/panels/${panelId}/attributes/NAME`, { type: "string" });

    const { page: panel } = keep(await signInAsOwner(service, { viewport: DESKTOP }));
    await panel.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Signup forms", exact: true }).click();
    await panel.getByRole("heading", { level: 1, name: "Signup forms" }).waitFor();
    await panel.getByText("No signup forms yet").waitFor();
    const editor = panel.getByRole("form", { name: "New signup form" });
    await editor.getByLabel("Form name").fill("Newsletter");
    await editor.getByLabel("Page heading").fill("Fern & Co news");
    await editor.getByRole("button", { name: "Add a field" }).click();
    await editor.getByLabel("Field 2: attribute").selectOption("NAME");
    await editor.getByLabel("Field 2: label").fill("Your name");
    await editor.getByRole("checkbox", { name: "Fern news" }).check();
    await editor.getByLabel("Confirmation text").fill("We sent you a link: follow it to confirm.");
    await editor.getByLabel("Thank-you text").fill("Welcome to Fern & Co news!");
    await checkAccessibility(panel, "signup-forms-new");
    await editor.getByRole("button", { name: "Add form" }).click();
    const snippet = panel.getByRole("region", { name: "Snippet of Newsletter" });
    await snippet.waitFor();
    assert.match((await snippet.locator("code").textContent())!, /<form method="post" action="http:\/\/127\.0\.0\.1:\d+\/f\/frm_\w+"/);
    await checkAccessibility(panel, "signup-forms-snippet");
    await screenshot(panel, "signup-forms-screen");
    const hostedUrl = (await snippet.getByRole("link").getAttribute("href"))!;
    // The snippet's URL is the service's public base URL; the browser reaches the service at its origin.
    const hosted = `${service.origin}${new URL(hostedUrl).pathname}`;

    await subscribe(keep(await openBrowser(service.origin, { viewport: PHONE })).page, hosted, "ivy@example.com", "Ivy", "phone");
    await subscribe(keep(await openBrowser(service.origin, { viewport: DESKTOP })).page, hosted, "oak@example.com", "Oak", "desktop");

    for (const [address, name] of [["ivy@example.com", "Ivy"], ["oak@example.com", "Oak"]]) {
      const contact = await adminCall("GET", `/panels/${panelId}/contacts/${encodeURIComponent(address!)}`);
      assert.deepEqual(contact.lists, [{ id: list.id, name: "Fern news" }], `${address} is a confirmed member`);
      assert.equal(contact.attributes.NAME, name);
    }
  });
});
