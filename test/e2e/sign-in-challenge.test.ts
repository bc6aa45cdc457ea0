// Issue 41 (lockout): someone else's failed sign-ins for the operator's email never lock the
// operator out. They make a proof-of-work challenge due, which the panel solves by itself.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openBrowser, screenshot } from "./browser.ts";
import { keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

async function auth(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${service.origin}/auth/v1${path}`, {
    method: "POST",
    headers: { origin: service.origin, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

test("the panel signs in while the account is under a challenge: it solves it and retries", async () => {
  const email = service.printed["owner email"]!;
  // Guesses that put the account under a challenge (fewer than the per-address limit, from this same machine).
  for (let i = 0; i < 5; i++) assert.equal((await auth("/sign-in", { email, password: `a guess ${i}` })).status, 401);
  const due = await auth("/sign-in/challenge", { email });
  assert.equal(due.body.required, true);
  const bare = await auth("/sign-in", { email, password: service.printed.password! });
  assert.equal(bare.status, 400);
  assert.equal(bare.body.errors[0].field, "challenge");

  const page = keep(await openBrowser(service.origin)).page;
  const signIns: unknown[] = [];
  page.on("request", (request) => {
    if (request.url().endsWith("/auth/v1/sign-in")) signIns.push(request.postDataJSON());
  });
  await page.goto(`${service.origin}/`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(service.printed.password!);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor({ timeout: 30_000 });
  await screenshot(page, "signed-in-after-challenge");

  assert.equal(signIns.length, 2, "one refused for the missing challenge, one with it solved");
  const solved = signIns[1] as { challenge?: { token: string; nonce: string } };
  assert.ok(solved.challenge?.token && solved.challenge.nonce, JSON.stringify(solved));
  // The sign-in cleared the account's failures.
  assert.deepEqual((await auth("/sign-in/challenge", { email })).body, { required: false });
});
