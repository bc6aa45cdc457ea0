// The Channels screen in Chromium, against the service started as `npm start` starts it: an owner
// sets the SMS provider up (Twilio with a test account, as the SMS tests do; nothing is sent
// here), sees it without its credential, makes an SMS template and previews it, lifts a stopped
// number, pages through the stop list, and turns web push on and off; a refusal is shown next to
// the field it names. A viewer sees no editing controls. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Locator, Page } from "playwright-core";
import { checkAccessibility, confirmInDialog, screenshot, signInAs, signInAsOwner, type BrowserWindow } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";


const ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef";
const AUTH_TOKEN = "tok-e2e-never-shown-0f3a9";

serviceForThisFile();

async function openChannels(window: Promise<BrowserWindow>): Promise<Page> {
  const opened = keep(await window);
  const { page } = opened;
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Channels", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Channels" }).waitFor();
  return page;
}

/** The refusal shown under a form field, which the field names as its description. */
async function errorOf(field: Locator): Promise<string> {
  await field.and(field.page().locator("[aria-invalid=true]")).waitFor();
  const ids = ((await field.getAttribute("aria-describedby")) ?? "").split(" ").filter((id) => id.endsWith("-error"));
  assert.equal(ids.length, 1, "the field is described by its error");
  return (await field.page().locator(`[id="${ids[0]}"]`).textContent()) ?? "";
}

describe("the Channels screen in Chromium", () => {
  test("an owner sets up Twilio (a bad SID refused by name), sees it without its token, and switches back to the outbox", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await openChannels(signInAsOwner(service));
    await page.getByText("No provider: journeys' SMS go to the outbox").waitFor();
    await checkAccessibility(page, "channels-empty");

    const form = page.getByRole("form", { name: "SMS provider" });
    await form.getByLabel("Provider").selectOption("twilio");
    await form.getByLabel("Account SID").fill("AC123");
    await form.getByLabel("Auth token").fill(AUTH_TOKEN);
    await form.getByLabel("Sending number").fill("+15005550006");
    await form.getByRole("button", { name: "Save SMS provider" }).click();
    assert.equal(await errorOf(form.getByLabel("Account SID")), "must be the account SID: AC and 32 hex digits");
    assert.equal((await adminCall("GET", `/panels/${panelId}/sms`)).provider, "outbox", "a refused change stores nothing");
    await checkAccessibility(page, "channels-sms-refused");
    await screenshot(page, "channels-sms-refused");

    await form.getByLabel("Account SID").fill(ACCOUNT_SID);
    await form.getByRole("button", { name: "Save SMS provider" }).click();
    await page.getByText("SMS provider saved.").waitFor();
    const facts = page.getByRole("definition");
    await page.getByLabel("SMS provider settings").getByText(ACCOUNT_SID).waitFor();
    const shown = (await facts.allTextContents()).join(" | ");
    assert.match(shown, /Twilio \| AC0123456789abcdef0123456789abcdef \| \+15005550006 \| set \(stored encrypted, never shown\)/);
    // The token is nowhere: not on the page, not in the form, not in what the API answers.
    assert.ok(!(await page.content()).includes(AUTH_TOKEN));
    assert.equal(await page.getByRole("form", { name: "SMS provider" }).getByLabel("Auth token").inputValue(), "");
    const stored = await adminCall("GET", `/panels/${panelId}/sms`);
    assert.ok(!JSON.stringify(stored).includes(AUTH_TOKEN));
    assert.deepEqual([stored.provider, stored.account_sid, stored.from, stored.credential_set], ["twilio", ACCOUNT_SID, "+15005550006", true]);
    assert.ok(shown.includes(stored.replies_url), "the replies URL to give Twilio is shown");
    await checkAccessibility(page, "channels-sms-twilio");
    await screenshot(page, "channels-sms-twilio");

    // A later refusal does not stand beside the earlier save's note.
    const again = page.getByRole("form", { name: "SMS provider" });
    await again.getByLabel("Account SID").fill("AC123");
    await again.getByLabel("Auth token").fill(AUTH_TOKEN);
    await again.getByRole("button", { name: "Save SMS provider" }).click();
    assert.equal(await errorOf(again.getByLabel("Account SID")), "must be the account SID: AC and 32 hex digits");
    assert.equal(await page.getByText("SMS provider saved.").count(), 0);
    assert.equal((await adminCall("GET", `/panels/${panelId}/sms`)).account_sid, ACCOUNT_SID, "the refused change stored nothing");

    await page.getByRole("form", { name: "SMS provider" }).getByLabel("Provider").selectOption("outbox");
    await page.getByRole("button", { name: "Save SMS provider" }).click();
    await page.getByText("No provider: journeys' SMS go to the outbox").waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/sms`)).provider, "outbox");
  });

  test("an owner makes an SMS template, previews it with a contact's values, edits and deletes it; lifts a stopped number", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("PUT", `/panels/${panelId}/sms/suppressions/14155550199`);
    const page = await openChannels(signInAsOwner(service));
    await page.getByText("No SMS templates yet").waitFor();

    const create = page.getByRole("form", { name: "New SMS template" });
    await create.getByLabel("Template name").fill("Cart reminder");
    await create.getByLabel("Message").fill("Hi {{FIRSTNAME | there}}, your cart is waiting: https://shop.example/cart");
    await create.getByLabel("DLT template id").fill("12");
    await create.getByRole("button", { name: "Add template" }).click();
    assert.equal(await errorOf(create.getByLabel("DLT template id")), "must be the DLT template id: 10 to 25 digits");
    await create.getByLabel("DLT template id").fill("");
    await create.getByRole("button", { name: "Add template" }).click();
    const row = page.getByRole("row", { name: "SMS template Cart reminder" });
    await row.waitFor();
    assert.deepEqual((await row.getByRole("cell").allTextContents()).slice(1, 3), ["GSM-7, 57 characters, 1 segment", "FIRSTNAME"]);

    await row.getByRole("button", { name: "Preview Cart reminder" }).click();
    const preview = page.getByRole("form", { name: "Preview of Cart reminder" });
    await preview.getByLabel("FIRSTNAME").fill("Ada");
    await preview.getByRole("button", { name: "Show preview" }).click();
    const shown = preview.getByRole("status", { name: "Previewed message" });
    await shown.getByText("Hi Ada, your cart is waiting: https://shop.example/cart").waitFor();
    assert.match((await shown.textContent()) ?? "", /GSM-7, 55 characters, 1 segment/);
    await checkAccessibility(page, "channels-sms-preview");
    await screenshot(page, "channels-sms-preview");

    await row.getByRole("button", { name: "Edit Cart reminder" }).click();
    const edit = page.getByRole("form", { name: "Edit Cart reminder" });
    await edit.getByLabel("Message").fill("Привет {{FIRSTNAME | there}}");
    await edit.getByRole("button", { name: "Save template" }).click();
    await edit.waitFor({ state: "detached" });
    // Cyrillic is not in the GSM alphabet: the list shows the new text counted in UCS-2.
    await row.getByRole("cell", { name: "UCS-2, 12 characters, 1 segment" }).waitFor();
    const [template] = (await adminCall("GET", `/panels/${panelId}/sms/templates`)).templates;
    assert.equal(template.body, "Привет {{FIRSTNAME | there}}");

    await row.getByRole("button", { name: "Delete Cart reminder" }).click();
    await confirmInDialog(page, "Delete template");
    await page.getByText("No SMS templates yet").waitFor();
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/sms/templates`)).templates, []);

    const stopped = page.getByRole("row", { name: /14155550199/ });
    assert.match((await stopped.textContent()) ?? "", /stopped by an operator/);
    await stopped.getByRole("button", { name: "Send again to 14155550199" }).click();
    await confirmInDialog(page, "Send again");
    await page.getByText("No stopped numbers").waitFor();
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/sms/suppressions`)).suppressions, []);

    // An operator stops a number someone asked about; a number without enough digits is refused by name.
    const stop = page.getByRole("form", { name: "Stop SMS to a number" });
    await stop.getByLabel("Number to stop").fill("12-34");
    await stop.getByRole("button", { name: "Stop SMS to this number" }).click();
    assert.equal(await errorOf(stop.getByLabel("Number to stop")), "must be a mobile number with its country code: 6 to 15 digits");
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/sms/suppressions`)).suppressions, []);
    await stop.getByLabel("Number to stop").fill("+1 415 555 0142");
    await stop.getByRole("button", { name: "Stop SMS to this number" }).click();
    await page.getByRole("row", { name: /14155550142/ }).getByText("stopped by an operator").waitFor();
    assert.equal(await stop.getByLabel("Number to stop").inputValue(), "");
    assert.deepEqual(
      (await adminCall("GET", `/panels/${panelId}/sms/suppressions`)).suppressions.map((s: { phone: string; reason: string }) => [s.phone, s.reason]),
      [["14155550142", "operator"]],
    );
    await checkAccessibility(page, "channels-sms-stopped");
  });

  test("an owner turns web push on (a bad contact refused by name) and off, and FCM's key file is checked by member", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await openChannels(signInAsOwner(service));
    const web = page.getByRole("group", { name: /^Web push/ });
    await web.getByText("off", { exact: true }).waitFor();

    const form = web.getByRole("form", { name: "Set up web push" });
    await form.getByLabel("Contact for push services").fill("ops at shop");
    await form.getByRole("button", { name: "Turn web push on" }).click();
    assert.equal(await errorOf(form.getByLabel("Contact for push services")), "must be a mailto: address or an https: URL");
    await form.getByLabel("Contact for push services").fill("mailto:ops@shop.example");
    await form.getByRole("button", { name: "Turn web push on" }).click();
    await web.getByText("on", { exact: true }).waitFor();
    const push = await adminCall("GET", `/panels/${panelId}/push`);
    assert.equal(push.web_push.sends, true);
    await web.getByText(push.web_push.public_key).waitFor();
    await web.getByText(push.web_push.subscribe_url).waitFor();
    await checkAccessibility(page, "channels-push-on");
    await screenshot(page, "channels-push-on");

    await web.getByRole("button", { name: "Turn web push off" }).click();
    await web.getByText("off", { exact: true }).waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/push`)).web_push.sends, false);

    // A key file whose private key is not a PEM key: refused, naming the member.
    const fcm = page.getByRole("group", { name: /^App push \(FCM\)/ }).getByRole("form", { name: "Set up app push (FCM)" });
    await fcm.getByLabel("Service account key file (JSON)").fill(
      JSON.stringify({ type: "service_account", project_id: "shop-app", client_email: "push@shop-app.iam.gserviceaccount.com", private_key: "not a key" }),
    );
    await fcm.getByRole("button", { name: "Turn FCM on" }).click();
    assert.equal(await errorOf(fcm.getByLabel("Service account key file (JSON)")), "private_key: must be a PKCS #8 PEM private key (BEGIN PRIVATE KEY)");
    await fcm.getByLabel("Service account key file (JSON)").fill("{ not json");
    await fcm.getByRole("button", { name: "Turn FCM on" }).click();
    assert.equal(await errorOf(fcm.getByLabel("Service account key file (JSON)")), "must be the service account key file's JSON object");
    assert.equal((await adminCall("GET", `/panels/${panelId}/push`)).fcm.sends, false);
  });

  test("the stop list pages 50 at a time from the Worker, newest first: Next shows the older numbers, Previous the first page again", async () => {
    const panelId = service.printed["demo panel"]!;
    // 55 numbers stopped one after another, each a lower number than the one before: the newest
    // first is then the numbers in rising order, also for two stopped in the same millisecond
    // (those the list orders by number).
    const stopped = Array.from({ length: 55 }, (_, i) => `1415555${1000 + i}`);
    for (const phone of stopped.toReversed()) await adminCall("PUT", `/panels/${panelId}/sms/suppressions/${phone}`);
    const page = await openChannels(signInAsOwner(service));
    const table = page.getByRole("table", { name: "Numbers SMS is not sent to, newest first" });
    const pager = page.getByRole("navigation", { name: "Stopped numbers pages" });
    const shownNumbers = () => table.getByRole("rowheader").allTextContents();

    await table.getByRole("rowheader", { name: stopped[0], exact: true }).waitFor();
    const firstPage = await shownNumbers();
    assert.deepEqual(firstPage, stopped.slice(0, 50), "the newest 50, newest first");
    assert.equal(await pager.getByRole("button", { name: "Previous" }).isDisabled(), true);

    await pager.getByRole("button", { name: "Next" }).click();
    await table.getByRole("rowheader", { name: stopped[50], exact: true }).waitFor();
    const secondPage = await shownNumbers();
    // Then any number an earlier test of this file stopped before these.
    assert.deepEqual(secondPage.slice(0, 5), stopped.slice(50), "the 5 older ones, newest first");
    assert.deepEqual(secondPage.filter((phone) => firstPage.includes(phone)), [], "none of the first page's");
    assert.equal(await pager.getByRole("button", { name: "Next" }).isDisabled(), true, "the last page");
    await checkAccessibility(page, "channels-sms-stops-page-2");
    await screenshot(page, "channels-sms-stops-page-2");

    await pager.getByRole("button", { name: "Previous" }).click();
    await table.getByRole("rowheader", { name: stopped[0], exact: true }).waitFor();
    assert.deepEqual(await shownNumbers(), firstPage);
    assert.equal(await pager.getByRole("button", { name: "Previous" }).isDisabled(), true);
  });

  test("a viewer reads templates and previews them, with no editing controls and no provider settings", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/sms/templates`, { name: "Welcome", body: "Welcome {{NAME | friend}}" });
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "channels-viewer@example.com", role: "viewer", password: "viewer passphrase" });
    const page = await openChannels(signInAs(service, "channels-viewer@example.com", "viewer passphrase"));
    const row = page.getByRole("row", { name: "SMS template Welcome" });
    await row.waitFor();
    await page.getByText("The SMS provider: shown to marketers and owners of the panel only.").waitFor();
    await page.getByText("Push notification settings: shown to marketers and owners of the panel only.").waitFor();
    assert.equal(await row.getByRole("button", { name: "Edit Welcome" }).count(), 0);
    assert.equal(await row.getByRole("button", { name: "Delete Welcome" }).count(), 0);
    assert.equal(await page.getByRole("form", { name: "New SMS template" }).count(), 0);
    assert.equal(await page.getByRole("form", { name: "SMS provider" }).count(), 0);
    assert.equal(await page.getByRole("form", { name: "Stop SMS to a number" }).count(), 0);
    await row.getByRole("button", { name: "Preview Welcome" }).click();
    await page.getByRole("button", { name: "Show preview" }).click();
    await page.getByRole("status", { name: "Previewed message" }).getByText("Welcome friend").waitFor();
    await checkAccessibility(page, "channels-viewer");
    await screenshot(page, "channels-viewer");
  });
});
