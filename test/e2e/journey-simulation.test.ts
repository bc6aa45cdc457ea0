// Journey simulation on history in Chromium (issue 46 item 1): a draft journey's page runs
// "Simulate" over the activities just recorded, shows the result and, on request, its figures on
// the canvas's nodes; nothing is sent (the journey stays a draft with no entry). axe: no serious findings.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let panelId: string;
let clientId: string;
let activityId: string;
let buyId: string;

serviceForThisFile({
  setUp: async () => {
    panelId = service.printed["demo panel"]!;
    clientId = (await adminCall("PATCH", `/panels/${panelId}`, { api_mode: true })).client_id;
    activityId = (await adminCall("POST", `/panels/${panelId}/activities`, { name: "sim_cart", params: {} })).activityid;
    buyId = (await adminCall("POST", `/panels/${panelId}/activities`, { name: "sim_buy", params: {} })).activityid;
  },
});

async function perform(email: string, activity = activityId): Promise<void> {
  const posted = await fetch(`${service.origin}/v1/activity/singleactivity/${clientId}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ activityid: activity, identity: email }),
  });
  assert.equal(((await posted.json()) as { result: string }).result, "Success");
}

describe("journey simulation in Chromium", () => {
  test("Simulate shows what the draft would have done and draws it on the canvas", async () => {
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Simulated",
      trigger: { type: "activity", activity: "sim_cart" },
      steps: [
        { id: "hello", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        { id: "later", type: "delay", for: "2d", after: "hello" },
      ],
    });
    await perform("sim1@example.com");
    await perform("sim2@example.com");
    // The pipeline gives new identities their contacts: wait until a simulation sees both.
    const path = `/panels/${panelId}/journeys/${journey.id}/simulations`;
    for (let tries = 0; ; tries++) {
      const done = await adminCall("POST", path, { days: 1 });
      if (done.state === "done" && done.result.entered === 2) break;
      assert.ok(tries < 40, `simulation never saw both activities: ${JSON.stringify(done)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // sim2 unsubscribed: the sender would skip its email, and the simulation says so on the node.
    await adminCall("PUT", `/panels/${panelId}/contacts/${encodeURIComponent("sim2@example.com")}/preferences`, { email: "unsubscribed" });

    const { page } = keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } }));
    await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/${encodeURIComponent(journey.id)}`);
    const section = page.getByRole("region", { name: "Simulation" });
    await section.getByLabel("Days to simulate").fill("3");
    // The result shown at first is the simulation made above through the API, with the same
    // figures: wait for this run's answer, or its start would hide the canvas figures again.
    const started = page.waitForResponse((r) => r.url().endsWith("/simulations") && r.request().method() === "POST");
    await section.getByRole("button", { name: "Simulate" }).click();
    assert.equal((await started).status(), 202);
    const summary = section.getByLabel("Simulation result");
    // The API's run (1 day) shows until this one's result replaces it.
    for (let tries = 0; !((await summary.textContent()) ?? "").startsWith("Last 3 days"); tries++) {
      assert.ok(tries < 100, `the 3-day result never showed: ${await summary.textContent()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await summary.getByText("2 would have entered, 0 completed, 0 left on the goal, 2 waiting now").waitFor();
    assert.match((await summary.textContent()) ?? "", /Messages: 1 email \(skipped: 0 for a cap, 0 for a topic, 0 for no address, 1 for a suppressed one; 0 deferred\)/);
    await section.getByText("Why messages would be skipped").click();
    assert.equal(await section.getByLabel("Skip reasons").textContent(), "hello: 1 × the address is suppressed (unsubscribed)");
    await section.getByLabel("Show the simulation on the canvas").check();
    const later = page.getByLabel("Counters of later");
    await later.getByText("reached 2").waitFor();
    assert.match((await later.textContent()) ?? "", /reached 2\s+waiting 2/);
    assert.match((await page.getByLabel("Counters of hello").textContent()) ?? "", /reached 2\s+waiting 0\s+skipped: suppressed 1/);
    await checkAccessibility(page, "journey simulation");
    await screenshot(page, "journey-simulation");

    const saved = await adminCall("GET", `/panels/${panelId}/journeys/${journey.id}`);
    assert.equal(saved.status, "draft");
    assert.equal(saved.counters.entered, 0);
  });

  test("an A/B split's conversions by its goal show in the result and on the split's node", async () => {
    const journey = await adminCall("POST", `/panels/${panelId}/journeys`, {
      name: "Simulated split",
      trigger: { type: "activity", activity: "sim_cart" },
      steps: [
        { id: "ab", type: "split", branches: [{ percent: 50, then: "offer" }, { percent: 50 }], goal: { activity: "sim_buy", within: "1d" } },
        { id: "offer", type: "email", subject: "Offer", html: "<p>Offer</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      ],
    });
    // Four carts (both tests' contacts) and two purchases after them: each buyer converts its branch.
    await perform("sim3@example.com");
    await perform("sim4@example.com");
    await perform("sim3@example.com", buyId);
    await perform("sim4@example.com", buyId);
    const path = `/panels/${panelId}/journeys/${journey.id}/simulations`;
    let result: { splits: Array<{ branches: Array<{ label: string; entered: number; converted: number }> }> };
    for (let tries = 0; ; tries++) {
      const done = await adminCall("POST", path, { days: 1 });
      const branches = done.result?.splits?.[0]?.branches ?? [];
      if (done.state === "done" && done.result.entered === 4 && branches.reduce((n: number, b: { converted: number }) => n + b.converted, 0) === 2) {
        result = done.result;
        break;
      }
      assert.ok(tries < 40, `simulation never saw the carts and purchases: ${JSON.stringify(done)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    const { page } = keep(await signInAsOwner(service, { viewport: { width: 1440, height: 1000 } }));
    await page.goto(`${service.origin}/panels/${encodeURIComponent(panelId)}/journeys/${encodeURIComponent(journey.id)}`);
    const section = page.getByRole("region", { name: "Simulation" });
    const splits = section.getByLabel("Simulated splits");
    await splits.waitFor();
    const shown = (await splits.textContent()) ?? "";
    for (const b of result.splits[0]!.branches) assert.ok(shown.includes(`${b.label} ${b.entered} entered, ${b.converted} converted`), `${shown} lacks branch ${b.label}'s figures`);
    await section.getByLabel("Show the simulation on the canvas").check();
    const node = (await page.getByLabel("Counters of ab").textContent()) ?? "";
    for (const b of result.splits[0]!.branches) assert.match(node, new RegExp(`${b.label} converted\\s*${b.converted}`));
    await checkAccessibility(page, "journey simulation split");
  });
});
