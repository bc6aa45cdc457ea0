import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, BASE, call, createPanel, fetchWith } from "../support/helpers";

const MAILBOX_ON = { LOCAL_MAILBOX: "true" } as const;
const keep = { send: async () => undefined } as unknown as SendEmail;

async function askForReset(email: string, overrides: Record<string, unknown>) {
  const response = await fetchWith(
    { MAILER: keep, ...overrides },
    new Request(`${BASE}/auth/v1/password-reset`, { method: "POST", headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": "203.0.113.40" }, body: JSON.stringify({ email }) }),
  );
  expect(response.status).toBeLessThan(300);
}

async function operatorEmail(): Promise<string> {
  const panel = await createPanel();
  const email = `mailbox-${crypto.randomUUID().slice(0, 8)}@example.com`;
  expect((await admin("POST", `/panels/${panel.id}/operators`, { email, role: "marketer", password: "a long passphrase" })).status).toBe(201);
  return email;
}

/** The mailbox links the Worker logged. */
function loggedLinks(log: { mock: { calls: unknown[][] } }): string[] {
  return log.mock.calls.map((args) => String(args[0])).flatMap((line: string) => /^Local mailbox: .*: (https?:\/\/\S+)$/.exec(line)?.[1] ?? []);
}

afterEach(() => vi.restoreAllMocks());

describe("the local mailbox (LOCAL_MAILBOX, set by npm start only)", () => {
  it("logs a link to the password-reset mail, whose page shows it with its reset link", async () => {
    const email = await operatorEmail();
    const log = vi.spyOn(console, "log");
    await askForReset(email, MAILBOX_ON);
    const links = loggedLinks(log);
    expect(links).toHaveLength(1);
    expect(log.mock.calls.map(String).join("\n")).toContain(`"Set a new password for the panel" to ${email}`);
    const path = new URL(links[0]!).pathname;
    expect(path).toMatch(/^\/dev\/mailbox\/mail_[A-Za-z0-9]+$/);

    const page = await fetchWith(MAILBOX_ON, new Request(`${BASE}${path}`));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain("Set a new password for the panel");
    expect(html).toContain(email);
    expect(html).toMatch(/<a href="https?:\/\/[^"]+\/reset-password#token=[A-Za-z0-9_-]+">/);
    // Other ids, and the same one where the flag is off, are unknown paths.
    expect((await fetchWith(MAILBOX_ON, new Request(`${BASE}/dev/mailbox/mail_nothere`))).status).toBe(404);
    expect((await fetchWith(MAILBOX_ON, new Request(`${BASE}/dev/mailbox/..%2Fpanel-uploads`))).status).toBe(404);
    expect((await call(path)).status).toBe(404);
    expect(await (await call(path)).text()).not.toContain("reset-password");
  });

  it("is off without the flag: no mail kept, no link logged, no page", async () => {
    const email = await operatorEmail();
    const log = vi.spyOn(console, "log");
    await askForReset(email, {});
    expect(loggedLinks(log)).toEqual([]);
    await askForReset(email, { LOCAL_MAILBOX: "false" });
    expect(loggedLinks(log)).toEqual([]);
    expect((await call("/dev/mailbox/mail_anything")).status).toBe(404);
  });
});
