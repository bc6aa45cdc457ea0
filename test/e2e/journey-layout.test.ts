// The journey canvas keeps where the operator put the steps, in Chromium against the service as
// `npm start` starts it: a journey made through the admin API opens laid out by the canvas; a
// step dragged elsewhere and saved is where it was dropped after the page is loaded again, and
// the admin API returns that position. Once the journey runs, moving a step and saving keeps
// its version (the button says "Save layout"). Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let panelId: string;

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "layout_signup", params: {} });
  },
});

const node = (page: Page, id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);

/** A node's position on the canvas (flow coordinates, whatever the zoom), from the transform React Flow gives it. */
async function flowPosition(page: Page, id: string): Promise<{ x: number; y: number }> {
  const transform = await node(page, id).evaluate((element) => (element as unknown as { style: { transform: string } }).style.transform);
  const found = /translate\((-?[\d.]+)px, ?(-?[\d.]+)px\)/.exec(transform);
  assert.ok(found, `transform of ${id}: ${transform}`);
  return { x: Number(found[1]), y: Number(found[2]) };
}

/** Drags a node by its middle `dx`, `dy` screen pixels with the mouse, as an operator does; answers where it was dropped. */
async function dragNode(page: Page, id: string, dx: number, dy: number): Promise<{ x: number; y: number }> {
  const before = await flowPosition(page, id);
  // The canvas may sit below the fold (the simulation section is above it): the mouse drags what it can see.
  await node(page, id).scrollIntoViewIfNeeded();
  // The middle of the box: clear of the handles at its top and bottom edges.
  const box = (await node(page, id).locator(".journey-node").boundingBox())!;
  const from = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(from.x + dx / 2, from.y + dy / 2, { steps: 8 });
  await page.mouse.move(from.x + dx, from.y + dy, { steps: 8 });
  await page.mouse.up();
  const dropped = await flowPosition(page, id);
  assert.ok(Math.abs(dropped.x - before.x) > 50 && Math.abs(dropped.y - before.y) > 50, `${id} moved from ${JSON.stringify(before)} to ${JSON.stringify(dropped)}`);
  return dropped;
}

const near = (actual: { x: number; y: number }, expected: { x: number; y: number }, what: string) =>
  assert.ok(Math.abs(actual.x - expected.x) <= 0.5 && Math.abs(actual.y - expected.y) <= 0.5, `${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);

async function openJourney(page: Page, id: string): Promise<void> {
  await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/${encodeURIComponent(id)}`);
  await node(page, "second").waitFor();
}

describe("journey layout in Chromium", () => {
  test("a dragged step stays where it was dropped after saving and loading the page again, as a draft and once running", async () => {
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Laid out",
      trigger: { type: "activity", activity: "layout_signup" },
      steps: [
        { id: "first", type: "delay", for: "1h" },
        { id: "second", type: "delay", after: "first", for: "2h" },
      ],
    });
    assert.equal(journey.layout, null);
    const { page } = keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } }));
    await openJourney(page, journey.id);
    // Made through the API: the canvas lays it out as a tree, each step below the one it follows.
    const computedFirst = await flowPosition(page, "first");
    const computedSecond = await flowPosition(page, "second");
    assert.ok(computedSecond.y > computedFirst.y);

    const dropped = await dragNode(page, "second", 220, 140);
    await screenshot(page, "journey-layout-dragged");
    await page.getByRole("button", { name: "Save draft" }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    const stored = (await adminCall("GET", `/panels/${panelId}/journeys/${journey.id}`)).layout;
    near(stored.steps.second, dropped, "stored position of second");

    await page.reload();
    await node(page, "second").waitFor();
    near(await flowPosition(page, "second"), dropped, "second after a reload");
    // The step nobody moved is where the canvas put it before (saved along with the rest).
    near(await flowPosition(page, "first"), computedFirst, "first after a reload");
    await screenshot(page, "journey-layout-reloaded");

    // Running: moving a step only saves where it is, without a new version.
    await page.getByRole("button", { name: "Start journey" }).click();
    await page.locator(".badge.status-running").waitFor();
    const moved = await dragNode(page, "first", -200, 120);
    await page.getByRole("button", { name: "Save layout" }).click();
    await page.getByRole("status").getByText("Saved.").waitFor();
    await page.reload();
    await node(page, "first").waitFor();
    near(await flowPosition(page, "first"), moved, "first after a reload, running");
    near(await flowPosition(page, "second"), dropped, "second after a reload, running");
    const running = await adminCall("GET", `/panels/${panelId}/journeys/${journey.id}`);
    assert.equal(running.status, "running");
    assert.equal(running.version, 1);
    near(running.layout.steps.first, moved, "stored position of first");
  });
});
