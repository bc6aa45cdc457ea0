// Passkeys in Chromium against `npm start`, with a DevTools-protocol virtual authenticator (a
// CTAP2 platform authenticator holding resident keys, that verifies the user): the owner adds a
// passkey on "Your account", signs out, and signs in again with the passkey alone. The page is
// opened on localhost, not 127.0.0.1: an IP address cannot be a WebAuthn relying party ID.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkAccessibility, confirmInDialog, openBrowser, screenshot } from "./browser.ts";
import { keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

describe("passkeys in Chromium", () => {
  test("the owner adds a passkey, signs out, signs in with it, and deletes it", async () => {
    const origin = service.origin.replace("127.0.0.1", "localhost");
    const { page, context } = keep(await openBrowser(origin));
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });

    await page.goto(`${origin}/`);
    await page.getByLabel("Email").fill(service.printed["owner email"]!);
    await page.getByLabel("Password").fill(service.printed.password!);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();

    const panelId = service.printed["demo panel"]!;
    await page.goto(`${origin}/panels/${panelId}/account`);
    await page.getByRole("heading", { level: 1, name: "Your account" }).waitFor();
    await page.getByText("No passkeys yet.").waitFor();
    const form = page.getByRole("form", { name: "Add a passkey" });
    await form.getByLabel("Passkey name").fill("Virtual key");
    await form.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("list", { name: "Your passkeys" }).getByText("Virtual key", { exact: true }).waitFor();
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0]!.isResidentCredential, true);
    await checkAccessibility(page, "account with a passkey");
    await screenshot(page, "account-passkey");

    await page.getByRole("button", { name: "Sign out" }).first().click();
    await page.getByRole("heading", { level: 1, name: "Sign in to the panel" }).waitFor();
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    const after = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    assert.ok(after.credentials[0]!.signCount >= 1);

    await page.goto(`${origin}/panels/${panelId}/account`);
    await page.getByRole("button", { name: "Delete Virtual key" }).click();
    await confirmInDialog(page, "Delete passkey");
    await page.getByText("No passkeys yet.").waitFor();
  });
});
