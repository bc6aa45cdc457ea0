// Issue 44 items 2 and 3: the panel follows the signed-in role. What a role may not do is
// hidden or disabled with the role it needs (the table in src/domain/permissions, which the
// admin routes read too); a screen's URL a role may not open says which role it needs; and an
// irreversible action asks once, in the panel's confirmation dialog, naming what will happen.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Locator, Page } from "playwright-core";
import { checkAccessibility, screenshot, signInAs, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let panelId = "";
let listId = 0;
let journeyId = "";
let campaignId = "";
let webhookId = "";

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "viewer@example.com", role: "viewer", password: "viewer passphrase" });
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "marketer@example.com", role: "marketer", password: "marketer passphrase" });
    listId = (await adminCall("POST", `/panels/${panelId}/lists`, { name: "Newsletter" })).id;
    await adminCall("POST", `/panels/${panelId}/users`, { email: "shop@example.com" });
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "Signed up", params: {} });
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Welcome",
      trigger: { type: "activity", activity: "Signed up" },
      steps: [{ id: "hello", type: "email", subject: "Hello", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    journeyId = journey.id;
    await adminCall("POST", `/panels/${panelId}/journeys/${journeyId}/status`, { status: "running" });
    campaignId = (
      await adminCall("POST", `/panels/${panelId}/campaigns`, {
        name: "Spring",
        subject: "Spring news",
        sender_name: "Shop",
        sender_email: "shop@example.com",
        html: "<p>Hello</p>",
        audience: { lists: [(await adminCall("POST", `/panels/${panelId}/lists`, { name: "Spring readers" })).id] },
        draft: true,
      })
    ).id;
    await adminCall("POST", `/panels/${panelId}/campaigns/${campaignId}/test`, { email: "proof@example.com" });
    webhookId = (await adminCall("POST", `/panels/${panelId}/webhooks`, { label: "Orders", url: "https://hooks.example.com/orders", username: "shop", password: "a shop passphrase", alert: { emails: ["ops@example.com"], frequency: "daily" } })).id;
  },
});

async function signedIn(email: string, password: string): Promise<Page> {
  return keep(await signInAs(service, email, password)).page;
}

async function open(page: Page, suffix: string, heading: string): Promise<void> {
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}${suffix}`);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** A button the role may not use: present but disabled, its title naming the role it needs. */
async function assertLocked(page: Page, name: string, role: string): Promise<void> {
  const button = page.getByRole("button", { name, exact: true });
  await button.waitFor();
  assert.equal(await button.isDisabled(), true, `${name} is disabled`);
  assert.equal(await button.getAttribute("title"), `This needs the ${role} role`);
}

const node = (page: Page, id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);

/** A setting a read-only side panel shows as text: the value under its name. */
const setting = (panel: Locator, label: string) => panel.locator("dl.setting").filter({ has: panel.page().getByRole("term").getByText(label, { exact: true }) }).getByRole("definition");

/** The form controls in a part of the page, each as its tag and name (so a failure says which). */
async function inputsIn(part: Locator): Promise<string[]> {
  return part.locator("input, select, textarea").evaluateAll((inputs) => inputs.map((input) => `${input.tagName} ${input.getAttribute("aria-label") ?? input.id}`));
}

/** An empty list's message as it reads: its heading, then its sentence if it has one. */
async function emptyMessage(page: Page, title: string): Promise<string> {
  const empty = page.locator(".empty").filter({ has: page.getByRole("heading", { name: title, exact: true }) });
  return (await empty.innerText()).replace(/\s+/g, " ").trim();
}

/** A fact a read-only card lists (dl.facts): the value under its name. */
const fact = (part: Locator, label: string) => part.locator("dl.facts > dt").getByText(label, { exact: true }).locator("xpath=following-sibling::dd[1]");

async function assertAbsent(page: Page, role: "button" | "link" | "form" | "navigation", name: string): Promise<void> {
  assert.equal(await page.getByRole(role, { name, exact: true }).count(), 0, `no ${role} "${name}"`);
}

/**
 * A card a viewer opened with View: no form, nothing to type into, and no button but Close
 * (which closes it) and those of `reads` (which change nothing, as a copy); none of `writes`
 * anywhere on the page.
 */
async function assertOnlyRead(page: Page, card: Locator, writes: string[], name: string, reads: string[] = []): Promise<void> {
  assert.equal(await card.locator("form").count(), 0, "not a form");
  assert.deepEqual(await inputsIn(card), [], "no field to change");
  assert.deepEqual(await card.getByRole("button").allTextContents(), [...reads, "Close"], "only Close: nothing to save, remove or add");
  for (const write of writes) await assertAbsent(page, "button", write);
  await checkAccessibility(page, `${name} as a viewer`);
  await screenshot(page, `roles-viewer-${name}`);
  await card.getByRole("button", { name: "Close" }).click();
  await card.waitFor({ state: "detached" });
}

/** What a viewer reads as text is still a form for a marketer: `field` editable, `save` offered. */
async function assertMarketerEdits(suffix: string, heading: string, name: string, field: string, save: string): Promise<void> {
  const marketer = await signedIn("marketer@example.com", "marketer passphrase");
  await open(marketer, suffix, heading);
  await marketer.getByRole("button", { name: `Edit ${name}`, exact: true }).click();
  const editor = marketer.getByRole("form", { name: `Edit ${name}` });
  assert.equal(await editor.getByLabel(field).isEditable(), true);
  await editor.getByRole("button", { name: save }).waitFor();
}

describe("the panel by role", () => {
  test("a viewer sees no enabled write on Lists, Campaigns, Journeys, Settings and Users", async () => {
    const page = await signedIn("viewer@example.com", "viewer passphrase");

    await open(page, "/lists", "Lists");
    await page.getByText("Creating, renaming, deleting and importing into lists needs the marketer role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "New list");
    await assertAbsent(page, "button", "Create list");
    await assertLocked(page, "Rename Newsletter", "marketer");
    await assertLocked(page, "Delete Newsletter", "marketer");
    await assertAbsent(page, "form", "Import into Newsletter from a URL");
    assert.equal(await page.getByTestId(`dropzone-${listId}`).count(), 0);
    await checkAccessibility(page, "lists as a viewer");
    await screenshot(page, "roles-viewer-lists");

    await open(page, "/campaigns", "Campaigns");
    await page.getByText("Scheduling a campaign needs the marketer role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "New campaign");
    await assertAbsent(page, "button", "Schedule campaign");

    // The outbox's copies are listed, but a copy as sent (its unsubscribe links live) opens for a marketer.
    await open(page, `/campaigns/${campaignId}`, "Spring");
    await page.getByText("Opening a copy as sent (its unsubscribe links work) needs the marketer role; you are a viewer in this panel.").waitFor();
    await page.getByRole("cell", { name: "proof@example.com", exact: true }).waitFor();
    await assertAbsent(page, "button", "proof@example.com");

    await open(page, "/journeys", "Journeys");
    await assertAbsent(page, "link", "New journey");
    await open(page, `/journeys/${journeyId}`, "Welcome");
    await assertLocked(page, "Pause journey", "marketer");
    await assertLocked(page, "Stop journey", "marketer");
    await assertAbsent(page, "navigation", "Steps to add");
    await assertAbsent(page, "button", "Save as new version");
    await checkAccessibility(page, "journey as a viewer");
    await screenshot(page, "roles-viewer-journey");

    await open(page, "/journeys/new", "This screen needs the marketer role");

    await open(page, "/settings", "Settings");
    await assertLocked(page, "Turn API mode off", "owner");
    await assertLocked(page, "Save client settings", "owner");
    // The panel's alert subscriptions (owners' addresses and webhooks) are not shown at all.
    assert.equal(await page.getByRole("heading", { name: "Alerts", exact: true }).count(), 0);
    await assertAbsent(page, "form", "Subscribe to alerts");

    await open(page, "/users", "Users and API keys");
    await assertAbsent(page, "form", "New user");
    await assertLocked(page, "Rotate key of shop@example.com", "owner");
    await assertLocked(page, "Disable shop@example.com", "owner");

    // Nothing the viewer saw could change anything.
    assert.equal((await adminCall("GET", `/panels/${panelId}/journeys/${journeyId}`)).status, "running");
    assert.equal((await adminCall("GET", `/panels/${panelId}`)).api_mode, true);
  });

  test("a viewer sees no enabled write on Attributes and activities, Webhooks and a journey's simulation", async () => {
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    const before = {
      attributes: (await adminCall("GET", `/panels/${panelId}/attributes`)).attributes.length,
      activities: (await adminCall("GET", `/panels/${panelId}/activities`)).activities.length,
    };

    await open(page, "/data", "Attributes and activities");
    await page.getByRole("table", { name: "Activities" }).getByRole("cell", { name: "Signed up", exact: true }).waitFor();
    await page.getByText("Adding contact attributes needs the marketer role; you are a viewer in this panel.").waitFor();
    await page.getByText("Defining activities needs the marketer role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "New attribute");
    await assertAbsent(page, "button", "Add attribute");
    await assertAbsent(page, "form", "New activity");
    await assertAbsent(page, "button", "Define activity");
    await checkAccessibility(page, "data as a viewer");
    await screenshot(page, "roles-viewer-data");

    await open(page, "/webhooks", "Webhooks");
    await page.getByRole("link", { name: "Orders", exact: true }).waitFor();
    await page.getByText("Adding a webhook needs the marketer role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "New webhook");
    await assertAbsent(page, "button", "Create webhook");

    await open(page, `/webhooks/${webhookId}`, "Orders");
    await assertLocked(page, "Send test", "marketer");
    await page.getByText("Changing the webhook's configuration needs the marketer role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "Webhook configuration");
    await assertAbsent(page, "button", "Save changes");
    // What the form would show is still read: the configuration as facts.
    const facts = page.getByLabel("Webhook state");
    for (const fact of ["2.0", "as shop", "daily to ops@example.com"]) await facts.getByText(fact, { exact: true }).waitFor();
    await checkAccessibility(page, "webhook as a viewer");
    await screenshot(page, "roles-viewer-webhook");

    await open(page, `/journeys/${journeyId}`, "Welcome");
    await assertLocked(page, "Simulate", "marketer");

    // Nothing the viewer saw could change anything.
    assert.equal((await adminCall("GET", `/panels/${panelId}/attributes`)).attributes.length, before.attributes);
    assert.equal((await adminCall("GET", `/panels/${panelId}/activities`)).activities.length, before.activities);
    assert.equal((await adminCall("GET", `/panels/${panelId}/webhooks/${webhookId}`)).state, "configured");
  });

  test("a viewer reads a journey's steps on the canvas as text: nothing to change, link or remove; a marketer still edits them", async () => {
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    await open(page, `/journeys/${journeyId}`, "Welcome");
    await assertAbsent(page, "button", "Save as new version");
    assert.equal(await page.getByLabel("Journey name").count(), 0, "no journey name to edit");

    const hello = node(page, "hello");
    await hello.click();
    const step = page.getByRole("complementary", { name: "Settings of hello" });
    await step.waitFor();
    assert.equal(await setting(step, "Subject").textContent(), "Hello");
    assert.equal(await setting(step, "Sender email").textContent(), "shop@example.com");
    assert.equal(await setting(step, "Follows").textContent(), "right after the trigger");
    assert.deepEqual(await inputsIn(step), [], "no field to change in the step's settings");
    assert.equal(await step.getByRole("button").count(), 0, "no Remove step nor any other button");
    await checkAccessibility(page, "journey step settings as a viewer");
    await screenshot(page, "roles-viewer-journey-step");

    // The canvas does not take a removal either: Backspace on the selected step leaves it there.
    await hello.focus();
    await page.keyboard.press("Backspace");
    await node(page, "@trigger").click();
    const trigger = page.getByRole("complementary", { name: "Settings of the trigger" });
    assert.equal(await setting(trigger, "Starts when").textContent(), "a contact performs an activity");
    assert.equal(await setting(trigger, "Activity").textContent(), "Signed up");
    assert.equal(await setting(trigger, "Who may enter").textContent(), "none");
    assert.deepEqual(await inputsIn(trigger), [], "no field to change in the trigger's settings");
    assert.equal(await trigger.getByRole("button").count(), 0, "no Add clause");
    assert.equal(await hello.count(), 1, "the step is still on the canvas");

    // A marketer's canvas is unchanged: the same step's settings are fields, and it can be removed.
    const marketer = await signedIn("marketer@example.com", "marketer passphrase");
    await open(marketer, `/journeys/${journeyId}`, "Welcome");
    await node(marketer, "hello").click();
    const editable = marketer.getByRole("complementary", { name: "Settings of hello" });
    assert.equal(await editable.getByLabel("Subject").inputValue(), "Hello");
    assert.equal(await editable.getByLabel("Subject").isEditable(), true);
    await editable.getByRole("button", { name: "Remove step" }).waitFor();
    await marketer.getByLabel("Journey name").waitFor();
  });

  test("an empty list tells a viewer there is none yet, without asking them to add one; a marketer is still told how", async () => {
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    // Each screen's message as the viewer reads it: the heading, and a sentence only where it asks nothing of them.
    const shown: [string, string, string, string][] = [
      ["/", "Demo", "No contacts yet", "No contacts yet Contacts arrive through the API and with files imported into lists."],
      ["/contacts", "Contacts", "No contacts yet", "No contacts yet Contacts arrive through the API (contact add, bulk upload) and with files imported into lists."],
      [`/lists/${listId}`, "Newsletter", "No members", "No members Contacts join it when a file is imported into it, or when the API adds them with its listid."],
      ["/segments", "Segments", "No segments yet", "No segments yet"],
      ["/email-templates", "Email templates", "No email templates yet", "No email templates yet"],
      ["/forms", "Signup forms", "No signup forms yet", "No signup forms yet"],
      ["/topics", "Topics", "No topics yet", "No topics yet"],
      [`/webhooks/${webhookId}`, "Orders", "No attempts yet", "No attempts yet Every attempt to deliver this webhook's events, and every test, is listed here, newest first."],
    ];
    for (const [suffix, heading, title, text] of shown) {
      await open(page, suffix, heading);
      assert.equal(await emptyMessage(page, title), text, suffix);
    }
    await checkAccessibility(page, "an empty list as a viewer");

    const marketer = await signedIn("marketer@example.com", "marketer passphrase");
    // API users are an owner's to create: Home does not send a marketer to Users and API keys for one.
    await open(marketer, "/", "Demo");
    assert.equal(await emptyMessage(marketer, "No contacts yet"), "No contacts yet Create a list and drop a CSV file on it in Lists, or add contacts through the API with an API user's key.");
    const owner = keep(await signInAsOwner(service)).page;
    await open(owner, "/", "Demo");
    assert.match(await emptyMessage(owner, "No contacts yet"), /or create a user in Users and API keys and add contacts through the API\.$/);
    await open(marketer, "/topics", "Topics");
    assert.equal(await emptyMessage(marketer, "No topics yet"), "No topics yet Add one, then name it on a campaign or a journey message.");
    await open(marketer, "/contacts", "Contacts");
    assert.match(await emptyMessage(marketer, "No contacts yet"), /^No contacts yet Add one by hand with “Add contact”/);
  });

  test("a viewer reads a signup form's settings as text, with nothing to change, save or delete; a marketer still edits it", async () => {
    await adminCall("POST", `/panels/${panelId}/forms`, {
      name: "Footer",
      title: "Shop news",
      fields: [{ attribute: "EMAIL", label: "Your email", required: true }],
      lists: [listId],
      consent_text: "Yes, send me news.",
      allowed_origins: ["https://shop.example.com"],
      double_opt_in: false,
    });
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    await open(page, "/forms", "Signup forms");
    await page.getByRole("button", { name: "View Footer", exact: true }).click();
    const settings = page.getByRole("region", { name: "Settings of Footer" });
    await settings.waitFor();
    assert.equal(await fact(settings, "Page heading").textContent(), "Shop news");
    assert.equal(await fact(settings, "Fields").textContent(), "EMAIL labelled “Your email”, required");
    assert.equal(await fact(settings, "Lists offered").textContent(), "Newsletter");
    assert.equal(await fact(settings, "Consent text").textContent(), "Yes, send me news.");
    assert.equal(await fact(settings, "Double opt-in").textContent(), "off");
    assert.equal(await fact(settings, "Thank-you text").textContent(), "the default message");
    assert.equal(await fact(settings, "Allowed origins").textContent(), "https://shop.example.com");
    await assertOnlyRead(page, settings, ["Save form", "Delete Footer"], "signup-form");
    await assertMarketerEdits("/forms", "Signup forms", "Footer", "Page heading", "Save form");
  });

  test("a viewer reads an email template as text, a preview and its HTML source, with nothing to change, save or delete; a marketer still edits it", async () => {
    const bodyHtml = '<h1>Thanks for your order</h1>\n<p style="color:#333">{{NAME|there}}, see <a href="https://shop.example.com/o">your order</a></p>';
    await adminCall("POST", `/panels/${panelId}/email-templates`, { name: "Receipt", subject: "Your order", preheader: "", body_html: bodyHtml });
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    await open(page, "/email-templates", "Email templates");
    await page.getByRole("button", { name: "View Receipt", exact: true }).click();
    const template = page.getByRole("region", { name: "Template Receipt" });
    await template.waitFor();
    assert.equal(await fact(template, "Subject").textContent(), "Your order");
    assert.equal(await fact(template, "Preheader").textContent(), "none");
    await page.frameLocator("iframe[title=\"Preview of the template's HTML body\"]").getByRole("heading", { name: "Thanks for your order" }).waitFor();
    // The source is folded away until asked for, then shown as written (markup as text, not rendered).
    const source = template.getByLabel("HTML source of Receipt");
    assert.equal(await source.isVisible(), false);
    await template.getByText("HTML source", { exact: true }).click();
    assert.equal(await source.textContent(), bodyHtml);
    await assertOnlyRead(page, template, ["Save template", "Delete Receipt"], "email-template", ["Copy the HTML"]);
    await assertMarketerEdits("/email-templates", "Email templates", "Receipt", "Subject", "Save template");
  });

  test("a viewer on Sender domains: Verify and Remove are locked with the role they need, the add and set forms are replaced by the sentence", async () => {
    await adminCall("POST", `/panels/${panelId}/sender-domains`, { domain: "shop.example.com" });
    await adminCall("PUT", `/panels/${panelId}/tracking-domain`, { domain: "t.shop.example.com" });
    const page = await signedIn("viewer@example.com", "viewer passphrase");
    await open(page, "/sender-domains", "Sender domains");
    await page.getByRole("row", { name: "DKIM (RSA) record of shop.example.com" }).waitFor();
    await assertLocked(page, "Verify shop.example.com", "owner");
    await assertLocked(page, "Remove shop.example.com", "owner");
    await assertLocked(page, "Verify t.shop.example.com", "owner");
    await assertLocked(page, "Remove t.shop.example.com", "owner");
    await page.getByText("Adding a sender domain needs the owner role; you are a viewer in this panel.").waitFor();
    await page.getByText("Setting the tracking domain needs the owner role; you are a viewer in this panel.").waitFor();
    await assertAbsent(page, "form", "Add a sender domain");
    await assertAbsent(page, "button", "Add domain");
    await assertAbsent(page, "form", "Set the tracking domain");
    await assertAbsent(page, "button", "Set tracking domain");
    // Nothing asks the viewer to press what they may not.
    assert.equal(await page.getByText(/press “Verify”/).count(), 0);
    await checkAccessibility(page, "sender domains as a viewer");
    await screenshot(page, "roles-viewer-sender-domains");
    assert.equal((await adminCall("GET", `/panels/${panelId}/sender-domains`)).sender_domains.length, 1);
  });

  test("a marketer opening /team gets the needs-owner page, not a form; owner-only key buttons are locked", async () => {
    const page = await signedIn("marketer@example.com", "marketer passphrase");
    assert.equal(await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Team", exact: true }).count(), 0);
    await open(page, "/team", "This screen needs the owner role");
    await page.getByText("Team is open to the panel's owners; you are a marketer in Demo.").waitFor();
    await assertAbsent(page, "form", "Invite a teammate");
    assert.equal(await page.getByText("Loading…").count(), 0);
    await checkAccessibility(page, "needs-owner page");
    await screenshot(page, "roles-marketer-team");

    await open(page, "/audit", "This screen needs the owner role");

    await open(page, "/users", "Users and API keys");
    await assertLocked(page, "Rotate key of shop@example.com", "owner");
    await assertAbsent(page, "button", "Create user");

    // What a marketer may do stays offered.
    await open(page, "/lists", "Lists");
    assert.equal(await page.getByRole("button", { name: "Delete Newsletter", exact: true }).isEnabled(), true);
    await page.getByRole("button", { name: "Create list" }).waitFor();
  });

  test("an owner subscribes to the panel's alerts in Settings: a bad URL is refused under its field, an email is listed and removed", async () => {
    const page = keep(await signInAsOwner(service)).page;
    await open(page, "/settings", "Settings");
    const alerts = page.getByRole("region", { name: "Alerts" });
    await alerts.getByText("Nobody is subscribed.").waitFor();
    const target = alerts.getByLabel("Email address, or your webhook's URL");
    await target.fill("https://hooks.example.com/ops");
    await alerts.getByLabel("Signing secret (optional)").fill("not-a-secret");
    await alerts.getByRole("button", { name: "Subscribe" }).click();
    await alerts.getByText("must start with whsec_ (a Standard Webhooks secret)").waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/alerts/subscriptions`)).subscriptions.length, 0);

    await target.fill("owner-alerts@example.com");
    await alerts.getByRole("checkbox", { name: "a shard passes 80% of its size" }).uncheck();
    await alerts.getByRole("button", { name: "Subscribe" }).click();
    await alerts.getByRole("table", { name: "Alert subscriptions" }).getByRole("rowheader", { name: "owner-alerts@example.com" }).waitFor();
    const [subscription] = (await adminCall("GET", `/panels/${panelId}/alerts/subscriptions`)).subscriptions;
    assert.deepEqual(subscription.kinds, ["webhook_disabled", "sender_domain_unverified", "dead_letters", "cron_late"]);
    await checkAccessibility(page, "settings alerts");
    await screenshot(page, "settings-alerts");

    await alerts.getByRole("button", { name: "Remove owner-alerts@example.com" }).click();
    await alerts.getByText("Nobody is subscribed.").waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/alerts/subscriptions`)).subscriptions.length, 0);
  });

  test("deleting a list asks once, naming what will happen; cancelling changes nothing", async () => {
    const page = keep(await signInAsOwner(service)).page;
    await open(page, "/lists", "Lists");
    const deleteButton = page.getByRole("button", { name: "Delete Newsletter", exact: true });
    await deleteButton.click();
    const dialog = page.getByRole("alertdialog", { name: "Delete this list?" });
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? "", /The list "Newsletter" and its 0 memberships will be deleted; this cannot be undone\. Its contacts stay\./);
    // Focus starts on the safe choice.
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent), "Cancel");
    await checkAccessibility(page, "delete-list confirmation");
    await screenshot(page, "roles-confirm-delete-list");

    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.ok((await adminCall("GET", `/panels/${panelId}/lists`)).lists.some((list: { id: number }) => list.id === listId));
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute("aria-label")), "Delete Newsletter");

    // Escape is a cancel too.
    await deleteButton.click();
    await dialog.waitFor();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    assert.ok((await adminCall("GET", `/panels/${panelId}/lists`)).lists.some((list: { id: number }) => list.id === listId));

    await deleteButton.click();
    await dialog.getByRole("button", { name: "Delete list", exact: true }).click();
    await page.getByRole("listitem", { name: "List Newsletter" }).waitFor({ state: "detached" });
    assert.equal((await adminCall("GET", `/panels/${panelId}/lists`)).lists.some((list: { id: number }) => list.id === listId), false);
  });
});
