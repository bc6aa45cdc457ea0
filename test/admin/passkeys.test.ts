import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, BASE, call, createPanel } from "../support/helpers";
import { operatorWithRole, type OperatorSession } from "../support/operators";
import { softAuthenticator } from "../support/webauthn";

let address = 0;
async function send(method: string, path: string, body?: unknown, session?: OperatorSession) {
  const response = await call(`/auth/v1${path}`, {
    method,
    headers: {
      origin: BASE,
      "content-type": "application/json",
      "cf-connecting-ip": `198.51.100.${++address % 250}`,
      ...(session ? { cookie: session.cookie, "x-csrf-token": session.csrf } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as any, cookie: response.headers.get("set-cookie") };
}
const post = (path: string, body: unknown, session?: OperatorSession) => send("POST", path, body, session);

async function operatorIdOf(session: OperatorSession): Promise<string> {
  return (await env.DB.prepare("SELECT id FROM operators WHERE email = ?").bind(session.email).first<string>("id"))!;
}

async function registered(role: "owner" | "marketer" = "marketer") {
  const panel = await createPanel();
  const session = await operatorWithRole(panel.id, role);
  const authenticator = await softAuthenticator();
  const options = await post("/passkeys/options", {}, session);
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  const credential = await authenticator.register(options.body, BASE);
  const added = await post("/passkeys", { name: "Laptop", credential }, session);
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return { panel, session, authenticator, passkeyId: added.body.id as string, operatorId: await operatorIdOf(session) };
}

async function signInWith(authenticator: Awaited<ReturnType<typeof softAuthenticator>>, userHandle: string) {
  const options = await post("/sign-in/passkey/options", {});
  expect(options.status).toBe(200);
  const credential = await authenticator.assert(options.body, BASE, userHandle);
  return { credential, answer: await post("/sign-in/passkey", { credential }) };
}

describe("passkeys", () => {
  it("registers a passkey on the account (options bound to the host, user verification required), lists it and audits it", async () => {
    const { panel, session, authenticator, passkeyId } = await registered();
    const options = await post("/passkeys/options", {}, session);
    expect(options.body.rp.id).toBe(new URL(BASE).hostname);
    expect(options.body.authenticatorSelection).toMatchObject({ residentKey: "required", userVerification: "required" });
    // The registered passkey is excluded from a second registration.
    expect(options.body.excludeCredentials.map((c: any) => c.id)).toEqual([authenticator.credentialId]);
    const list = await send("GET", "/passkeys", undefined, session);
    expect(list.body.passkeys).toEqual([{ id: passkeyId, name: "Laptop", created_at: expect.any(String), last_used_at: null }]);
    const stored = await env.DB.prepare("SELECT credential_id, counter, transports FROM operator_passkeys WHERE id = ?").bind(passkeyId).first();
    expect(stored).toEqual({ credential_id: authenticator.credentialId, counter: 0, transports: '["internal"]' });
    const audit = (await admin("GET", `/panels/${panel.id}/audit?target_kind=operator`)).body.entries.map((e: any) => [e.action, e.actor.email, e.detail.name]);
    expect(audit).toContainEqual(["operator.passkey_added", session.email, "Laptop"]);
  });

  it("signs in with the passkey alone (both factors), moves the counter on, also where the panel requires two-factor sign-in", async () => {
    const { panel, session, authenticator, operatorId } = await registered();
    await env.DB.prepare("UPDATE panels SET require_two_factor = 1 WHERE id = ?").bind(panel.id).run();
    const { answer } = await signInWith(authenticator, operatorId);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.operator.email).toBe(session.email);
    expect(answer.body.panels.map((p: any) => p.id)).toContain(panel.id);
    expect(answer.cookie).toMatch(/^panel_session=/);
    const stored = await env.DB.prepare("SELECT counter, last_used_at FROM operator_passkeys WHERE operator_id = ?").bind(operatorId).first<any>();
    expect(stored.counter).toBe(1);
    expect(stored.last_used_at).toEqual(expect.any(Number));
  });

  it("spends each challenge once, refuses expired ones, replayed and wrong-origin answers", async () => {
    const { session, authenticator, operatorId } = await registered();
    // A sign-in answer replayed: its challenge is spent.
    const { credential, answer } = await signInWith(authenticator, operatorId);
    expect(answer.status).toBe(200);
    const replay = await post("/sign-in/passkey", { credential });
    expect(replay.status).toBe(400);
    expect(replay.body.errors[0].field).toBe("credential");

    // An expired challenge.
    const options = await post("/sign-in/passkey/options", {});
    await env.DB.prepare("UPDATE webauthn_challenges SET expires_at = 1").run();
    const late = await post("/sign-in/passkey", { credential: await authenticator.assert(options.body, BASE, operatorId) });
    expect(late.status).toBe(400);

    // Signed for another site: refused, and its challenge is spent all the same.
    const phished = await post("/sign-in/passkey/options", {});
    const wrongOrigin = await post("/sign-in/passkey", { credential: await authenticator.assert(phished.body, "https://evil.test", operatorId) });
    expect(wrongOrigin.status).toBe(401);
    expect(wrongOrigin.body.errors[0].field).toBe("credential");

    // A registration answer works once too.
    const other = await softAuthenticator();
    const regOptions = await post("/passkeys/options", {}, session);
    const regCredential = await other.register(regOptions.body, BASE);
    expect((await post("/passkeys", { name: "Phone", credential: regCredential }, session)).status).toBe(201);
    expect((await post("/passkeys", { name: "Phone", credential: regCredential }, session)).status).toBe(400);
  });

  it("refuses a passkey without user verification, bad input by field, and changes without the CSRF token", async () => {
    const panel = await createPanel();
    const session = await operatorWithRole(panel.id, "viewer");
    const presenceOnly = await softAuthenticator({ userVerified: false });
    const options = await post("/passkeys/options", {}, session);
    const refused = await post("/passkeys", { name: "Key", credential: await presenceOnly.register(options.body, BASE) }, session);
    expect(refused.status).toBe(401);
    expect((await send("GET", "/passkeys", undefined, session)).body.passkeys).toEqual([]);

    const bad = await post("/passkeys", { name: "", credential: { id: "x" } }, session);
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: any) => e.field)).toContain("name");
    const forged = await call("/auth/v1/passkeys/options", { method: "POST", headers: { origin: BASE, cookie: session.cookie } });
    expect(forged.status).toBe(403);
  });

  it("deletes a passkey (audited); it no longer signs in; another operator cannot delete it", async () => {
    const { panel, session, authenticator, passkeyId, operatorId } = await registered("owner");
    const stranger = await operatorWithRole((await createPanel()).id, "owner");
    expect((await send("DELETE", `/passkeys/${passkeyId}`, undefined, stranger)).status).toBe(404);
    expect((await send("DELETE", `/passkeys/${passkeyId}`, undefined, session)).status).toBe(200);
    expect((await send("GET", "/passkeys", undefined, session)).body.passkeys).toEqual([]);
    const { answer } = await signInWith(authenticator, operatorId);
    expect(answer.status).toBe(401);
    expect(answer.cookie).toBeNull();
    const audit = (await admin("GET", `/panels/${panel.id}/audit?target_kind=operator`)).body.entries.map((e: any) => e.action);
    expect(audit).toContain("operator.passkey_removed");
  });
});
