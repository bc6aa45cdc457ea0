// The panel in a real browser, against the service started as `npm start` starts it. Each flow
// asserts what a person sees and saves a screenshot under test-results/e2e/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, openBrowser, screenshot, type BrowserWindow } from "./browser.ts";
import { startService, type Service } from "./service.ts";

let service: Service;
const windows: BrowserWindow[] = [];

before(async () => {
  service = await startService();
});
after(async () => {
  for (const window of windows) await window.close();
  await service?.stop();
});

async function newPage(): Promise<Page> {
  const window = await openBrowser(service.origin);
  windows.push(window);
  return window.page;
}

async function adminCall(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${service.origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto(`${service.origin}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
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

  test("a viewer is refused a write", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/operators`, { email: "viewer@example.com", role: "viewer", password: "viewer passphrase" });
    const page = await newPage();
    await signIn(page, "viewer@example.com", "viewer passphrase");
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { level: 1, name: "Settings" }).waitFor();
    await checkAccessibility(page, "settings");
    await page.getByRole("button", { name: "Turn API mode off" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.equal(await alert.textContent(), "This needs the owner role in the panel; you are viewer");
    await screenshot(page, "viewer-refused");
    // Nothing changed.
    assert.equal((await adminCall("GET", `/panels/${panelId}`)).api_mode, true);
  });

  test("enable API mode, create a user, copy the key and use it in an apiv2 call", async () => {
    const panelId = service.printed["demo panel"]!;
    await adminCall("PATCH", `/panels/${panelId}`, { api_mode: false });
    const page = await ownerPage();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("button", { name: "Turn API mode on" }).click();
    await page.getByText("API mode is on.").waitFor();
    await screenshot(page, "api-mode-on");

    await page.getByRole("link", { name: "Users and API keys" }).click();
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
});
