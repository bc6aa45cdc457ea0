// A recipient's side of email, in Chromium on a phone-sized screen: the footer of a journey email
// as the outbox kept it, and the unsubscribe page its link opens, with and without JavaScript.
// Each state is checked with axe and saved as a screenshot under test-results/e2e/.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, openBrowser, screenshot } from "./browser.ts";
import { unsubscribeUris } from "../support/mime.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

const PHONE = { width: 390, height: 844 };

serviceForThisFile();

async function phonePage(options: { javaScript?: boolean } = {}): Promise<Page> {
  return keep(await openBrowser(service.origin, { viewport: PHONE, javaScript: options.javaScript ?? true })).page;
}

/** The raw message of a journey email to `address`, once the outbox kept it. */
async function journeyEmail(panelId: string, clientId: string, activityId: string, address: string): Promise<string> {
  const posted = await fetch(`${service.origin}/v1/activity/singleactivity/${clientId}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ activityid: activityId, identity: address }),
  });
  assert.equal(((await posted.json()) as { result: string }).result, "Success");
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { messages } = await adminCall("GET", `/panels/${panelId}/journey-messages?channel=email`);
    const sent = (messages as Array<{ msgid: string; status: string; recipient: string }>).find((m) => m.recipient === address && m.status === "sent");
    if (sent) return (await adminCall("GET", `/panels/${panelId}/outbox/${encodeURIComponent(sent.msgid)}`)).raw;
    if (Date.now() > deadline) throw new Error(`no email was sent to ${address}: ${JSON.stringify(messages)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** The HTML part of a raw message (base64 after its part headers). */
function htmlPart(raw: string): string {
  const part = /Content-Type: text\/html; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+?)\r\n--/.exec(raw)![1]!;
  return Buffer.from(part.replace(/\r\n/g, ""), "base64").toString("utf8");
}

async function assertTargets(page: Page): Promise<void> {
  for (const button of await page.getByRole("button").all()) {
    const box = (await button.boundingBox())!;
    assert.ok(box.height >= 44 && box.width >= 44, `a button is ${box.width}x${box.height}, under 44 px`);
    assert.ok(box.x >= 16 && box.x + box.width <= PHONE.width - 16, "a button touches the screen's edge");
  }
}

describe("unsubscribing from a phone", () => {
  let panelId: string;
  let clientId: string;
  let activityId: string;

  before(async () => {
    const panel = await adminCall("POST", "/panels", { name: "Fern & Co" });
    panelId = panel.id;
    clientId = panel.client_id;
    await adminCall("PATCH", `/panels/${panelId}`, { api_mode: true });
    activityId = (await adminCall("POST", `/panels/${panelId}/activities`, { name: "signed_up", params: {} })).activityid;
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Welcome",
      trigger: { type: "activity", activity: "signed_up" },
      steps: [
        {
          id: "welcome",
          type: "email",
          subject: "Welcome to Fern & Co",
          html: `<html><body style="font-family:sans-serif;padding:16px"><h1>Welcome!</h1><p>Our spring plants are in. <a href="https://fern.example.com/spring">See them</a>.</p></body></html>`,
          sender_name: "Fern Newsletter",
          sender_email: "news@fern.example.com",
        },
      ],
    });
    assert.ok(journey.id, `the journey was not created: ${JSON.stringify(journey)}`);
    const moved = await adminCall("POST", `/panels/${panelId}/journeys/${journey.id}/status`, { status: "running" });
    assert.ok(!moved.error, `the journey did not start: ${JSON.stringify(moved)}`);
  });

  test("the email's footer names the sender and why, and its link leads to a page that names them too", async () => {
    const raw = await journeyEmail(panelId, clientId, activityId, "ada.lovelace@example.com");
    const link = unsubscribeUris(raw)[0]!;
    assert.ok(link.startsWith(`${service.origin}/t/u/`));

    const mail = await phonePage();
    await mail.setContent(htmlPart(raw));
    const footer = mail.getByRole("contentinfo");
    assert.equal(
      (await footer.textContent())!.replace(/\s+/g, " ").trim(),
      "This email was sent by Fern Newsletter (news@fern.example.com) because your address is on the mailing list of Fern & Co.Don't want these emails? Unsubscribe with one click, or choose what you receive.",
    );
    await screenshot(mail, "email-footer-phone");
    assert.equal(await footer.getByRole("link", { name: "Unsubscribe" }).getAttribute("href"), link);

    const page = await phonePage();
    await page.goto(link);
    await page.getByRole("heading", { level: 1, name: "Stop emails from Fern & Co?" }).waitFor();
    assert.equal(await page.locator("html").getAttribute("lang"), "en");
    const text = (await page.locator("main").textContent())!;
    assert.match(text, /These emails come from Fern Newsletter \(news@fern\.example\.com\), sent to ad•+@example\.com because the address is on the mailing list of Fern & Co\./);
    assert.doesNotMatch(text, /ada\.lovelace/);
    await checkAccessibility(page, "unsubscribe-confirm");
    await assertTargets(page);
    await screenshot(page, "unsubscribe-confirm-phone");

    await page.getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("heading", { level: 1, name: "You are unsubscribed" }).waitFor();
    assert.match((await page.getByRole("status").textContent())!, /^Done: Fern & Co will not send marketing email to ad•+@example\.com any more\.$/);
    await checkAccessibility(page, "unsubscribe-done");
    await assertTargets(page);
    await screenshot(page, "unsubscribe-done-phone");

    // The link again: the page knows, and offers the way back.
    await page.goto(link);
    await page.getByRole("heading", { level: 1, name: "You are unsubscribed" }).waitFor();
    assert.match((await page.getByRole("status").textContent())!, /^This address was already unsubscribed/);
    await page.getByRole("button", { name: "Subscribe again" }).click();
    await page.getByRole("heading", { level: 1, name: "You are subscribed again" }).waitFor();
    await checkAccessibility(page, "resubscribed");
    await assertTargets(page);
    await screenshot(page, "unsubscribe-resubscribed-phone");

    // The footer's other link: a box per channel, saved without a script.
    await page.goto(await footer.getByRole("link", { name: "choose what you receive" }).getAttribute("href") as string);
    await page.getByRole("heading", { level: 1, name: "What Fern & Co may send you" }).waitFor();
    const email = page.getByRole("checkbox", { name: /Email/ });
    assert.equal(await email.isChecked(), true);
    await email.uncheck();
    await page.getByRole("button", { name: "Save preferences" }).click();
    await page.getByRole("status").getByText(/^Saved\./).waitFor();
    assert.equal(await page.getByRole("checkbox", { name: /Email/ }).isChecked(), false);
    await checkAccessibility(page, "preferences");
    await assertTargets(page);
    await screenshot(page, "preferences-phone");
  });

  test("works without JavaScript", async () => {
    const raw = await journeyEmail(panelId, clientId, activityId, "bo@example.com");
    const link = unsubscribeUris(raw)[0]!;
    const page = await phonePage({ javaScript: false });
    await page.goto(link);
    await page.getByRole("button", { name: "Unsubscribe" }).click();
    await page.getByRole("heading", { level: 1, name: "You are unsubscribed" }).waitFor();
    await screenshot(page, "unsubscribe-done-no-javascript");
  });
});
