import { env } from "cloudflare:workers";
import { Secret, TOTP } from "otpauth";
import { describe, expect, it } from "vitest";
import { admin, BASE, call, createPanel } from "../support/helpers";
import { operatorWithRole, type OperatorSession } from "../support/operators";

/** The authenticator's code for `secret` at `at` (its step), as an app computes it. */
const codeOf = (secret: string, at = Date.now()) => new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: "SHA1" }).generate({ timestamp: at });

let address = 0;
async function post(path: string, body: unknown, session?: OperatorSession) {
  const response = await call(`/auth/v1${path}`, {
    method: "POST",
    headers: {
      origin: BASE,
      "content-type": "application/json",
      "cf-connecting-ip": `198.51.100.${++address % 250}`,
      ...(session ? { cookie: session.cookie, "x-csrf-token": session.csrf } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any, cookie: response.headers.get("set-cookie") };
}

/** An operator with two-factor sign-in on: their secret and recovery codes. */
async function enrolled(role: "owner" | "marketer" = "marketer") {
  const panel = await createPanel();
  const session = await operatorWithRole(panel.id, role);
  const setup = await post("/two-factor/setup", {}, session);
  expect(setup.status).toBe(200);
  const confirmed = await post("/two-factor/confirm", { code: codeOf(setup.body.secret) }, session);
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  return { panel, session, secret: setup.body.secret as string, recoveryCodes: confirmed.body.recovery_codes as string[] };
}

describe("TOTP two-factor sign-in", () => {
  it("enrols with a secret shown as text and otpauth:// URI, confirmed by a code; the secret is stored encrypted", async () => {
    const panel = await createPanel();
    const session = await operatorWithRole(panel.id, "viewer");
    expect((await call("/auth/v1/two-factor", { headers: { cookie: session.cookie } }).then((r) => r.json())) as any).toEqual({ enabled: false, recovery_codes_left: 0, required: false });
    const setup = await post("/two-factor/setup", {}, session);
    expect(setup.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.body.uri).toMatch(new RegExp(`^otpauth://totp/.*${encodeURIComponent(session.email).replace(".", "\\.")}\\?.*secret=${setup.body.secret}`));
    const stored = await env.DB.prepare("SELECT t.secret FROM operator_totp t JOIN operators o ON o.id = t.operator_id WHERE o.email = ?").bind(session.email).first<string>("secret");
    expect(stored).not.toContain(setup.body.secret);

    const wrong = await post("/two-factor/confirm", { code: "000000" === codeOf(setup.body.secret) ? "111111" : "000000" }, session);
    expect(wrong.status).toBe(401);
    expect(wrong.body.errors[0].field).toBe("code");
    const confirmed = await post("/two-factor/confirm", { code: codeOf(setup.body.secret) }, session);
    expect(confirmed.body.recovery_codes).toHaveLength(10);
    // Ten readable characters in two groups: no look-alike i, l, o, u.
    for (const code of confirmed.body.recovery_codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/);
    expect(new Set(confirmed.body.recovery_codes).size).toBe(10);
    const hashes = await env.DB.prepare("SELECT r.code_hash FROM operator_recovery_codes r JOIN operators o ON o.id = r.operator_id WHERE o.email = ?").bind(session.email).all<{ code_hash: string }>();
    expect(hashes.results).toHaveLength(10);
    for (const { code_hash } of hashes.results) expect(confirmed.body.recovery_codes).not.toContain(code_hash);
    // A second enrolment waits until this one is off.
    expect((await post("/two-factor/setup", {}, session)).status).toBe(409);
    // Without the CSRF token, no change.
    const forged = await call("/auth/v1/two-factor/disable", { method: "POST", headers: { origin: BASE, cookie: session.cookie, "content-type": "application/json" }, body: JSON.stringify({ code: "123456" }) });
    expect(forged.status).toBe(403);
  });

  it("asks for the code after the password; a code and a recovery code each work once", async () => {
    const { session, secret, recoveryCodes } = await enrolled();
    const first = await post("/sign-in", { email: session.email, password: session.password });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ step: "code", token: expect.any(String) });
    expect(first.body.csrf_token).toBeUndefined();
    expect(first.cookie).toBeNull();

    // The code used to confirm the enrolment a moment ago is spent: take the next step's.
    const code = codeOf(secret, Date.now() + 30_000);
    const signedIn = await post("/sign-in/code", { token: first.body.token, code });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.body.operator.email).toBe(session.email);
    expect(signedIn.cookie).toMatch(/^panel_session=/);
    // The step is over, and the code cannot open a second session.
    expect((await post("/sign-in/code", { token: first.body.token, code })).body.errors[0].field).toBe("token");
    const second = await post("/sign-in", { email: session.email, password: session.password });
    const replay = await post("/sign-in/code", { token: second.body.token, code });
    expect(replay.status).toBe(401);
    expect(replay.body.errors[0]).toMatchObject({ field: "code", message: expect.stringMatching(/used already/) });

    const recovered = await post("/sign-in/code", { token: second.body.token, code: recoveryCodes[3]!.toUpperCase() });
    expect(recovered.status).toBe(200);
    const third = await post("/sign-in", { email: session.email, password: session.password });
    expect((await post("/sign-in/code", { token: third.body.token, code: recoveryCodes[3] })).status).toBe(401);
    expect(((await call("/auth/v1/two-factor", { headers: { cookie: session.cookie } }).then((r) => r.json())) as any).recovery_codes_left).toBe(9);
  });

  it("rate-limits wrong codes: five end a pending sign-in, ten in the window hold the account back", async () => {
    const { session, secret } = await enrolled();
    const step = await post("/sign-in", { email: session.email, password: session.password });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await post("/sign-in/code", { token: step.body.token, code: `wrong-${i}` })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    expect((await post("/sign-in/code", { token: step.body.token, code: codeOf(secret, Date.now() + 30_000) })).body.errors[0].field).toBe("token");

    const again = await post("/sign-in", { email: session.email, password: session.password });
    for (let i = 0; i < 5; i++) await post("/sign-in/code", { token: again.body.token, code: `wrong-${i}` });
    const held = await post("/sign-in", { email: session.email, password: session.password });
    const limited = await post("/sign-in/code", { token: held.body.token, code: codeOf(secret, Date.now() + 30_000) });
    expect(limited.status).toBe(429);
  });

  it("refuses bad input to the sign-in steps by field and reason, never a 500", async () => {
    const refusal = async (path: string, body: unknown, session?: OperatorSession) => {
      const answer = await post(path, body, session);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      return answer.body.errors[0];
    };
    expect(await refusal("/sign-in/code", { token: "x", code: 123456 })).toEqual({ field: "code", message: "must be a string, not an integer" });
    expect(await refusal("/sign-in/code", { token: ["x"], code: "123456" })).toEqual({ field: "token", message: "must be a string, not an array" });
    expect(await refusal("/sign-in/enrol", {})).toEqual({ field: "token", message: "is required" });
    expect(await refusal("/sign-in/enrol/confirm", { token: "t".repeat(201), code: "123456" })).toEqual({ field: "token", message: "must be at most 200 characters" });
    const session = await operatorWithRole((await createPanel()).id, "viewer");
    expect(await refusal("/two-factor/confirm", { code: "" }, session)).toEqual({ field: "code", message: "is required" });
    expect(await refusal("/two-factor/disable", { code: "1".repeat(41) }, session)).toEqual({ field: "code", message: "must be at most 40 characters" });
  });

  it("turns off with a code, after which the password alone signs in", async () => {
    const { session, secret } = await enrolled();
    expect((await post("/two-factor/disable", { code: "999999" === codeOf(secret) ? "888888" : "999999" }, session)).status).toBe(401);
    expect((await post("/two-factor/disable", { code: codeOf(secret, Date.now() + 30_000) }, session)).body).toEqual({ enabled: false });
    const plain = await post("/sign-in", { email: session.email, password: session.password });
    expect(plain.body.operator.email).toBe(session.email);
  });

  it("an owner requires it for the panel: an operator without it enrols at sign-in and gets their session and recovery codes", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const marketer = await operatorWithRole(panel.id, "marketer");
    const patched = await call(`/admin/v1/panels/${panel.id}`, {
      method: "PATCH",
      headers: { origin: BASE, cookie: owner.cookie, "x-csrf-token": owner.csrf, "content-type": "application/json" },
      body: JSON.stringify({ require_two_factor: true }),
    });
    expect(((await patched.json()) as any).require_two_factor).toBe(true);
    expect((await admin("PATCH", `/panels/${panel.id}`, { require_two_factor: "yes" })).body.errors[0].field).toBe("require_two_factor");
    const audit = (await admin("GET", `/panels/${panel.id}/audit?action=panel.settings_changed`)).body.entries;
    expect(audit[0].detail).toEqual({ require_two_factor: true });

    const step = await post("/sign-in", { email: marketer.email, password: marketer.password });
    expect(step.body.step).toBe("enrol");
    expect((await post("/sign-in/code", { token: step.body.token, code: "123456" })).body.errors[0].field).toBe("token");
    const enrol = await post("/sign-in/enrol", { token: step.body.token });
    expect(enrol.body.uri).toMatch(/^otpauth:\/\/totp\//);
    const done = await post("/sign-in/enrol/confirm", { token: step.body.token, code: codeOf(enrol.body.secret) });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.operator.email).toBe(marketer.email);
    expect(done.body.recovery_codes).toHaveLength(10);
    expect(done.cookie).toMatch(/^panel_session=/);
    const session = { ...marketer, cookie: /^panel_session=[^;]+/.exec(done.cookie!)![0], csrf: done.body.csrf_token };
    const off = await post("/two-factor/disable", { code: codeOf(enrol.body.secret, Date.now() + 30_000) }, session);
    expect(off.status).toBe(409);
    // The next sign-in asks for the code.
    expect((await post("/sign-in", { email: marketer.email, password: marketer.password })).body.step).toBe("code");
  });
});
