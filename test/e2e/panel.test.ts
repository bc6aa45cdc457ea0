// The panel in a real browser, against the service started as `npm start` starts it. Each flow
// asserts what a person sees and saves a screenshot under test-results/e2e/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, confirmInDialog, openBrowser, screenshot } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

async function newPage(): Promise<Page> {
  return keep(await openBrowser(service.origin)).page;
}


async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto(`${service.origin}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** A screen's link in the side menu (Home's tiles link to the same screens under similar names). */
function nav(page: Page, screen: string) {
  return page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: screen, exact: true });
}

async function ownerPage(): Promise<Page> {
  const page = await newPage();
  await signIn(page, service.printed["owner email"]!, service.printed.password!);
  await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
  return page;
}

describe("panel in Chromium", () => {
  test("sign in and out", async () => {
    const page = await newPage();
    await page.goto(`${service.origin}/`);
    await page.getByRole("heading", { name: "Sign in to the panel" }).waitFor();
    await checkAccessibility(page, "sign-in");

    await signIn(page, service.printed["owner email"]!, "not the password");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.equal(await alert.textContent(), "The email or the password is wrong");
    await screenshot(page, "sign-in-refused");

    await signIn(page, service.printed["owner email"]!, service.printed.password!);
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.match(await page.locator("header").textContent() ?? "", /owner/);
    await checkAccessibility(page, "home");
    await screenshot(page, "signed-in-home");

    // A reload keeps the session (the cookie); signing out ends it.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the panel" }).waitFor();
    await page.reload();
    await page.getByRole("heading", { name: "Sign in to the panel" }).waitFor();
    await screenshot(page, "signed-out");
  });

  test("forget a password, read the reset mail MAILER sent, set a new one once, and sign in with it", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "forgetful@example.com", role: "viewer", password: "the old passphrase" });
    const page = await newPage();
    await page.goto(`${service.origin}/`);
    await page.getByRole("button", { name: "Forgot your password?" }).click();
    await page.getByRole("heading", { name: "Set a new password" }).waitFor();
    await page.getByLabel("Email").fill("forgetful@example.com");
    await page.getByRole("button", { name: "Send the link" }).click();
    await page.getByText(/If an operator account has this address, a link to set a new password is on its way/).waitFor();
    await checkAccessibility(page, "password-reset-asked");
    await screenshot(page, "password-reset-asked");

    // Locally, MAILER is wrangler's send_email stand-in: it logs each mail's headers and keeps its text in a file.
    let link: string | undefined;
    for (const deadline = Date.now() + 30_000; !link; await new Promise((r) => setTimeout(r, 500))) {
      const log = readFileSync(join(service.stateDir, "dev.log"), "utf8");
      const mail = /To: forgetful@example\.com\s+Subject: Set a new password for the panel[\s\S]*?Text: (\S+\.txt)/.exec(log);
      if (mail) link = /https?:\/\/\S+\/reset-password#token=[\w-]+/.exec(readFileSync(mail[1]!, "utf8"))?.[0];
      if (!link && Date.now() > deadline) throw new Error("no reset mail in the MAILER log");
    }
    assert.ok(link!.startsWith(`${service.origin}/reset-password#token=`));

    await page.goto(link!);
    await page.getByRole("heading", { name: "Choose a new password" }).waitFor();
    await page.getByLabel("New password", { exact: true }).fill("too short");
    await page.getByLabel("Repeat the new password").fill("too short");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("must be at least 10 characters", { exact: true }).waitFor();
    await page.getByLabel("New password", { exact: true }).fill("a fresh passphrase");
    await page.getByLabel("Repeat the new password").fill("a fresh passphrase!");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("the two passwords differ", { exact: true }).waitFor();
    await checkAccessibility(page, "password-reset-form");
    await page.getByLabel("Repeat the new password").fill("a fresh passphrase");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText(/Your password is set/).waitFor();
    await screenshot(page, "password-reset-done");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Sign in to the panel" }).waitFor();
    await signIn(page, "forgetful@example.com", "the old passphrase");
    await page.getByText("The email or the password is wrong").waitFor();
    await signIn(page, "forgetful@example.com", "a fresh passphrase");
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();

    // The link worked once.
    const again = await newPage();
    await again.goto(link!);
    await again.getByLabel("New password", { exact: true }).fill("another passphrase");
    await again.getByLabel("Repeat the new password").fill("another passphrase");
    await again.getByRole("button", { name: "Set the new password" }).click();
    await again.getByText("This link has expired or was already used; ask for a new one from the sign-in page.").waitFor();
    await screenshot(again, "password-reset-link-spent");
  });

  test("a viewer is offered no write: the button is disabled with the role it needs, and the server refuses it too", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "viewer@example.com", role: "viewer", password: "viewer passphrase" });
    const page = await newPage();
    await signIn(page, "viewer@example.com", "viewer passphrase");
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    await nav(page, "Settings").click();
    await page.getByRole("heading", { level: 1, name: "Settings" }).waitFor();
    await checkAccessibility(page, "settings");
    const button = page.getByRole("button", { name: "Turn API mode off" });
    assert.equal(await button.isDisabled(), true);
    assert.equal(await button.getAttribute("title"), "This needs the owner role");
    await page.getByText("Changing the panel's settings needs the owner role; you are a viewer in this panel.").waitFor();
    await screenshot(page, "viewer-refused");
    // The server refuses the same call on its own.
    const refused = await page.evaluate(async (id) => {
      const csrf = ((await (await fetch("/auth/v1/session")).json()) as { csrf_token: string }).csrf_token;
      const answer = await fetch(`/admin/v1/panels/${id}`, { method: "PATCH", headers: { "content-type": "application/json", "x-csrf-token": csrf }, body: JSON.stringify({ api_mode: false }) });
      return { status: answer.status, body: await answer.json() };
    }, panelId);
    assert.equal(refused.status, 403);
    assert.match(JSON.stringify(refused.body), /This needs the owner role in the panel; you are viewer/);
    // Nothing changed.
    assert.equal((await adminCall("GET", `/panels/${panelId}`)).api_mode, true);
  });

  test("an owner changes a teammate's role and removes them; the teammate's session follows", async () => {
    const panelId = service.printed["demo panel"]!;
    // The panel invites teammates (test/e2e/team-sign-in.test.ts); the admin API's create-with-password sets one up here.
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "teammate@example.com", role: "viewer", password: "teammate passphrase" });
    const page = await ownerPage();
    await nav(page, "Team").click();
    await page.getByRole("heading", { level: 1, name: "Team" }).waitFor();
    const role = page.getByLabel("Role of teammate@example.com");
    await role.waitFor();
    await checkAccessibility(page, "team");
    await screenshot(page, "team-added");

    const teammate = await newPage();
    await signIn(teammate, "teammate@example.com", "teammate passphrase");
    await teammate.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.match((await teammate.locator("header").textContent()) ?? "", /viewer/);
    assert.equal(await nav(teammate, "Team").count(), 0, "the Team screen is for owners");

    await role.selectOption("marketer");
    await confirmInDialog(page, "Make marketer");
    await page.waitForFunction(() => (globalThis as any).document.querySelector('[aria-label="Role of teammate@example.com"]')?.value === "marketer");
    const listed = await adminCall("GET", `/panels/${panelId}/operators`);
    assert.equal(listed.operators.find((o: { email: string }) => o.email === "teammate@example.com").role, "marketer");
    await teammate.reload();
    await teammate.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.match((await teammate.locator("header").textContent()) ?? "", /marketer/);

    await page.getByRole("button", { name: "Remove teammate@example.com from the panel" }).click();
    await confirmInDialog(page, "Remove operator");
    await role.waitFor({ state: "detached" });
    await teammate.reload();
    await teammate.getByRole("heading", { name: "No panel yet" }).waitFor();
  });

  test("add a contact attribute and define an activity with typed parameters, then post it through the API", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await ownerPage();
    await nav(page, "Attributes and activities").click();
    await page.getByRole("heading", { level: 1, name: "Attributes and activities" }).waitFor();
    const attributes = page.getByRole("form", { name: "New attribute" });
    await attributes.getByLabel("Attribute name").fill("9lives");
    await attributes.getByRole("button", { name: "Add attribute" }).click();
    await page.getByText("must be a letter, then up to 63 letters, digits or underscores").first().waitFor();
    await attributes.getByLabel("Attribute name").fill("loyalty_tier");
    await attributes.getByLabel("Attribute type").selectOption("integer");
    await attributes.getByRole("button", { name: "Add attribute" }).click();
    await page.getByRole("cell", { name: "LOYALTY_TIER" }).waitFor();

    const activities = page.getByRole("form", { name: "New activity" });
    await activities.getByLabel("Activity name").fill("purchase");
    await activities.getByLabel("Parameter 1 name").fill("prid");
    await activities.getByLabel("Parameter 1 type").selectOption("integer");
    await activities.getByRole("button", { name: "Add a parameter" }).click();
    await activities.getByLabel("Parameter 2 name").fill("price");
    await activities.getByLabel("Parameter 2 type").selectOption("float");
    await activities.getByRole("button", { name: "Define activity" }).click();
    await page.getByRole("cell", { name: "prid (integer), price (float)" }).waitFor();
    await checkAccessibility(page, "attributes-and-activities");
    await screenshot(page, "attributes-and-activities");

    const schema = await adminCall("GET", `/panels/${panelId}/attributes`);
    assert.deepEqual(schema.attributes.find((a: { name: string }) => a.name === "LOYALTY_TIER"), { name: "LOYALTY_TIER", type: "integer" });
    const upload = await fetch(`${service.origin}/v1/activity/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.printed["API key"]}`, "content-type": "application/json" },
      body: JSON.stringify([{ activity_name: "purchase", identity: "buyer@example.com", activity_params: { prid: 7, price: 9.5 } }]),
    });
    assert.equal(((await upload.json()) as { recorded: number }).recorded, 1);
  });

  test("enable API mode, create a user, copy the key and use it in an apiv2 call", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("PATCH", `/panels/${panelId}`, { api_mode: false });
    const page = await ownerPage();
    await nav(page, "Settings").click();
    await page.getByRole("button", { name: "Turn API mode on" }).click();
    await page.getByText("API mode is on.", { exact: true }).waitFor();
    await screenshot(page, "api-mode-on");

    await nav(page, "Users and API keys").click();
    await page.getByRole("heading", { level: 1, name: "Users and API keys" }).waitFor();
    await page.getByLabel("User email").fill("integration@example.com");
    await page.getByRole("button", { name: "Create user" }).click();
    await page.getByText("Copy it now: it is not shown again.").waitFor();
    await page.getByRole("button", { name: "Copy API key" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    await checkAccessibility(page, "users");
    await screenshot(page, "user-created-key-shown");
    const apiKey = await page.evaluate(() => (globalThis as any).navigator.clipboard.readText());
    assert.match(apiKey, /^mk_/);

    const query = new URLSearchParams({ type: "contact", activity: "add", apikey: apiKey, data: JSON.stringify({ EMAIL: "copied-key@example.com" }) });
    const answer = (await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string };
    assert.equal(answer.result, "Success");
  });

  test("an owner reads the audit log: who rotated a key and changed API mode, filtered by action", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await ownerPage();
    await nav(page, "Users and API keys").click();
    await page.getByLabel("User email").fill("audited@example.com");
    await page.getByRole("button", { name: "Create user" }).click();
    await page.getByText("Copy it now: it is not shown again.").waitFor();
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByRole("button", { name: "Rotate key of audited@example.com" }).click();
    await confirmInDialog(page, "Rotate key");
    await page.getByText("Copy it now: it is not shown again.").waitFor();
    await nav(page, "Settings").click();
    await page.getByRole("button", { name: "Turn API mode off" }).click();
    await page.getByText("API mode is off.", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Turn API mode on" }).click();
    await page.getByText("API mode is on.", { exact: true }).waitFor();

    await nav(page, "Audit log").click();
    await page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    const owner = service.printed["owner email"]!;
    const rows = page.getByRole("table", { name: "Audit log, newest first" }).getByRole("row");
    await rows.nth(1).waitFor();
    const cells = async (n: number) => (await rows.nth(n).getByRole("cell").allTextContents()).slice(1);
    assert.deepEqual((await cells(1)).slice(0, 3), [owner, "API mode changed", panelId]);
    assert.match((await cells(1))[3]!, /api mode: true/);
    assert.match((await cells(2))[3]!, /api mode: false/);
    assert.deepEqual((await cells(3)).slice(0, 2), [owner, "API key rotated"]);
    assert.match((await cells(3))[3]!, /audited@example\.com/);
    assert.deepEqual((await cells(4)).slice(0, 2), [owner, "User created"]);
    await checkAccessibility(page, "audit-log");
    await screenshot(page, "audit-log");
    await page.getByLabel("Show").selectOption("user.key_rotated");
    await page.getByRole("cell", { name: "API mode changed" }).first().waitFor({ state: "detached" });
    assert.deepEqual((await cells(1)).slice(0, 2), [owner, "API key rotated"]);

    // A marketer has no Audit log in the menu, and the route refuses them.
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "marketer-audit@example.com", role: "marketer", password: "marketer passphrase" });
    const marketer = await newPage();
    await signIn(marketer, "marketer-audit@example.com", "marketer passphrase");
    await marketer.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.equal(await nav(marketer, "Audit log").count(), 0);
  });

  test("let clients send unknown attributes and call from a shop's origin, and see the API follow", async () => {
    const panelId = service.printed["demo panel"]!;
    const apiKey = service.printed["API key"]!;
    const page = await ownerPage();
    await nav(page, "Settings").click();
    const form = page.getByRole("form", { name: "Client settings" });
    await form.getByLabel("Contact attributes the panel does not have").selectOption("ignore");
    await form.getByLabel("Browser origins allowed to call the API (CORS)").fill("not an origin");
    await form.getByRole("button", { name: "Save client settings" }).click();
    await page.getByText(/must be an origin/).first().waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}`)).unknown_attributes, "reject", "a refused save changes nothing");

    await form.getByLabel("Browser origins allowed to call the API (CORS)").fill("https://shop.example.com\n");
    await form.getByRole("button", { name: "Save client settings" }).click();
    await page.getByText("Client settings saved.", { exact: true }).waitFor();
    await checkAccessibility(page, "settings");
    await screenshot(page, "client-settings-saved");
    const saved = await adminCall("GET", `/panels/${panelId}`);
    assert.equal(saved.unknown_attributes, "ignore");
    assert.deepEqual(saved.cors_origins, ["https://shop.example.com"]);

    const query = new URLSearchParams({ type: "contact", activity: "add", apikey: apiKey, data: JSON.stringify({ EMAIL: "loose@example.com", SHOE_SIZE: 42 }) });
    const added = (await (await fetch(`${service.origin}/apiv2?${query}`, { headers: { origin: "https://shop.example.com" } })).json()) as any;
    assert.equal(added.result, "Success");
    assert.deepEqual(added.ignored, ["SHOE_SIZE"]);
    const preflight = await fetch(`${service.origin}/apiv2`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example.com", "access-control-request-method": "POST" },
    });
    assert.equal(preflight.headers.get("access-control-allow-origin"), "https://shop.example.com");
    await adminCall("PATCH", `/panels/${panelId}`, { unknown_attributes: "reject", cors_origins: [] });
  });

  test("drop a CSV on a list and watch the progress bar reach done", async () => {
    const page = await ownerPage();
    await nav(page, "Lists").click();
    await page.getByRole("heading", { level: 1, name: "Lists" }).waitFor();
    await page.getByLabel("List name").fill("Newsletter");
    await page.getByRole("button", { name: "Create list" }).click();
    const list = page.getByRole("listitem", { name: "List Newsletter" });
    await list.waitFor();
    await checkAccessibility(page, "lists");

    const rows = ["EMAIL,NAME", ...Array.from({ length: 200 }, (_, i) => `dropped${i}@example.com,Reader ${i}`), "not-an-email,Broken"];
    // A drop as the browser delivers it: a DataTransfer holding a File.
    const transfer = await page.evaluateHandle((csv) => {
      const scope = globalThis as any;
      const data = new scope.DataTransfer();
      data.items.add(new scope.File([csv], "readers.csv", { type: "text/csv" }));
      return data;
    }, rows.join("\n") + "\n");
    await list.getByTestId(/^dropzone-/).dispatchEvent("drop", { dataTransfer: transfer });
    // Headers naming attributes start mapped to them: the import goes as it is.
    await list.getByRole("button", { name: "Import readers.csv" }).click();
    await list.getByText("Import done").waitFor({ timeout: 60_000 });
    assert.equal(await list.locator("progress").getAttribute("value"), "100");
    await list.getByText("201 rows done: 200 created, 0 updated, 1 failed.").waitFor();
    await list.getByRole("link", { name: "Download the error report" }).waitFor();
    await screenshot(page, "list-import-done");
    const [download] = await Promise.all([page.waitForEvent("download"), list.getByRole("link", { name: "Download the error report" }).click()]);
    const report = await (await import("node:fs/promises")).readFile((await download.path())!, "utf8");
    assert.match(report, /not-an-email/);
  });

  test("import a list from a URL with live progress, page through its members and empty it", async () => {
    const csv = ["EMAIL,NAME", ...Array.from({ length: 30 }, (_, i) => `fetched${String(i).padStart(2, "0")}@example.com,Fetched ${i}`), "nope,Broken"].join("\n") + "\n";
    const files: Server = createServer((_request, response) => void response.writeHead(200, { "content-type": "text/csv" }).end(csv));
    await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
    const port = (files.address() as { port: number }).port;
    try {
      const page = await ownerPage();
      await nav(page, "Lists").click();
      await page.getByRole("heading", { level: 1, name: "Lists" }).waitFor();
      await page.getByLabel("List name").fill("Fetched readers");
      await page.getByRole("button", { name: "Create list" }).click();
      const list = page.getByRole("listitem", { name: "List Fetched readers" });
      await list.waitFor();
      const form = list.getByRole("form", { name: "Import into Fetched readers from a URL" });
      await form.getByLabel("CSV file URL").fill("ftp://files.example.com/readers.csv");
      await form.getByRole("button", { name: "Import from URL" }).click();
      await form.getByText("must use http or https, not ftp", { exact: true }).waitFor();
      await form.getByLabel("CSV file URL").fill(`http://127.0.0.1:${port}/readers.csv`);
      await form.getByRole("button", { name: "Import from URL" }).click();
      await list.getByText("Import done").waitFor({ timeout: 60_000 });
      assert.equal(await list.locator("progress").getAttribute("value"), "100");
      await list.getByText("31 rows done: 30 created, 0 updated, 1 failed.").waitFor();
      await list.getByRole("heading", { name: /Fetched readers \(30 members/ }).waitFor();
      await screenshot(page, "list-url-import-done");

      await list.getByRole("link", { name: "Members of Fetched readers" }).click();
      await page.getByRole("heading", { level: 1, name: "List Fetched readers" }).waitFor();
      const members = page.getByRole("table", { name: "Members of Fetched readers" });
      await members.getByRole("link", { name: "fetched00@example.com" }).waitFor();
      assert.equal(await members.getByRole("row").count(), 26);
      await checkAccessibility(page, "list-members");
      const pages = page.getByRole("navigation", { name: "Member pages" });
      await pages.getByRole("button", { name: "Next" }).click();
      await members.getByRole("link", { name: "fetched25@example.com" }).waitFor();
      assert.equal(await members.getByRole("row").count(), 6);
      await screenshot(page, "list-members-page-2");
      await pages.getByRole("button", { name: "Previous" }).click();
      await members.getByRole("link", { name: "fetched00@example.com" }).waitFor();

      await page.getByRole("button", { name: "Empty the list" }).click();
      await confirmInDialog(page, "Remove every member");
      await page.getByText("30 members removed; the contacts stay.").waitFor();
      await page.getByText("No members").waitFor();
      await screenshot(page, "list-emptied");
    } finally {
      await new Promise((resolve) => files.close(resolve));
    }
  });

  test("open a contact and see an activity recorded through the API on its timeline", async () => {
    const panelId = service.printed["demo panel"]!;
    const activity = await adminCall("POST", `/panels/${panelId}/activities`, { name: "Viewed product", params: { product: "string" } });
    const recorded = await fetch(`${service.origin}/v1/activity/singleactivity/${service.printed["client id"]}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ activityid: activity.activityid, identity: "timeline@example.com", activity_params: { "s^product": "Kettle" } }),
    });
    assert.equal(((await recorded.json()) as { result: string }).result, "Success");
    // Older events than one page holds, to scroll through.
    for (let i = 1; i <= 24; i++) {
      const older = await fetch(`${service.origin}/v1/activity/singleactivity/${service.printed["client id"]}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ activityid: activity.activityid, identity: "timeline@example.com", activity_params: { "s^product": `Item ${i}` }, timestamp: new Date(Date.now() - i * 60_000).toISOString() }),
      });
      assert.equal(older.status, 200);
    }

    const page = await ownerPage();
    await nav(page, "Contacts").click();
    await page.getByRole("heading", { level: 1, name: "Contacts" }).waitFor();
    await checkAccessibility(page, "contacts");
    // The pipeline makes the event part of the contact's history within a second or two.
    const deadline = Date.now() + 30_000;
    for (;;) {
      await page.getByLabel("Value").fill("timeline@");
      await page.getByRole("button", { name: "Search" }).click();
      const link = page.getByRole("link", { name: "timeline@example.com" });
      if (await link.isVisible().catch(() => false)) break;
      if (Date.now() > deadline) throw new Error("the contact never appeared");
      await page.waitForTimeout(1000);
    }
    await page.getByRole("link", { name: "timeline@example.com" }).click();
    await page.getByRole("heading", { level: 1, name: "timeline@example.com" }).waitFor();
    const timeline = page.getByRole("list", { name: "Events, newest first" });
    await timeline.getByText("Viewed product").first().waitFor();
    assert.match((await timeline.textContent()) ?? "", /Kettle/);
    await checkAccessibility(page, "contact");
    await screenshot(page, "contact-timeline");
    // Scrolling to the end of the timeline brings the older events, with no click.
    for (const until = Date.now() + 30_000; ; await page.waitForTimeout(500)) {
      const all = await adminCall("GET", `/panels/${panelId}/contacts/timeline%40example.com/events?limit=100`);
      if (all.events.length >= 25) break;
      if (Date.now() > until) throw new Error(`only ${all.events.length} events stored`);
    }
    await page.reload();
    await timeline.getByText("Kettle").first().waitFor();
    assert.equal(await timeline.getByRole("listitem").count(), 20);
    await page.getByRole("button", { name: "Show older events" }).scrollIntoViewIfNeeded();
    await timeline.getByText("Item 24").waitFor();
    assert.equal(await timeline.getByRole("listitem").count(), 25);
    assert.equal(await page.getByRole("button", { name: "Show older events" }).count(), 0);

    // The owner downloads what is held about the contact, then erases it, typing its key to confirm.
    const download = page.getByRole("link", { name: "Download everything held about this contact (JSON)" });
    const held = await fetch(`${service.origin}${await download.getAttribute("href")}`, { headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } });
    assert.equal(held.status, 200);
    assert.equal(((await held.json()) as { events: unknown[] }).events.length, 25);
    const erase = page.getByRole("button", { name: "Erase contact" });
    assert.equal(await erase.isDisabled(), true);
    await page.getByLabel("Type timeline@example.com to confirm").fill("timeline@example.com");
    await erase.click();
    await page.getByRole("heading", { level: 1, name: "Contact erased" }).waitFor();
    await checkAccessibility(page, "contact-erased");
    await screenshot(page, "contact-erased");
    const gone = await fetch(`${service.origin}/admin/v1/panels/${panelId}/contacts/timeline%40example.com`, { headers: { authorization: `Bearer ${service.adminToken}` } });
    assert.equal(gone.status, 404);
  });
  test("find a contact by an attribute, read its messages and journeys, and edit its attributes with a refusal per field", async () => {
    const panelId = service.printed["demo panel"]!;
    const activity = await adminCall("POST", `/panels/${panelId}/activities`, { name: "Read article", params: {} });
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Reader welcome",
      trigger: { type: "activity", activity: "Read article" },
      steps: [{ id: "hello", type: "email", subject: "Thanks for reading", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    await adminCall("POST", `/panels/${panelId}/journeys/${journey.id}/status`, { status: "running" });
    for (const data of [{ EMAIL: "reader@example.com", NAME: "Rea", CITY: "Lyon", AGE: 33 }, { EMAIL: "nicer@example.com", CITY: "Nice" }]) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify(data) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    await fetch(`${service.origin}/v1/activity/singleactivity/${service.printed["client id"]}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ activityid: activity.activityid, identity: "reader@example.com" }),
    });
    // The journey's email lands in the outbox; its open pixel is fetched as a mail client would.
    let sent: any;
    for (const deadline = Date.now() + 30_000; !sent; await new Promise((r) => setTimeout(r, 500))) {
      sent = (await adminCall("GET", `/panels/${panelId}/outbox?channel=email`)).messages.find((m: any) => m.to === "reader@example.com");
      if (Date.now() > deadline) throw new Error("the journey's email was never sent");
    }
    const raw: string = (await adminCall("GET", `/panels/${panelId}/outbox/${sent.id}`)).raw;
    const html = Buffer.from(/Content-Transfer-Encoding: base64\r\n\r\n([\s\S]*?)\r\n--/.exec(raw)![1]!.replace(/\r\n/g, ""), "base64").toString("utf8");
    assert.equal((await fetch(`${service.origin}${/\/t\/o\/[^"]+/.exec(html)![0]}`)).status, 200);

    const page = await ownerPage();
    await nav(page, "Contacts").click();
    await page.getByRole("heading", { level: 1, name: "Contacts" }).waitFor();
    await page.getByLabel("Search by").selectOption("CITY");
    await page.getByLabel("Value").fill("ly");
    await page.getByRole("button", { name: "Search" }).click();
    const found = page.getByRole("row", { name: /reader@example\.com/ });
    await found.waitFor();
    assert.deepEqual(await found.getByRole("cell").allTextContents().then((cells) => [cells[0], cells[2]]), ["reader@example.com", "Lyon"]);
    assert.equal(await page.getByRole("link", { name: "nicer@example.com" }).count(), 0);
    await checkAccessibility(page, "contacts-by-attribute");
    await screenshot(page, "contacts-by-attribute");

    await found.getByRole("link", { name: "reader@example.com" }).click();
    await page.getByRole("heading", { level: 1, name: "reader@example.com" }).waitFor();
    // The open reaches the message's counters through the events pipeline.
    const message = page.getByRole("row", { name: /Reader welcome/ }).first();
    for (const deadline = Date.now() + 30_000; ; ) {
      await message.waitFor();
      const cells = await message.getByRole("cell").allTextContents();
      if (cells[5] === "1") {
        assert.deepEqual([cells[2], cells[3], cells[4]], ["email", "Thanks for reading", "sent"]);
        break;
      }
      if (Date.now() > deadline) throw new Error(`the open never showed: ${cells.join(" | ")}`);
      await page.waitForTimeout(1000);
      await page.reload();
    }
    // The journeys it entered, each with the steps it ran and what each came to.
    const path = page.getByRole("region", { name: "Journeys" }).getByRole("table", { name: /^Reader welcome: entered / });
    const step = path.getByRole("row", { name: /hello/ });
    await step.waitFor();
    const [stepType, , stepResult] = await step.getByRole("cell").allTextContents();
    assert.deepEqual([stepType, stepResult], ["email", "sent"]);
    assert.match((await page.getByTestId("suppression").textContent()) ?? "", /reader@example\.com is not suppressed/);

    await page.getByRole("button", { name: "Edit attributes" }).click();
    const form = page.getByRole("form", { name: "Edit attributes" });
    await form.getByLabel("AGE").fill("thirty-four");
    await form.getByLabel("CITY").fill("");
    await form.getByRole("button", { name: "Save attributes" }).click();
    await form.getByText('must be an integer, not "thirty-four"', { exact: true }).waitFor();
    await checkAccessibility(page, "contact-edit-refused");
    await screenshot(page, "contact-edit-refused");
    assert.equal((await adminCall("GET", `/panels/${panelId}/contacts/reader@example.com`)).attributes.CITY, "Lyon");

    await form.getByLabel("AGE").fill("34");
    await form.getByRole("button", { name: "Save attributes" }).click();
    await page.getByText("Attributes saved.").waitFor();
    const facts = page.getByRole("definition");
    await page.getByLabel("Attributes").getByText("34", { exact: true }).waitFor();
    assert.doesNotMatch((await facts.allTextContents()).join(" "), /Lyon/);
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/contacts/reader@example.com`)).attributes, { EMAIL: "reader@example.com", NAME: "Rea", AGE: 34 });
    await checkAccessibility(page, "contact-edited");
    await screenshot(page, "contact-edited");

    // Its channels, as its preference page shows them; a marketer or owner switches one.
    const channels = page.getByLabel("Channels");
    await channels.getByText("no address or number").waitFor();
    await page.getByRole("button", { name: "Turn push notifications off" }).click();
    await page.getByRole("button", { name: "Turn push notifications on" }).waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/contacts/reader%40example.com/preferences`)).preferences.push, "unsubscribed");
    await checkAccessibility(page, "contact-channels");
    await screenshot(page, "contact-channels");
  });
  test("configure a webhook against a loopback receiver, test it, inject events and see deliveries", async () => {
    const panelId = service.printed["demo panel"]!;
    // The receiver stands in for a customer's endpoint: it keeps every batch and answers 200.
    const batches: string[] = [];
    const receiver: Server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      request.on("end", () => {
        batches.push(body);
        response.writeHead(200, { "content-type": "text/plain" }).end("received");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const port = (receiver.address() as { port: number }).port;
    try {
      const page = await ownerPage();
      await nav(page, "Webhooks").click();
      await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
      await page.getByText("No webhooks yet").waitFor();
      await checkAccessibility(page, "webhooks");

      // A bad signing secret is refused with the field named, and nothing is created.
      await page.getByLabel("Label").fill("Order events");
      await page.getByLabel("URL").fill(`http://127.0.0.1:${port}/hooks`);
      await page.getByLabel("Alert recipients").fill("ops@example.com");
      await page.getByLabel("Signing secret").fill("not-a-secret");
      await page.getByRole("button", { name: "Create webhook" }).click();
      await page.getByText("must start with whsec_ (a Standard Webhooks secret)", { exact: true }).waitFor();
      assert.equal((await adminCall("GET", `/panels/${panelId}/webhooks`)).webhooks.length, 0);

      await page.getByLabel("Signing secret").fill(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
      await page.getByRole("button", { name: "Create webhook" }).click();
      await page.getByRole("heading", { level: 1, name: "Order events" }).waitFor();
      const facts = page.getByRole("definition").first();
      assert.equal(await facts.textContent(), "configured");

      await page.getByRole("button", { name: "Send test" }).click();
      const result = page.getByRole("status", { name: "Test result" });
      await result.waitFor();
      assert.match((await result.textContent()) ?? "", /The endpoint answered HTTP 200 · the webhook is now operational/);
      await page.getByRole("definition").first().getByText("operational").waitFor();
      assert.equal(batches.length, 1);
      await checkAccessibility(page, "webhook");

      const hook = (await adminCall("GET", `/panels/${panelId}/webhooks`)).webhooks[0];
      const events = Array.from({ length: 3 }, (_, n) => ({
        channel: "email",
        event: "open",
        msgid: `panel-${n}`,
        journey_name: "Welcome",
        att_params: { EMAIL: `reader${n}@example.com` },
      }));
      assert.deepEqual(await adminCall("POST", `/panels/${panelId}/webhooks/${hook.id}/events`, { events }), { accepted: 3, duplicates: 0 });

      // Batches leave after the batching window; the log shows each attempt once it is made.
      const log = page.getByRole("table", { name: "Delivery and test attempts, newest first" });
      const deadline = Date.now() + 60_000;
      for (;;) {
        await page.getByRole("button", { name: "Refresh the log" }).click();
        if (await log.getByRole("cell", { name: "delivered", exact: true }).first().isVisible().catch(() => false)) break;
        if (Date.now() > deadline) throw new Error("no delivery reached the log");
        await page.waitForTimeout(1000);
      }
      // Cells: time, kind, batch, events, status, latency, outcome, next retry.
      const rows: string[][] = [];
      for (const row of await log.getByRole("row").all()) rows.push(await row.getByRole("cell").allTextContents());
      const delivery = rows.find((cells) => cells[1] === "delivery");
      assert.deepEqual([delivery?.[3], delivery?.[4], delivery?.[6], delivery?.[7]], ["3", "200", "delivered", "—"]);
      assert.match(delivery?.[5] ?? "", /^\d+ ms$/);
      const tested = rows.find((cells) => cells[1] === "test");
      assert.deepEqual([tested?.[4], tested?.[6]], ["200", "passed"]);
      assert.ok(batches.length >= 2);
      await screenshot(page, "webhook-deliveries");

      // Replays (owners): a dry run counts the range's events first; the replay starts only on confirming that count.
      // An activity 12 hours back: inside the form's default range (the last day) whatever the panel's zone.
      const replayed = await adminCall("POST", `/panels/${panelId}/activities`, { name: "Replayed visit", params: { page: "string" } });
      const posted = await fetch(`${service.origin}/v1/activity/singleactivity/${service.printed["client id"]}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ activityid: replayed.activityid, identity: "replay@example.com", activity_params: { "s^page": "/pricing" }, timestamp: new Date(Date.now() - 12 * 3_600_000).toISOString() }),
      });
      assert.equal(posted.status, 200);
      const replays = page.getByRole("form", { name: "Replay events" });
      const counted = replays.getByRole("status");
      let replayable: string | undefined;
      // The pipeline makes the event a row within a second or two.
      for (const until = Date.now() + 30_000; ; ) {
        await replays.getByRole("button", { name: "Count events" }).click();
        await counted.waitFor();
        replayable = /^(\d+) events? in \d+ batch(?:es)?$/.exec((await counted.textContent()) ?? "")?.[1];
        assert.ok(replayable !== undefined, `dry run answer: ${await counted.textContent()}`);
        if (Number(replayable) > 0) break;
        if (Date.now() > until) throw new Error("the recorded activity never counted");
        await page.waitForTimeout(1000);
      }
      // The dry run started nothing.
      assert.equal((await adminCall("GET", `/panels/${panelId}/webhooks/${hook.id}/replays`)).replays.length, 0);
      await replays.getByRole("button", { name: `Replay ${replayable} event${replayable === "1" ? "" : "s"}` }).click();
      const listed = page.getByRole("table", { name: "Replays of this webhook, newest first" });
      // Steps past the first run on the queue; the list shows them on refresh.
      const until = Date.now() + 60_000;
      while (!(await listed.getByRole("cell", { name: `${replayable} of ${replayable}` }).isVisible().catch(() => false))) {
        if (Date.now() > until) throw new Error("the replay did not hand everything over");
        await page.waitForTimeout(1000);
        await page.getByRole("button", { name: "Refresh replays" }).click();
      }
      const [started] = (await adminCall("GET", `/panels/${panelId}/webhooks/${hook.id}/replays`)).replays;
      assert.equal(started.events_sent, Number(replayable));
      await checkAccessibility(page, "webhook-replays");
      await screenshot(page, "webhook-replays");

      // Editing keeps the secret unless a new one is typed.
      await page.getByLabel("Label").fill("Order events (EU)");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("heading", { level: 1, name: "Order events (EU)" }).waitFor();
      const edited = await adminCall("GET", `/panels/${panelId}/webhooks/${hook.id}`);
      assert.deepEqual([edited.label, edited.signing_secret_set, edited.alert], ["Order events (EU)", true, { emails: ["ops@example.com"], frequency: "immediate" }]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
  test("run, pause, resume and stop a journey and read its definition", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "Started trial", params: { plan: "string" } });
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Trial welcome",
      trigger: { type: "activity", activity: "Started trial" },
      steps: [{ id: "welcome", type: "email", subject: "Welcome", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    assert.equal(journey.status, "draft");

    const page = await ownerPage();
    await nav(page, "Journeys").click();
    await page.getByRole("heading", { level: 1, name: "Journeys" }).waitFor();
    const row = page.getByRole("row", { name: /Trial welcome/ });
    await row.waitFor();
    assert.deepEqual(await row.getByRole("cell").allTextContents().then((cells) => cells.slice(0, 5)), ["Trial welcome", "draft", "1", "activity “Started trial”", "0"]);
    await checkAccessibility(page, "journeys");
    await row.getByRole("link", { name: "Trial welcome" }).click();
    await page.getByRole("heading", { level: 1, name: "Trial welcome" }).waitFor();
    const status = page.getByRole("definition").first();
    const actions = page.getByRole("group", { name: "Status actions" });
    assert.match((await page.getByLabel("Journey definition").textContent()) ?? "", /"subject": "Welcome"/);

    // A draft starts from its canvas, which saves what it shows first; the rest are status actions.
    for (const [button, next] of [["Start journey", "running"], ["Pause journey", "paused"], ["Resume journey", "running"], ["Stop journey", "stopped"]] as const) {
      await (button === "Start journey" ? page : actions).getByRole("button", { name: button }).click();
      if (button === "Stop journey") await confirmInDialog(page, "Stop journey");
      await status.getByText(next, { exact: true }).waitFor();
      assert.equal((await adminCall("GET", `/panels/${panelId}/journeys/${journey.id}`)).status, next);
    }
    assert.equal(await actions.getByRole("button").count(), 0);
    await checkAccessibility(page, "journey");
    await screenshot(page, "journey-stopped");
  });
  test("build a segment from conditions with a live count, and save it", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("PUT", `/panels/${panelId}/attributes/TIER`, { type: "integer" });
    const gold = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Gold" });
    for (const [email, tier, list] of [["t1@example.com", 1, null], ["t2@example.com", 2, gold.id], ["t3@example.com", 3, null]] as const) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email, TIER: tier }), ...(list ? { listid: String(list) } : {}) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    const page = await ownerPage();
    await nav(page, "Segments").click();
    await page.getByRole("heading", { level: 1, name: "Segments" }).waitFor();
    await page.getByText("No segments yet").waitFor();
    const form = page.getByRole("form", { name: "New segment" });
    const counts: string[] = [];
    page.on("request", (request) => {
      if (request.url().endsWith("/segments/count")) counts.push(request.url());
    });
    const count = form.getByRole("status");
    // An untouched form asks nothing and shows no refusal; a condition not yet chosen is not counted.
    await count.getByText("Choose conditions to see how many contacts match.").waitFor();
    const first = form.getByRole("listitem", { name: "Condition 1" });
    await first.getByLabel("Comparison", { exact: true }).selectOption("gte");
    await count.getByText("No count until the conditions are complete.").waitFor();
    await page.waitForTimeout(600);
    assert.deepEqual(counts, []);
    assert.equal(await form.locator(".error").count(), 0);
    await form.getByLabel("Segment name").fill("Upper tiers");
    await first.getByLabel("Attribute", { exact: true }).selectOption("TIER");
    await first.getByLabel("Value", { exact: true }).fill("2");
    await count.getByText("2 contacts match now.").waitFor();
    await checkAccessibility(page, "segment-editor");

    // A second condition narrows it; "Not" turns a condition round.
    await form.getByRole("button", { name: "Add a condition" }).click();
    const second = form.getByRole("listitem", { name: "Condition 2" });
    await second.getByLabel("Condition on", { exact: true }).selectOption("list");
    await second.getByLabel("List", { exact: true }).selectOption(String(gold.id));
    await count.getByText("1 contact matches now.").waitFor();
    await form.getByRole("listitem", { name: "Condition 2" }).getByLabel("Not").check();
    await count.getByText("1 contact matches now.").waitFor();
    assert.match((await form.getByLabel("Segment definition").textContent()) ?? "", /"not": \{\s*"list": \d+/);
    await screenshot(page, "segment-editor");

    await form.getByRole("button", { name: "Save segment" }).click();
    const row = page.getByRole("row", { name: /Upper tiers/ });
    await row.waitFor();
    const saved = (await adminCall("GET", `/panels/${panelId}/segments`)).segments.find((s: any) => s.name === "Upper tiers");
    assert.deepEqual(saved.match, { all: [{ attribute: "TIER", op: "gte", value: 2 }, { not: { list: gold.id, op: "in" } }] });
    await screenshot(page, "segment-saved");

    // Its own page: members (kept current in the background), an export, and its conditions to edit.
    await row.getByRole("link", { name: "Upper tiers" }).click();
    await page.getByRole("heading", { level: 1, name: "Upper tiers" }).waitFor();
    for (const until = Date.now() + 30_000; !(await page.getByRole("cell", { name: "t3@example.com" }).isVisible()); await page.waitForTimeout(500)) {
      if (Date.now() > until) throw new Error("the segment's members never showed t3@example.com");
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Upper tiers" }).waitFor();
    }
    const edit = page.getByRole("form", { name: "Edit segment" });
    assert.equal(await edit.getByRole("listitem", { name: "Condition 1" }).getByLabel("Value", { exact: true }).inputValue(), "2");
    await page.getByRole("button", { name: "Export members as CSV" }).click();
    const download = page.getByRole("link", { name: "Download the CSV (1 contact)" });
    await download.waitFor({ timeout: 30_000 });
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const csv = await (await fetch(`${service.origin}${await download.getAttribute("href")}`, { headers: { cookie } })).text();
    assert.match(csv, /t3@example\.com/);
    await checkAccessibility(page, "segment-page");
    await screenshot(page, "segment-page");

    // Widened to every tier: saved over the segment, and the members follow.
    await edit.getByRole("listitem", { name: "Condition 1" }).getByLabel("Value", { exact: true }).fill("1");
    await edit.getByRole("status").getByText("2 contacts match now.").waitFor();
    await edit.getByRole("button", { name: "Save changes" }).click();
    for (const until = Date.now() + 30_000; !(await page.getByRole("cell", { name: "t1@example.com" }).isVisible()); await page.waitForTimeout(500)) {
      if (Date.now() > until) throw new Error("the edited segment's members never showed t1@example.com");
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Upper tiers" }).waitFor();
    }
    const stored = (await adminCall("GET", `/panels/${panelId}/segments/${saved.id}`)).match;
    assert.deepEqual(stored, { all: [{ attribute: "TIER", op: "gte", value: 1 }, { not: { list: gold.id, op: "in" } }] });

    await page.getByRole("button", { name: "Delete segment" }).click();
    await confirmInDialog(page, "Delete segment");
    await page.getByRole("heading", { level: 1, name: "Segments" }).waitFor();
    assert.equal(await page.getByRole("row", { name: /Upper tiers/ }).count(), 0);
  });

  test("create and schedule an email campaign with a previewed body", async () => {
    // The contacts file is served from loopback, as a customer's file server would serve it.
    const files: Server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/csv" }).end("EMAIL,NAME\nspring1@example.com,Ann\nspring2@example.com,Bo\n");
    });
    await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
    const port = (files.address() as { port: number }).port;
    try {
      const page = await ownerPage();
      await nav(page, "Campaigns").click();
      await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
      await page.getByText("No campaigns yet").waitFor();

      await page.getByLabel("Campaign name").fill("Spring sale");
      await page.getByLabel("Subject line").fill("Spring is here, {{NAME|friend}}");
      await page.getByLabel("Sender name").fill("Shop");
      await page.getByLabel("Sender email").fill("shop@example.com");
      await page.getByLabel("A contacts file, imported into a new list").check();
      await page.getByLabel("Contacts file URL").fill(`http://127.0.0.1:${port}/spring.csv`);
      await page.getByLabel("New list name").fill("Spring sale readers");
      await page.getByLabel("Notify").fill("ops@example.com");
      // A new email starts in the visual editor; hand-written HTML goes in "Code".
      await page.getByRole("button", { name: "Code", exact: true }).click();
      await page.getByLabel("HTML body").fill("<h1>Hello {{NAME|there}}</h1><p>Spring sale</p>");
      // The preview renders the body as typed, in a sandboxed frame.
      await page.frameLocator('iframe[title="Preview of the HTML body"]').getByRole("heading", { name: "Hello {{NAME|there}}" }).waitFor();
      await page.getByText("Merge tags used: NAME").waitFor();
      await checkAccessibility(page, "campaigns");

      // Too soon: the lead time is enforced with the earliest allowed time named.
      const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
      await page.getByLabel("Send at").fill(`${day(-1)}T09:30`);
      await page.getByRole("button", { name: "Schedule campaign" }).click();
      await page.getByText(/must be at least \d+ minutes ahead/).first().waitFor();
      assert.equal((await adminCall("GET", `/panels/${service.printed["demo panel"]}/campaigns`)).campaigns.length, 0);

      await page.getByLabel("Send at").fill(`${day(3)}T09:30`);
      await page.getByRole("button", { name: "Schedule campaign" }).click();
      await page.getByText(`Campaign “Spring sale” scheduled for ${day(3)} 09:30:00`).waitFor();
      const row = page.getByRole("row", { name: /Spring sale/ });
      await row.waitFor();
      assert.deepEqual((await row.getByRole("cell").allTextContents()).slice(0, 3), ["Spring sale", "scheduled", `${day(3)} 09:30:00`]);
      await screenshot(page, "campaign-scheduled");

      // To lists and a saved segment, leaving a list out.
      const panelId = service.printed["demo panel"]!;
      const staff = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Staff" });
      const segment = await adminCall("POST", `/panels/${panelId}/segments`, { name: "Named Ann", match: { all: [{ attribute: "NAME", op: "eq", value: "Ann" }] } });
      await page.reload();
      await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
      await page.getByLabel("Campaign name").fill("Autumn news");
      await page.getByLabel("Subject line").fill("Autumn, {{NAME|friend}}");
      await page.getByLabel("Sender name").fill("Shop");
      await page.getByLabel("Sender email").fill("shop@example.com");
      await page.getByLabel("Reply-to (optional)").fill("help@example.com");
      await page.getByLabel("Send at").fill(`${day(4)}T10:00`);
      // A new email starts in the visual editor; hand-written HTML goes in "Code".
      await page.getByRole("button", { name: "Code", exact: true }).click();
      await page.getByLabel("HTML body").fill("<p>Autumn is here</p>");
      // Nothing to send to: refused with the audience named.
      await page.getByRole("button", { name: "Schedule campaign" }).click();
      const sendTo = page.getByRole("group", { name: "Send to" });
      await sendTo.getByText("must name at least one list or segment to send to (lists, segments)").waitFor();
      await checkAccessibility(page, "campaign-audience");
      await sendTo.getByLabel("List Spring sale readers (2)").check();
      await sendTo.getByLabel("Segment Named Ann", { exact: false }).check();
      await page.getByRole("group", { name: "Leave out" }).getByLabel("List Staff (0)").check();
      await page.getByRole("button", { name: "Schedule campaign" }).click();
      await page.getByText(`Campaign “Autumn news” scheduled for ${day(4)} 10:00:00`).waitFor();
      const autumn = page.getByRole("row", { name: /Autumn news/ });
      // The names of lists and segments arrive with their own read.
      await autumn.getByRole("cell", { name: "list Spring sale readers, segment Named Ann; not list Staff" }).waitFor();
      assert.deepEqual((await autumn.getByRole("cell").allTextContents()).slice(0, 4), ["Autumn news", "scheduled", `${day(4)} 10:00:00`, "list Spring sale readers, segment Named Ann; not list Staff"]);
      const stored = (await adminCall("GET", `/panels/${panelId}/campaigns`)).campaigns.find((c: any) => c.name === "Autumn news");
      assert.deepEqual(stored.audience, { lists: [stored.audience.lists[0]], segments: [segment.id], exclude_lists: [staff.id], exclude_segments: [] });
      assert.equal(stored.reply_to, "help@example.com");
      await screenshot(page, "campaign-audience-scheduled");

      // The campaign's own page: what it is, a test copy, and the copy as its reader sees it.
      await autumn.getByRole("link", { name: "Autumn news" }).click();
      await page.getByRole("heading", { level: 1, name: "Autumn news" }).waitFor();
      await page.getByRole("definition").getByText("list Spring sale readers, segment Named Ann; not list Staff").waitFor();
      await page.getByText("No copies kept").waitFor();
      await page.getByLabel("Send a test copy to").fill("spring1@example.com");
      await page.getByRole("button", { name: "Send test" }).click();
      await page.getByText("Test copy sent to spring1@example.com.").waitFor();
      const copy = page.getByRole("row", { name: /\[Test\] Autumn, Ann/ });
      await copy.getByRole("button", { name: "spring1@example.com" }).click();
      const copyFrame = 'iframe[title="HTML of the copy sent to spring1@example.com"]';
      await page.frameLocator(copyFrame).getByText("Autumn is here").waitFor();
      // Chromium paints a sandboxed frame below the fold only once it is scrolled to.
      await page.locator(copyFrame).scrollIntoViewIfNeeded();
      await screenshot(page, "campaign-test-copy");
      await checkAccessibility(page, "campaign-page");
      assert.equal((await adminCall("GET", `/panels/${panelId}/campaigns/${stored.id}`)).counters.sent, 0);
    } finally {
      await new Promise((resolve) => files.close(resolve));
    }
  });
});
