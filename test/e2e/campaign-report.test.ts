// A campaign's report in Chromium, against the service as `npm start` starts it: a campaign to a
// list is sent (the cron tick start.ts makes), its recipients open and click through the tracking
// links in the copies the outbox kept, and the report shows those numbers, the links, the chart
// and the recipients behind a number; then Home shows the sends among its last 30 days.
// Screenshots go to test-results/e2e/.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

async function ownerPage(): Promise<Page> {
  return keep(await signInAsOwner(service)).page;
}

/** The tracking paths in the HTML part of a kept copy (base64 after its part headers). */
function trackingPaths(raw: string): { open: string; clicks: string[] } {
  const part = /Content-Type: text\/html; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+?)\r\n--/.exec(raw)![1]!;
  const html = Buffer.from(part.replace(/\r\n/g, ""), "base64").toString("utf8");
  const paths = (kind: string) => [...html.matchAll(new RegExp(`https?://[^/"]+(/t/${kind}/[^"]+)`, "g"))].map((m) => m[1]!.replace(/&amp;/g, "&"));
  return { open: paths("o")[0]!, clicks: paths("c") };
}

describe("campaign report in Chromium", () => {
  test("the report of a sent campaign shows the opens and clicks made through its tracking links", async () => {
    const panelId = service.printed["demo panel"]!;
    const list = await adminCall("POST", `/panels/${panelId}/lists`, { name: "Report readers" });
    for (const email of ["ann@example.com", "ben@example.com", "cat@example.com"]) {
      const query = new URLSearchParams({ type: "contact", activity: "add", apikey: service.printed["API key"]!, data: JSON.stringify({ EMAIL: email }), listid: String(list.id) });
      assert.equal(((await (await fetch(`${service.origin}/apiv2?${query}`)).json()) as { result: string }).result, "Success");
    }
    const campaign = await adminCall("POST", `/panels/${panelId}/campaigns`, {
      name: "Report test",
      subject: "Our news",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: `<p>News</p><a href="https://shop.example.com/sale">Sale</a> <a href="https://shop.example.com/new">New</a>`,
      audience: { lists: [list.id] },
    });
    // Without a schedule it is published at the next tick of the cron.
    await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
    let copies: Array<{ id: string; to: string }> = [];
    for (const deadline = Date.now() + 90_000; copies.length < 3; await new Promise((r) => setTimeout(r, 500))) {
      copies = (await adminCall("GET", `/panels/${panelId}/outbox?campaign=${campaign.id}`)).messages;
      if (Date.now() > deadline) throw new Error(`the campaign was not sent: ${copies.length} copies`);
    }
    const links = new Map<string, { open: string; clicks: string[] }>();
    for (const copy of copies) links.set(copy.to, trackingPaths((await adminCall("GET", `/panels/${panelId}/outbox/${copy.id}`)).raw));
    const hit = async (path: string) => assert.ok([200, 302].includes((await fetch(`${service.origin}${path}`, { redirect: "manual" })).status), path);
    await hit(links.get("ann@example.com")!.open);
    await hit(links.get("ann@example.com")!.open);
    await hit(links.get("ben@example.com")!.open);
    await hit(links.get("ann@example.com")!.clicks[0]!);
    await hit(links.get("ben@example.com")!.clicks[0]!);
    await hit(links.get("ben@example.com")!.clicks[1]!);

    const page = await ownerPage();
    await page.goto(`${service.origin}/panels/${panelId}/campaigns/${campaign.id}`);
    await page.getByRole("heading", { level: 1, name: "Report test" }).waitFor();
    const number = async (label: string) => (await page.getByRole("button", { name: new RegExp(`^${label}: `) }).textContent())?.trim();
    await page.getByRole("heading", { level: 2, name: "Report", exact: true }).waitFor();
    assert.deepEqual(
      [await number("Sent"), await number("Opens"), await number("Unique opens"), await number("Clicks"), await number("Unique clicks")],
      ["3", "3", "2", "3", "2"],
    );
    assert.match((await page.locator('dl[aria-label="Rates"]').textContent()) ?? "", /Open rate66\.7%Click-through rate66\.7%/);
    const top = page.getByRole("table", { name: "Most clicked links" });
    assert.deepEqual(await top.getByRole("row").allTextContents(), ["LinkClicks", "https://shop.example.com/sale2", "https://shop.example.com/new1"]);
    await page.getByRole("img", { name: "Opens and clicks per hour" }).locator("canvas").waitFor();

    await page.getByRole("button", { name: /^Unique clicks: 2/ }).click();
    const clicked = page.getByRole("table", { name: "Recipients: Clicked" });
    await clicked.waitFor();
    assert.deepEqual((await clicked.getByRole("row").allTextContents()).slice(1).map((row) => row.split("sent")[0]), ["ann@example.com", "ben@example.com"]);
    const download = await page.getByRole("link", { name: "Download these recipients as CSV" }).getAttribute("href");
    assert.equal(download, `/admin/v1/panels/${panelId}/campaigns/${campaign.id}/recipients?filter=clicked&format=csv`);
    await checkAccessibility(page, "campaign-report");
    await screenshot(page, "campaign-report");

    // Home: the last 30 days from the aggregates, the campaign's three sends among them.
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Home", exact: true }).click();
    const sends = page.getByRole("region", { name: "Sends per day by channel" });
    await sends.getByRole("img", { name: "Sends per day by channel" }).locator("canvas").waitFor();
    await page.getByRole("region", { name: "Contacts over time" }).locator("canvas").waitFor();
    await sends.getByText("The figures per day").click();
    const rows = await sends.getByRole("table", { name: "Sends per day by channel, per day (UTC)" }).getByRole("row").allTextContents();
    assert.equal(rows[0], "Dayemail");
    assert.match(rows.at(-1)!, /^\d{4}-\d\d-\d\d3$/);
    await checkAccessibility(page, "home-history");
    await screenshot(page, "home-history");
  });
});
