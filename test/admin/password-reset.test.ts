import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PASSWORD_RESET_TTL_MS, resetPassword } from "../../src/services/operators/password-reset";
import { admin, BASE, call, createPanel, fetchWith, keptMail, type KeptMail as Mail } from "../support/helpers";
import { signIn } from "../support/operators";

let count = 0;

/** Posts to an /auth/v1 route through the Worker with a MAILER that keeps what it is given, once the answer's background work is done. */
async function auth(path: string, body: unknown, mails: Mail[] = [], headers: Record<string, string> = {}) {
  const mailer = { send: async (message: Mail) => void mails.push(message) } as unknown as SendEmail;
  const response = await fetchWith(
    { MAILER: mailer },
    new Request(`${BASE}/auth/v1${path}`, { method: "POST", headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": "203.0.113.7", ...headers }, body: JSON.stringify(body) }),
  );
  return { status: response.status, body: (await response.json()) as any };
}

async function operator(password = "first passphrase") {
  const panel = await createPanel();
  const email = `reset${++count}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  expect((await admin("POST", `/panels/${panel.id}/operators`, { email, role: "marketer", password })).status).toBe(201);
  return { panel, email, password };
}

function tokenOf(mail: Mail): string {
  const link = /(https?:\/\/\S+\/reset-password#token=([A-Za-z0-9_-]+))/.exec(mail.text);
  expect(link).not.toBeNull();
  return link![2]!;
}

describe("password reset by an emailed one-time link", () => {
  it("answers the same for an unknown address; mails a one-time link to a known one, storing only its hash", async () => {
    const { email } = await operator();
    const mails: Mail[] = [];
    const known = await auth("/password-reset", { email }, mails, { "cf-connecting-ip": "203.0.113.1" });
    const unknown = await auth("/password-reset", { email: `nobody-${count}@example.com` }, mails, { "cf-connecting-ip": "203.0.113.1" });
    expect(known.status).toBe(202);
    expect(unknown).toEqual(known);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: email, subject: "Set a new password for the panel" });
    expect(mails[0]!.text).toContain(`${env.PUBLIC_BASE_URL}/reset-password#token=`);
    const token = tokenOf(mails[0]!);
    const stored = await env.DB.prepare("SELECT token_hash, expires_at, used_at FROM password_resets WHERE token_hash = ?").bind(token).first();
    expect(stored).toBeNull();
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM password_resets r JOIN operators o ON o.id = r.operator_id WHERE o.email = ?").bind(email).first("n")).toBe(1);

    expect((await auth("/password-reset", { email: "not an address" })).body.errors[0].field).toBe("email");
    const crossSite = await auth("/password-reset", { email }, mails, { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect(mails).toHaveLength(1);
  });

  it("builds the link from PUBLIC_BASE_URL, not from the Host the asker sent", async () => {
    const { email } = await operator();
    const { MAILER, mails } = keptMail();
    const response = await fetchWith(
      { MAILER },
      new Request("http://evil.example/auth/v1/password-reset", {
        method: "POST",
        headers: { host: "evil.example", origin: "http://evil.example", "content-type": "application/json", "cf-connecting-ip": "203.0.113.9" },
        body: JSON.stringify({ email }),
      }),
    );
    expect(response.status).toBe(202);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text).toContain(`${env.PUBLIC_BASE_URL}/reset-password#token=`);
    expect(mails[0]!.text).not.toContain("evil.example/reset-password");
  });

  it("sets the new password once, ends every session of the account and the account's other links", async () => {
    const { email, password } = await operator();
    const before = await signIn(email, password);
    const mails: Mail[] = [];
    await auth("/password-reset", { email }, mails);
    await auth("/password-reset", { email }, mails);
    const [older, newer] = mails.map(tokenOf);

    const weak = await auth("/password-reset/confirm", { token: newer, password: "short" });
    expect(weak.status).toBe(400);
    expect(weak.body.errors[0]).toMatchObject({ field: "password", message: "must be at least 10 characters" });

    const done = await auth("/password-reset/confirm", { token: newer, password: "second passphrase" });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.reset).toBe(true);
    // The session opened before the reset is over; the old password is wrong, the new one works.
    expect((await call("/auth/v1/session", { headers: { cookie: before.cookie } })).status).toBe(401);
    await expect(signIn(email, password)).rejects.toThrow(/401/);
    const after = await signIn(email, "second passphrase");
    expect(after.body.operator.email).toBe(email);

    for (const token of [newer, older]) {
      const again = await auth("/password-reset/confirm", { token, password: "third passphrase" });
      expect(again.status).toBe(400);
      expect(again.body.errors[0]).toMatchObject({ field: "token", message: expect.stringMatching(/expired or was already used/) });
    }
    expect((await auth("/password-reset/confirm", { token: "made-up", password: "third passphrase" })).body.errors[0].field).toBe("token");
    await signIn(email, "second passphrase");
  });

  it("refuses a link past its expiry", async () => {
    const { email } = await operator();
    const mails: Mail[] = [];
    await auth("/password-reset", { email }, mails);
    const token = tokenOf(mails[0]!);
    expect(await resetPassword(env.DB, token, "late passphrase", Date.now() + PASSWORD_RESET_TTL_MS + 1_000)).toMatchObject({ ok: false, problem: { kind: "invalid", fields: [{ field: "token" }] } });
    // Still unused and within its time, it works.
    expect((await auth("/password-reset/confirm", { token, password: "in-time passphrase" })).status).toBe(200);
  });

  it("sends nothing to a disabled account, with the same answer", async () => {
    const { email } = await operator();
    await env.DB.prepare("UPDATE operators SET disabled = 1 WHERE email = ?").bind(email).run();
    const mails: Mail[] = [];
    expect((await auth("/password-reset", { email }, mails)).status).toBe(202);
    expect(mails).toEqual([]);
  });

  it("rate-limits requests per address asked for, known or not, and per client address", async () => {
    const { email } = await operator();
    const mails: Mail[] = [];
    for (const asked of [email, `unknown-${count}@example.com`]) {
      for (let i = 0; i < 5; i++) expect((await auth("/password-reset", { email: asked }, mails, { "cf-connecting-ip": `198.51.100.${i + 10}` })).status).toBe(202);
      const limited = await auth("/password-reset", { email: asked }, mails, { "cf-connecting-ip": "198.51.100.99" });
      expect(limited.status).toBe(429);
    }
    expect(mails).toHaveLength(5);
    for (let i = 0; i < 30; i++) expect((await auth("/password-reset", { email: `many${i}-${count}@example.com` }, [], { "cf-connecting-ip": "192.0.2.77" })).status).toBe(202);
    expect((await auth("/password-reset", { email }, mails, { "cf-connecting-ip": "192.0.2.77" })).status).toBe(429);
  });
});
