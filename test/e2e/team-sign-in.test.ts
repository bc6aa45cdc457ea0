// Joining a panel and signing in to it, in Chromium against `npm start`: an owner invites a
// teammate, the teammate opens the mailed link (the local mailbox), chooses a password and is
// signed in.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Secret, TOTP } from "otpauth";
import type { Page } from "playwright-core";
import { checkAccessibility, confirmInDialog, openBrowser, screenshot, signInAsOwner } from "./browser.ts";
import { adminCall, keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

/** The local mailbox link (LOCAL_MAILBOX, printed by npm start) of the newest mail to `to` with `subject`, once it is sent. */
async function mailboxLink(to: string, subject: string, after = 0): Promise<string> {
  const pattern = new RegExp(`Local mailbox: "${subject.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}" to ${to.replace(".", "\\.")}: (\\S+)`, "g");
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 300))) {
    const links = [...service.output().matchAll(pattern)].map((m) => m[1]!);
    if (links.length > after) return links.at(-1)!;
    if (Date.now() > deadline) throw new Error(`no mail "${subject}" to ${to} in npm start's output`);
  }
}

function mailCount(to: string): number {
  return service.output().split(`to ${to}: `).length - 1;
}

/** The code an authenticator app shows for `secret` at `at`. */
const codeOf = (secret: string, at: number) => new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: "SHA1" }).generate({ timestamp: at });

async function newPage(): Promise<Page> {
  return keep(await openBrowser(service.origin)).page;
}

describe("team sign-in in Chromium", () => {
  test("an owner invites a teammate; resending replaces the link; the teammate sets a password, is signed in, and signs in again later", async () => {
    const owner = keep(await signInAsOwner(service)).page;
    const panelId = service.printed["demo panel"]!;
    await owner.goto(`${service.origin}/panels/${panelId}/team`);
    await owner.getByRole("heading", { level: 1, name: "Team" }).waitFor();
    const form = owner.getByRole("form", { name: "Invite a teammate" });
    const email = "invitee@example.com";
    await form.getByLabel("Teammate's email").fill(email);
    await form.getByLabel("Role").selectOption("marketer");
    await form.getByRole("button", { name: "Invite" }).click();
    await form.getByText(`Invitation mailed to ${email}`).waitFor();
    const first = await mailboxLink(email, "Join the panel Demo");
    await owner.getByRole("cell", { name: email, exact: true }).waitFor();
    await checkAccessibility(owner, "team with an invitation");
    await screenshot(owner, "team-invited");

    // Resending mails a new link; the first one then says it was replaced.
    await owner.getByRole("button", { name: `Resend the invitation to ${email}` }).click();
    const second = await mailboxLink(email, "Join the panel Demo", 1);
    assert.notEqual(second, first);

    const invitee = await newPage();
    const linkIn = async (mailbox: string) => {
      await invitee.goto(mailbox);
      return invitee.locator("a").filter({ hasText: "/invitation#token=" }).getAttribute("href");
    };
    const stale = (await linkIn(first))!;
    const fresh = (await linkIn(second))!;
    assert.ok(fresh.startsWith(`${service.origin}/invitation#token=`), fresh);
    await invitee.goto(stale);
    await invitee.getByRole("alert").getByText(/replaced by a newer invitation mail/).waitFor();
    await checkAccessibility(invitee, "invitation replaced");
    await screenshot(invitee, "invitation-replaced");

    await invitee.goto(fresh);
    await invitee.getByText(/You are invited to\s+Demo\s+as\s+marketer/).waitFor();
    await invitee.getByLabel("Choose a password").fill("short");
    await invitee.getByLabel("Repeat the password").fill("short");
    await invitee.getByRole("button", { name: "Set the password and sign in" }).click();
    await invitee.getByText("must be at least 10 characters", { exact: true }).waitFor();
    await checkAccessibility(invitee, "invitation form");
    await screenshot(invitee, "invitation-form");
    await invitee.getByLabel("Your name (optional)").fill("Ines");
    await invitee.getByLabel("Choose a password").fill("invitee passphrase");
    await invitee.getByLabel("Repeat the password").fill("invitee passphrase");
    await invitee.getByRole("button", { name: "Set the password and sign in" }).click();
    await invitee.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.match((await invitee.locator("header").textContent()) ?? "", /invitee@example\.com.*marketer/);

    // The link worked once.
    await invitee.goto(fresh);
    await invitee.getByRole("alert").getByText(/already accepted/).waitFor();

    // Signed out, the teammate signs in with the password they chose.
    await invitee.goto(`${service.origin}/`);
    await invitee.getByRole("button", { name: "Sign out" }).click();
    await invitee.getByLabel("Email").fill(email);
    await invitee.getByLabel("Password").fill("invitee passphrase");
    await invitee.getByRole("button", { name: "Sign in", exact: true }).click();
    await invitee.getByRole("heading", { level: 1, name: "Demo" }).waitFor();

    const operators = await adminCall("GET", `/panels/${panelId}/operators`);
    assert.equal(operators.operators.find((o: { email: string }) => o.email === email).role, "marketer");
    assert.deepEqual((await adminCall("GET", `/panels/${panelId}/invitations`)).invitations, []);

    // A revoked invitation's link says so.
    await owner.reload();
    await form.getByLabel("Teammate's email").fill("never@example.com");
    await form.getByRole("button", { name: "Invite" }).click();
    const revokedMail = await mailboxLink("never@example.com", "Join the panel Demo");
    await owner.getByRole("button", { name: "Revoke the invitation of never@example.com" }).click();
    await confirmInDialog(owner, "Revoke invitation");
    await owner.getByRole("cell", { name: "never@example.com", exact: true }).waitFor({ state: "detached" });
    const revokedLink = (await linkIn(revokedMail))!;
    await invitee.goto(revokedLink);
    await invitee.getByRole("alert").getByText(/revoked by the panel's owner/).waitFor();
    assert.equal(mailCount("never@example.com"), 1);
  });

  test("an operator turns on two-factor sign-in, signs out, and signs in with the password and a code", async () => {
    const panelId = service.printed["demo panel"]!;
    const email = "careful@example.com";
    await adminCall("POST", `/panels/${panelId}/operators`, { email, role: "viewer", password: "careful passphrase" });
    const page = await newPage();
    const signIn = async () => {
      await page.goto(`${service.origin}/`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("careful passphrase");
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
    };
    await signIn();
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Your account" }).click();
    await page.getByRole("heading", { level: 1, name: "Your account" }).waitFor();
    await page.getByRole("button", { name: "Set up two-factor sign-in" }).click();
    const key = page.locator("code.record-value");
    await key.waitFor();
    const secret = (await key.textContent())!;
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.match((await page.getByRole("link", { name: "open it in your authenticator app" }).getAttribute("href"))!, /^otpauth:\/\/totp\//);
    await checkAccessibility(page, "two-factor enrolment");
    await screenshot(page, "two-factor-enrolment");
    const confirm = page.getByRole("form", { name: "Confirm the authenticator" });
    await confirm.getByLabel("Code").fill("000000" === codeOf(secret, Date.now()) ? "111111" : "000000");
    await confirm.getByRole("button", { name: "Confirm" }).click();
    await confirm.getByText(/is not the current code of your authenticator/).waitFor();
    const now = Date.now();
    await confirm.getByLabel("Code").fill(codeOf(secret, now));
    await confirm.getByRole("button", { name: "Confirm" }).click();
    const codes = page.getByRole("list", { name: "Recovery codes" });
    await codes.waitFor();
    assert.equal(await codes.getByRole("listitem").count(), 10);
    await page.getByText(/On: signing in asks for your authenticator's code/).waitFor();
    await checkAccessibility(page, "two-factor on");
    await screenshot(page, "two-factor-on");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the panel" }).waitFor();
    await signIn();
    await page.getByRole("heading", { level: 1, name: "Two-factor sign-in" }).waitFor();
    await checkAccessibility(page, "two-factor sign-in");
    await screenshot(page, "two-factor-sign-in");
    // The code used to confirm is spent; the next step's code is the one the app shows soon after.
    await page.getByRole("textbox", { name: "Code", exact: true }).fill(codeOf(secret, now + 30_000));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
    assert.match((await page.locator("header").textContent()) ?? "", /careful@example\.com/);
  });
});
