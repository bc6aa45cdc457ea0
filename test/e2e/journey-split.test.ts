// An A/B split and a journey goal in Chromium (issue 46): a journey made through the admin API
// with a split of two branches and a goal shows one handle per branch, its shares, the branch
// editor in the side panel, the split results with a Promote button, and the goal on the
// journey page; promoting B makes a new version whose split node says so. axe: no serious findings.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, confirmInDialog, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let panelId: string;

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "split_signup", params: {} });
    await adminCall("POST", `/panels/${panelId}/activities`, { name: "split_purchase", params: {} });
  },
});

describe("A/B split in Chromium", () => {
  test("the split's branches, results and promotion, and the journey's goal", async () => {
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Split test",
      trigger: { type: "activity", activity: "split_signup" },
      goal: { activity: "split_purchase" },
      steps: [
        { id: "ab", type: "split", branches: [{ percent: 60, then: "slow" }, { percent: 40, then: "fast" }], goal: { activity: "split_purchase", within: "7d" } },
        { id: "slow", type: "delay", for: "2d" },
        { id: "fast", type: "delay", for: "1h" },
      ],
    });
    await adminCall("POST", `/panels/${panelId}/journeys/${journey.id}/status`, { status: "running" });
    const { page } = keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } }));
    await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/${encodeURIComponent(journey.id)}`);
    const split = page.locator('.react-flow__node[data-id="ab"]');
    await split.waitFor();
    await split.getByText("A 60% · B 40%; goal “split_purchase” within 7d").waitFor();
    assert.equal(await split.locator(".react-flow__handle.source").count(), 2);
    await page.getByText("“split_purchase”: 0 converted").waitFor();
    const results = page.getByRole("region", { name: "A/B split results" });
    await results.getByRole("button", { name: "Promote B of ab" }).waitFor();

    await split.click();
    const side = page.getByRole("complementary", { name: "Settings of ab" });
    assert.equal(await side.getByLabel("Branch A percent").inputValue(), "60");
    await side.getByRole("button", { name: "Add branch" }).waitFor();
    await checkAccessibility(page, "journey split");
    await screenshot(page, "journey-split");

    await results.getByRole("button", { name: "Promote B of ab" }).click();
    await confirmInDialog(page, "Promote B");
    await page.locator('.react-flow__node[data-id="ab"]').getByText("all to B (promoted)").waitFor();
    const saved = await adminCall("GET", `/panels/${panelId}/journeys/${journey.id}`);
    assert.equal(saved.version, 2);
    assert.equal(saved.steps.find((s: { id: string }) => s.id === "ab").winner, "B");
  });
});
