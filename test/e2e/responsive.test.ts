// The panel at a phone's, a tablet's and a desktop's width, in Chromium against the service as
// `npm start` starts it: every main screen fits the window's width (the page never scrolls
// sideways; wide tables scroll inside their own box), the screens' menu collapses behind a
// button below desktop width and its links stay reachable, and the journey canvas keeps room to
// work at tablet width. Each screen at each width is saved under test-results/e2e/ as
// responsive-<width>-<screen>.png. The first screen's JavaScript stays at most 200 KB gzipped.
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

const WIDTHS = [390, 768, 1280] as const;
const HEIGHTS: Record<(typeof WIDTHS)[number], number> = { 390: 844, 768: 1024, 1280: 860 };

let panelId: string;
let screens: [name: string, path: string, heading: string][];
let journeyId: string;

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    // Long values, as real panels hold: they must wrap or scroll inside their table, not widen the page.
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Customers who signed up at the spring fair in the north hall" });
    const emails = ["a.rather.long.address.for.a.phone.screen@subdomain.example.com", "ben@example.com"];
    for (const email of emails) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email, NAME: "Ann" }), listid: String(list.id) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    const campaign = await adminCall("POST", `/panels/${panelId}/campaigns`, {
      name: "Spring news for everybody who signed up at the fair",
      subject: "Our spring news",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: `<p>News</p><a href="https://shop.example.com/sale">Sale</a>`,
      audience: { lists: [list.id] },
    });
    const segment = await adminCall("POST", `/panels/${panelId}/segments`, { name: "Named Ann", match: { all: [{ attribute: "NAME", op: "eq", value: "Ann" }] } });
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "signed_up_at_the_fair", params: {} });
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Welcome after the fair",
      trigger: { type: "activity", activity: "signed_up_at_the_fair" },
      steps: [
        { id: "wait", type: "delay", for: "1h" },
        { id: "later", type: "delay", after: "wait", for: "2h" },
      ],
    });
    journeyId = journey.id;
    // The campaign goes out at the cron's next tick, so the contact's message log has rows.
    await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
    for (const deadline = Date.now() + 90_000; ; await new Promise((r) => setTimeout(r, 500))) {
      if ((await adminCall("GET", `/panels/${panelId}/outbox?campaign=${campaign.id}`)).messages.length >= emails.length) break;
      if (Date.now() > deadline) throw new Error("the campaign was not sent");
    }
    screens = [
      ["home", "", "Demo"],
      ["contacts", "/contacts", "Contacts"],
      ["contact-messages", `/contacts/${encodeURIComponent(emails[0]!)}`, emails[0]!],
      ["lists", "/lists", "Lists"],
      ["list-members", `/lists/${list.id}`, "List Customers who signed up at the spring fair in the north hall"],
      ["data", "/data", "Attributes and activities"],
      ["segments", "/segments", "Segments"],
      ["segment", `/segments/${segment.id}`, "Named Ann"],
      ["campaigns", "/campaigns", "Campaigns"],
      ["campaign", `/campaigns/${campaign.id}`, "Spring news for everybody who signed up at the fair"],
      ["email-templates", "/email-templates", "Email templates"],
      ["forms", "/forms", "Signup forms"],
      ["topics", "/topics", "Topics"],
      ["journeys", "/journeys", "Journeys"],
      ["journey-canvas", `/journeys/${journey.id}`, "Welcome after the fair"],
      ["webhooks", "/webhooks", "Webhooks"],
      ["sender-domains", "/sender-domains", "Sender domains"],
      ["channels", "/channels", "Channels"],
      ["users", "/users", "Users and API keys"],
      ["team", "/team", "Team"],
      ["audit", "/audit", "Audit log"],
      ["settings", "/settings", "Settings"],
      ["account", "/account", "Your account"],
    ];
  },
});

/** What sticks out past the window's right edge, for the failure message. */
async function overflow(page: Page): Promise<{ scrollWidth: number; clientWidth: number; widest: string[] }> {
  return page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as any;
    const root = document.documentElement;
    const widest: string[] = [];
    // What scrolls inside its own box (a wide table) does not widen the page.
    const scrolledInside = (element: any): boolean => {
      for (let up = element.parentElement; up && up !== root; up = up.parentElement) if (getComputedStyle(up).overflowX !== "visible") return true;
      return false;
    };
    const sticksOut = (element: any) => element.getBoundingClientRect().right > root.clientWidth + 1 && !scrolledInside(element);
    // The innermost elements past the edge: their parents only stick out because of them.
    for (const element of document.querySelectorAll("body *")) {
      if (widest.length < 8 && sticksOut(element) && ![...element.children].some(sticksOut)) {
        widest.push(`${element.tagName.toLowerCase()}${typeof element.className === "string" && element.className ? "." + element.className.split(" ").join(".") : ""} right=${Math.round(element.getBoundingClientRect().right)}`);
      }
    }
    return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, widest };
  });
}

/** Opens a screen by its address and waits until it has loaded (its heading shown, nothing loading). */
async function open(page: Page, path: string, heading: string): Promise<void> {
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}${path}`);
  await page.getByRole("heading", { level: 1, name: heading, exact: true }).waitFor();
  await page.waitForFunction(() => !(globalThis as any).document.querySelector("main [role=status]")?.textContent?.includes("Loading"));
  // The canvas and the charts draw after the data arrives.
  if (path.startsWith("/journeys/")) await page.locator(".react-flow__node").first().waitFor();
}

const menuButton = (page: Page) => page.getByRole("button", { name: "Menu" });
const screensNav = (page: Page) => page.getByRole("navigation", { name: "Screens" });

describe("the panel at phone, tablet and desktop widths", () => {
  for (const width of WIDTHS) {
    test(`every main screen fits ${width} px without scrolling sideways`, async () => {
      const { page } = keep(await signInAsOwner(service, { viewport: { width, height: HEIGHTS[width] } }));
      const problems: string[] = [];
      for (const [name, path, heading] of screens) {
        await open(page, path, heading);
        await screenshot(page, `responsive-${width}-${name}`);
        const found = await overflow(page);
        if (found.scrollWidth > found.clientWidth) problems.push(`${name}: the page is ${found.scrollWidth} px wide in ${found.clientWidth} px (${found.widest.join(", ")})`);
        if (width === 390) await checkAccessibility(page, `${name} at ${width} px`);
      }
      assert.deepEqual(problems, []);
    });
  }

  test("at 390 px the screens' menu opens from its button, closes on Escape, and its links lead to the screens", async () => {
    const { page } = keep(await signInAsOwner(service, { viewport: { width: 390, height: 844 } }));
    const button = menuButton(page);
    assert.equal(await button.getAttribute("aria-expanded"), "false");
    assert.equal(await screensNav(page).isVisible(), false, "the menu is folded away on a phone");
    // Signing out stays within reach (it was off screen to the right before).
    const signOut = await page.getByRole("button", { name: "Sign out" }).boundingBox();
    assert.ok(signOut && signOut.x >= 0 && signOut.x + signOut.width <= 390, `Sign out at ${JSON.stringify(signOut)}`);

    await button.click();
    assert.equal(await button.getAttribute("aria-expanded"), "true");
    await screensNav(page).waitFor();
    // Keyboard users land on the first link, and Escape folds the menu and gives focus back to its button.
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent), "Home");
    await checkAccessibility(page, "menu open at 390 px");
    await screenshot(page, "responsive-390-menu-open");
    await page.keyboard.press("Escape");
    assert.equal(await button.getAttribute("aria-expanded"), "false");
    await screensNav(page).waitFor({ state: "hidden" });
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.getAttribute("aria-controls")), "screens-menu");

    for (const [link, heading] of [["Lists", "Lists"], ["Team", "Team"], ["Settings", "Settings"]]) {
      await button.click();
      await screensNav(page).getByRole("link", { name: link, exact: true }).click();
      await page.getByRole("heading", { level: 1, name: heading }).waitFor();
      // Following a link folds the menu, so the screen is what shows.
      await screensNav(page).waitFor({ state: "hidden" });
      assert.equal(await button.getAttribute("aria-expanded"), "false");
    }
  });

  test("at 1280 px the menu is always shown and there is no menu button", async () => {
    const { page } = keep(await signInAsOwner(service, { viewport: { width: 1280, height: 860 } }));
    assert.equal(await screensNav(page).isVisible(), true);
    assert.equal(await menuButton(page).isVisible(), false);
  });

  test("at 768 px the journey canvas has room to work: most of the width, with the palette beside it", async () => {
    const { page } = keep(await signInAsOwner(service, { viewport: { width: 768, height: 1024 } }));
    await open(page, `/journeys/${journeyId}`, "Welcome after the fair");
    const canvas = (await page.locator(".journey-canvas").boundingBox())!;
    assert.ok(canvas.width >= 480, `the canvas is ${canvas.width} px wide`);
    assert.ok(canvas.height >= 400, `the canvas is ${canvas.height} px high`);
    const palette = (await page.getByRole("navigation", { name: "Steps to add" }).boundingBox())!;
    assert.ok(palette.x + palette.width <= canvas.x, "the palette is beside the canvas");
    // Both steps are in view on the canvas.
    for (const id of ["wait", "later"]) {
      const box = (await page.locator(`.react-flow__node[data-id="${id}"]`).boundingBox())!;
      assert.ok(box.x >= canvas.x && box.x + box.width <= canvas.x + canvas.width, `${id} is inside the canvas`);
    }
    // Selecting a step opens its settings below the canvas, within the page's width.
    await page.locator(`.react-flow__node[data-id="wait"] .journey-node`).click();
    const side = (await page.locator(".journey-side").boundingBox())!;
    assert.ok(side.x >= 0 && side.x + side.width <= 768, `the step's settings at ${JSON.stringify(side)}`);
    await screenshot(page, "responsive-768-journey-step-selected");
  });

  test("the first screen's JavaScript is at most 200 KB gzipped", async () => {
    const html = await (await fetch(`${service.origin}/`, { headers: { accept: "text/html" } })).text();
    const scripts = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((found) => found[1]!);
    assert.ok(scripts.length > 0);
    let gzipped = 0;
    for (const script of scripts) gzipped += gzipSync(Buffer.from(await (await fetch(`${service.origin}${script}`)).arrayBuffer())).length;
    assert.ok(gzipped <= 200 * 1024, `first screen JavaScript is ${gzipped} bytes gzipped`);
  });
});
