// Debian's Chromium driven by playwright-core: no browser is downloaded (none can be here).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { root } from "./service.ts";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Screenshots of each flow, for a reviewer to look at. */
export const OUTPUT_DIR = join(root, "test-results", "e2e");

export interface BrowserWindow {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Chromium with a fresh profile (its own --user-data-dir, so its own cookies), allowed to use
 * the clipboard as a person copying a key does. playwright passes the profile directory to
 * Chromium as --user-data-dir itself.
 */
export async function openBrowser(origin: string, options: { viewport?: { width: number; height: number }; javaScript?: boolean } = {}): Promise<BrowserWindow> {
  const profile = mkdtempSync(join(tmpdir(), "apiv2-chromium-"));
  mkdirSync(OUTPUT_DIR, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: options.viewport ?? { width: 1280, height: 860 },
    javaScriptEnabled: options.javaScript ?? true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(OUTPUT_DIR, `${name}.png`), fullPage: true });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Runs axe-core on the page as it is; fails on any serious or critical finding. */
export async function checkAccessibility(page: Page, screen: string): Promise<void> {
  // Evaluated through the DevTools protocol: the pages' CSP refuses inline script, so a <script> tag of it would not run.
  await page.evaluate(axeSource);
  // Runs in the page, where axe, window and document exist (this file is typed for Node).
  const violations = (await page.evaluate(async () => {
    const scope = globalThis as any;
    const result = await scope.axe.run(scope.document, { resultTypes: ["violations"] });
    return result.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n: any) => n.target.join(" ")).slice(0, 3) }));
  })) as { id: string; impact: string; help: string; nodes: string[] }[];
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious, [], `${screen}: accessibility findings`);
}

/** A fresh window signed in as an operator, on their panel's first screen. */
export async function signInAs(service: { origin: string }, email: string, password: string, options: { viewport?: { width: number; height: number } } = {}): Promise<BrowserWindow> {
  const window = await openBrowser(service.origin, options);
  const { page } = window;
  await page.goto(`${service.origin}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
  return window;
}

/** A fresh window signed in as the demo panel's owner that start.ts printed, on the panel's first screen. */
export function signInAsOwner(service: { origin: string; printed: Record<string, string> }, options: { viewport?: { width: number; height: number } } = {}): Promise<BrowserWindow> {
  return signInAs(service, service.printed["owner email"]!, service.printed.password!, options);
}

/** Answers the panel's confirmation dialog (components/confirm-dialog.tsx) with its action button. */
export async function confirmInDialog(page: Page, action: string): Promise<void> {
  const dialog = page.getByRole("alertdialog");
  await dialog.getByRole("button", { name: action, exact: true }).click();
  await dialog.waitFor({ state: "detached" });
}
