// The deployment admin's operations page (/ops) in Chromium, against a service started as
// `npm start` starts it: the admin token opens it, the view shows the cron, queues and shards,
// and an alert subscription is added and listed. Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, openBrowser, screenshot } from "./browser.ts";
import { keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

describe("the operations page in Chromium", () => {
  test("refuses a wrong token, then shows the view and adds an alert subscription", async () => {
    const { page } = keep(await openBrowser(service.origin));
    await page.goto(`${service.origin}/ops`);
    await page.getByLabel("Admin token").fill("not-the-token");
    await page.getByRole("button", { name: "Open" }).click();
    await page.getByText("That is not the deployment's admin token.").waitFor();

    await page.getByLabel("Admin token").fill(service.adminToken);
    await page.getByRole("button", { name: "Open" }).click();
    await page.getByRole("heading", { level: 2, name: "Shards" }).waitFor();
    const shards = page.getByRole("table", { name: "Shards" });
    await shards.getByRole("rowheader", { name: "SHARD_0" }).waitFor();
    assert.match((await shards.textContent()) ?? "", /of 10\.00 GB/);
    await page.getByRole("table", { name: "Queues" }).getByRole("rowheader", { name: /^apiv2-imports-/ }).waitFor();

    await page.getByLabel("Email address, or your webhook's URL").fill("ops@example.com");
    await page.getByRole("button", { name: "Subscribe" }).click();
    await page.getByRole("table", { name: "Alert subscriptions" }).getByRole("rowheader", { name: "ops@example.com" }).waitFor();
    await checkAccessibility(page, "ops");
    await screenshot(page, "ops");
  });
});
