// Sender and tracking domains in the panel, in Chromium, against a service started as
// `EMAIL_PROVIDER=ses DOH_URL=… npm start` starts it: DNS answers come from the loopback stand-in
// of the DNS-over-HTTPS JSON API (test/node/receiver.ts), where the test publishes the records
// it copied from the screen, as an operator publishes them at a DNS host. Screenshots go to
// test-results/e2e/.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import { after, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { startReceiver } from "../node/receiver.ts";
import { checkAccessibility, confirmInDialog, screenshot, signInAs } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

let dns: { server: Server; url: string };
const DOMAIN = "shop.example.com";

serviceForThisFile({
  options: async () => {
    dns = await startReceiver();
    return { env: { EMAIL_PROVIDER: "ses", DOH_URL: `${dns.url}/dns/e2e` } };
  },
});
after(async () => {
  await new Promise((resolve) => dns?.server.close(resolve));
});

/** Publishes records at the DNS stand-in: {"name": [TXT…], "name CNAME": [target]}. */
async function publishDns(records: Record<string, string[]>): Promise<void> {
  const response = await fetch(`${dns.url}/__dns/e2e`, { method: "PUT", body: JSON.stringify(records) });
  assert.equal(response.status, 204);
}

async function signedIn(email: string, password: string): Promise<Page> {
  return keep(await signInAs(service, email, password)).page;
}

const ownerPage = () => signedIn(service.printed["owner email"]!, service.printed.password!);
const nav = (page: Page, screen: string) => page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: screen, exact: true });

async function openSenderDomains(page: Page): Promise<void> {
  await nav(page, "Sender domains").click();
  await page.getByRole("heading", { level: 1, name: "Sender domains" }).waitFor();
}

const clipboard = (page: Page) => page.evaluate(() => (globalThis as any).navigator.clipboard.readText()) as Promise<string>;

/** Presses a record row's copy button and answers what landed on the clipboard. */
async function copyFromRow(page: Page, row: string, button: "Copy name" | "Copy value"): Promise<string> {
  await page.getByRole("row", { name: row, exact: true }).getByRole("button", { name: button }).click();
  return clipboard(page);
}

describe("sender domains in Chromium", () => {
  test("npm start and the panel say that real email is refused while PUBLIC_BASE_URL is http on loopback", async () => {
    const problem = `real email is refused: PUBLIC_BASE_URL is ${service.origin}: links in real email must use https`;
    assert.ok(service.output().includes(`Warning: EMAIL_PROVIDER is ses, but ${problem}: no campaign or journey email is sent until it is fixed.`), service.output());
    assert.ok(service.output().includes(`  email        ses: ${problem}`));
    const page = await ownerPage();
    assert.equal(await page.getByRole("alert").textContent(), `Email is not sent: ${problem}.`);
    await openSenderDomains(page);
    assert.equal(await page.getByRole("alert").textContent(), `Email is not sent: ${problem}.`);
  });

  test("an owner adds a domain, copies its records, publishes them and verifies it: each check fails, then passes", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await ownerPage();
    await openSenderDomains(page);
    await page.getByText("No sender domains yet").waitFor();
    await checkAccessibility(page, "sender-domains-empty");

    const form = page.getByRole("form", { name: "Add a sender domain" });
    await form.getByLabel("Sender domain").fill("shop_example");
    await form.getByRole("button", { name: "Add domain" }).click();
    await form.getByText('must be a domain with at least two labels, such as example.com, not "shop_example"', { exact: true }).waitFor();
    await form.getByLabel("Sender domain").fill("Shop.Example.com.");
    await form.getByRole("button", { name: "Add domain" }).click();
    const card = page.getByRole("listitem", { name: `Sender domain ${DOMAIN}` });
    await card.getByText("not checked yet", { exact: true }).first().waitFor();

    // What the screen copies is exactly what the API lists to publish.
    const listed = (await adminCall("GET", `/panels/${panelId}/sender-domains/${DOMAIN}`)).records as { purpose: string; name: string; value: string }[];
    const expected = Object.fromEntries(listed.map((r) => [r.purpose, r]));
    const spf = await copyFromRow(page, `SPF record of ${DOMAIN}`, "Copy value");
    assert.equal(spf, "v=spf1 include:amazonses.com ~all");
    const dkimName = await copyFromRow(page, `DKIM (RSA) record of ${DOMAIN}`, "Copy name");
    assert.equal(dkimName, `apiv2r._domainkey.${DOMAIN}`);
    const dkim = await copyFromRow(page, `DKIM (RSA) record of ${DOMAIN}`, "Copy value");
    assert.equal(dkim, expected.dkim!.value);
    assert.match(dkim, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    const ed = await copyFromRow(page, `DKIM (Ed25519, optional) record of ${DOMAIN}`, "Copy value");
    assert.equal(ed, expected.dkim_ed25519!.value);
    const dmarcName = await copyFromRow(page, `DMARC record of ${DOMAIN}`, "Copy name");
    const dmarc = await copyFromRow(page, `DMARC record of ${DOMAIN}`, "Copy value");
    assert.equal(dmarc, "v=DMARC1; p=none; adkim=r; aspf=r");
    await card.getByRole("button", { name: "Copy all as zone-file lines" }).click();
    const zone = await clipboard(page);
    assert.match(zone, new RegExp(`^apiv2r\\._domainkey\\.${DOMAIN.replace(/\./g, "\\.")}\\. 3600 IN TXT "v=DKIM1; k=rsa; p=[^"]{200,}" "[^"]+"$`, "m"));
    assert.ok(zone.includes(`_dmarc.${DOMAIN}. 3600 IN TXT "v=DMARC1; p=none; adkim=r; aspf=r"`));

    // Nothing published yet: every check fails with its reason.
    await card.getByRole("button", { name: `Verify ${DOMAIN}`, exact: true }).click();
    await card.getByText("not verified", { exact: true }).waitFor();
    const spfRow = page.getByRole("row", { name: `SPF record of ${DOMAIN}`, exact: true });
    await spfRow.getByText("no SPF record (v=spf1) is published").waitFor();
    assert.equal(await spfRow.getByText("fail", { exact: true }).count(), 1);
    await checkAccessibility(page, "sender-domains-failed");
    await screenshot(page, "sender-domain-not-verified");

    // SPF of another provider and the records as copied: SPF still fails, naming why.
    await publishDns({ [DOMAIN]: ["v=spf1 include:_spf.google.com ~all"], [dkimName]: [dkim], [dmarcName]: [dmarc] });
    await card.getByRole("button", { name: `Verify ${DOMAIN}`, exact: true }).click();
    await spfRow.getByText("the SPF record does not include:amazonses.com, the sending provider's servers").waitFor();
    await page.getByRole("row", { name: `DKIM (RSA) record of ${DOMAIN}`, exact: true }).getByText("pass", { exact: true }).waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/sender-domains/${DOMAIN}`)).state, "failed");

    await publishDns({ [DOMAIN]: [spf], [`apiv2e._domainkey.${DOMAIN}`]: [ed] });
    await card.getByRole("button", { name: `Verify ${DOMAIN}`, exact: true }).click();
    await card.getByText("verified", { exact: true }).waitFor();
    for (const label of ["SPF", "DKIM (RSA)", "DKIM (Ed25519, optional)", "DMARC"]) {
      assert.equal(await page.getByRole("row", { name: `${label} record of ${DOMAIN}`, exact: true }).getByText("pass", { exact: true }).count(), 1, label);
    }
    assert.equal((await adminCall("GET", `/panels/${panelId}/sender-domains/${DOMAIN}`)).state, "verified");
    await checkAccessibility(page, "sender-domains-verified");
    await screenshot(page, "sender-domain-verified");
  });

  test("a campaign from a domain that is not verified is refused in the Campaigns screen, naming the sender email; from the verified one it is scheduled", async () => {
    const panelId = service.printed["demo panel"]!;
    const response = await fetch(`${dns.url}/__files/e2e-contacts.csv`, { method: "PUT", headers: { "content-type": "text/csv" }, body: "EMAIL,NAME\nann@example.org,Ann\n" });
    assert.equal(response.status, 204);
    const page = await ownerPage();
    await nav(page, "Campaigns").click();
    await page.getByRole("heading", { level: 1, name: "Campaigns" }).waitFor();
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel("Campaign name").fill("Domain check");
    await page.getByLabel("Subject line").fill("Hello");
    await page.getByLabel("Sender name").fill("Shop");
    await page.getByLabel("Sender email").fill("news@elsewhere.example.org");
    await page.getByLabel("A contacts file, imported into a new list").check();
    await page.getByLabel("Contacts file URL").fill(`${dns.url}/files/e2e-contacts.csv`);
    await page.getByLabel("New list name").fill("Domain check readers");
    await page.getByLabel("Send at").fill(`${day}T09:30`);
    await page.getByLabel("Notify").fill("ops@example.com");
    // A new email starts in the visual editor; hand-written HTML goes in "Code".
    await page.getByRole("button", { name: "Code", exact: true }).click();
    await page.getByLabel("HTML body").fill("<p>Hello</p>");
    await page.getByRole("button", { name: "Schedule campaign" }).click();
    const refusal =
      "the sender domain elsewhere.example.org is not verified in this panel: add it (POST /admin/v1/panels/{panel}/sender-domains), publish its SPF, DKIM and DMARC records and verify it";
    await page.getByRole("form", { name: "New campaign" }).getByText(refusal, { exact: true }).waitFor();
    await screenshot(page, "campaign-refused-unverified-sender");
    assert.equal((await adminCall("GET", `/panels/${panelId}/campaigns`)).campaigns.length, 0);

    await page.getByLabel("Sender email").fill(`news@${DOMAIN}`);
    await page.getByRole("button", { name: "Schedule campaign" }).click();
    await page.getByText(`Campaign “Domain check” scheduled for ${day} 09:30:00`).waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/campaigns`)).campaigns.length, 1);
  });

  test("the tracking domain: its CNAME to publish, a failed check, then verified; a viewer reads but cannot act", async () => {
    const panelId = service.printed["demo panel"]!;
    const page = await ownerPage();
    await openSenderDomains(page);
    await page.getByText("No tracking domain").waitFor();
    const form = page.getByRole("form", { name: "Set the tracking domain" });
    await form.getByLabel("Tracking host").fill(`t.${DOMAIN}`);
    await form.getByRole("button", { name: "Set tracking domain" }).click();
    const card = page.getByRole("region", { name: `Tracking domain t.${DOMAIN}`, exact: true });
    await card.waitFor();
    const target = await copyFromRow(page, `CNAME record of t.${DOMAIN}`, "Copy value");
    assert.equal(target, new URL(service.origin).hostname);

    await card.getByRole("button", { name: `Verify t.${DOMAIN}` }).click();
    await card.getByRole("status").getByText(/^Not verified: /).waitFor();
    await publishDns({ [`t.${DOMAIN} CNAME`]: [target] });
    await card.getByRole("button", { name: `Verify t.${DOMAIN}` }).click();
    await card.getByText("The CNAME points at the service: the domain is verified.").waitFor();
    assert.equal((await adminCall("GET", `/panels/${panelId}/tracking-domain`)).verified, true);
    await checkAccessibility(page, "tracking-domain-verified");
    await screenshot(page, "tracking-domain-verified");

    await adminCall("POST", `/panels/${panelId}/operators`, { email: "domains-viewer@example.com", role: "viewer", password: "viewer passphrase" });
    const viewer = await signedIn("domains-viewer@example.com", "viewer passphrase");
    await openSenderDomains(viewer);
    // As on the panel's other screens: buttons locked with the role they need, forms replaced by the sentence saying so.
    await viewer.getByText("Adding a sender domain needs the owner role; you are a viewer in this panel.").waitFor();
    await viewer.getByText("Setting the tracking domain needs the owner role; you are a viewer in this panel.").waitFor();
    await viewer.getByRole("row", { name: `DKIM (RSA) record of ${DOMAIN}` }).waitFor();
    for (const name of [`Verify ${DOMAIN}`, `Remove ${DOMAIN}`, `Verify t.${DOMAIN}`, `Remove t.${DOMAIN}`]) {
      const button = viewer.getByRole("button", { name, exact: true });
      assert.equal(await button.isDisabled(), true, name);
      assert.equal(await button.getAttribute("title"), "This needs the owner role", name);
    }
    assert.equal(await viewer.getByRole("form", { name: "Add a sender domain" }).count(), 0);
    assert.equal(await viewer.getByRole("form", { name: "Set the tracking domain" }).count(), 0);
    await checkAccessibility(viewer, "sender-domains-viewer");
    await screenshot(viewer, "sender-domains-viewer");

    // The owner removes the sender domain (after confirming): mail from it is refused again.
    await page.getByRole("button", { name: `Remove ${DOMAIN}`, exact: true }).click();
    await confirmInDialog(page, "Remove sender domain");
    await page.getByText("No sender domains yet").waitFor();
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/sender-domains`)).sender_domains, []);
  });
});
