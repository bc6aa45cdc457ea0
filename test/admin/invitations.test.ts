import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { acceptInvitation, INVITATION_TTL_MS } from "../../src/services/operators/invitations";
import { admin, ADMIN_TOKEN, BASE, call, createPanel, fetchWith, keptMail, type KeptMail } from "../support/helpers";
import { asOperator, operatorWithRole, signIn } from "../support/operators";

let count = 0;
const address = () => `invitee${++count}-${crypto.randomUUID().slice(0, 8)}@example.com`;

/** An admin call through the Worker with a MAILER that keeps what it is given. */
async function adminWithMail(method: string, path: string, body?: unknown) {
  const { MAILER, mails } = keptMail();
  const response = await fetchWith(
    { MAILER },
    new Request(`${BASE}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  return { status: response.status, body: (await response.json()) as any, mails };
}

async function auth(path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await call(`/auth/v1${path}`, {
    method: "POST",
    headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": "203.0.113.44", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any, cookie: response.headers.get("set-cookie") };
}

function tokenOf(mail: KeptMail): string {
  const link = /https?:\/\/\S+\/invitation#token=([A-Za-z0-9_-]+)/.exec(mail.text);
  expect(link, mail.text).not.toBeNull();
  return link![1]!;
}

async function invited(role = "marketer") {
  const panel = await createPanel();
  const email = address();
  const sent = await adminWithMail("POST", `/panels/${panel.id}/invitations`, { email, role });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  expect(sent.mails).toHaveLength(1);
  return { panel, email, invitation: sent.body, token: tokenOf(sent.mails[0]!) };
}

describe("invitations by email", () => {
  it("mails a single-use link valid 7 days, stores only its hash; accepting sets the invitee's own password and signs them in", async () => {
    const { panel, email, invitation, token } = await invited("viewer");
    expect(invitation).toMatchObject({ email, role: "viewer", invited_by: null, expired: false });
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.sent_at)).toBe(INVITATION_TTL_MS);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM operator_invitations WHERE token_hash = ?").bind(token).first("n")).toBe(0);
    expect((await admin("GET", `/panels/${panel.id}/invitations`)).body.invitations.map((i: any) => i.email)).toEqual([email]);

    const preview = await auth("/invitation", { token });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ email, panel_name: panel.name, role: "viewer", has_account: false });

    const short = await auth("/invitation/accept", { token, password: "short" });
    expect(short.status).toBe(400);
    expect(short.body.errors[0]).toMatchObject({ field: "password", message: "must be at least 10 characters" });

    const accepted = await auth("/invitation/accept", { token, password: "my own passphrase", name: "Ines" });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.operator).toMatchObject({ email, name: "Ines" });
    expect(accepted.body.panels).toEqual([{ id: panel.id, name: panel.name, role: "viewer" }]);
    expect(accepted.cookie).toMatch(/^panel_session=/);
    // The password is the invitee's: signing in with it works.
    await signIn(email, "my own passphrase");

    // Used once: the link now says so, and gives nothing a second time.
    const again = await auth("/invitation/accept", { token, password: "another passphrase" });
    expect(again.status).toBe(400);
    expect(again.body.errors[0]).toMatchObject({ field: "token", message: expect.stringMatching(/already accepted/) });
    expect((await auth("/invitation", { token })).body.errors[0].message).toMatch(/already accepted/);
    await expect(signIn(email, "another passphrase")).rejects.toThrow(/401/);
    expect((await admin("GET", `/panels/${panel.id}/invitations`)).body.invitations).toEqual([]);

    const audit = (await admin("GET", `/panels/${panel.id}/audit?target_kind=operator`)).body.entries.map((e: any) => [e.action, e.actor.kind, e.detail.email]);
    expect(audit).toEqual([
      ["operator.invitation_accepted", "operator", email],
      ["operator.invited", "admin_token", email],
    ]);
  });

  it("refuses an expired link with a clear reason", async () => {
    const { token } = await invited();
    const late = await acceptInvitation(env, { token, password: "late passphrase", name: null, address: "203.0.113.45" }, Date.now() + INVITATION_TTL_MS + 1_000);
    expect(late).toMatchObject({ ok: false, problem: { kind: "invalid", fields: [{ field: "token", message: expect.stringMatching(/has expired/) }] } });
    // Within its time it still works.
    expect((await auth("/invitation/accept", { token, password: "in-time passphrase" })).status).toBe(200);
  });

  it("resending replaces the link; revoking closes it; both are audited", async () => {
    const { panel, email, invitation, token: first } = await invited();
    const resent = await adminWithMail("POST", `/panels/${panel.id}/invitations/${invitation.id}/resend`);
    expect(resent.status).toBe(200);
    expect(resent.body.id).toBe(invitation.id);
    const second = tokenOf(resent.mails[0]!);
    expect((await auth("/invitation", { token: first })).body.errors[0]).toMatchObject({ field: "token", message: expect.stringMatching(/replaced by a newer invitation/) });
    expect((await auth("/invitation", { token: second })).status).toBe(200);

    // Inviting the address again with another role renews the same invitation.
    const renewed = await adminWithMail("POST", `/panels/${panel.id}/invitations`, { email, role: "owner" });
    expect(renewed.body).toMatchObject({ id: invitation.id, role: "owner" });
    const third = tokenOf(renewed.mails[0]!);
    expect((await auth("/invitation", { token: second })).status).toBe(400);

    expect((await admin("DELETE", `/panels/${panel.id}/invitations/${invitation.id}`)).body).toEqual({ revoked: true });
    const revoked = await auth("/invitation/accept", { token: third, password: "revoked passphrase" });
    expect(revoked.body.errors[0].message).toMatch(/revoked by the panel's owner/);
    expect((await admin("DELETE", `/panels/${panel.id}/invitations/${invitation.id}`)).status).toBe(404);
    expect((await admin("POST", `/panels/${panel.id}/invitations/${invitation.id}/resend`)).status).toBe(404);
    const actions = (await admin("GET", `/panels/${panel.id}/audit?target_kind=operator`)).body.entries.map((e: any) => e.action);
    expect(actions).toEqual(["operator.invitation_revoked", "operator.invitation_resent", "operator.invitation_resent", "operator.invited"]);
  });

  it("an existing account accepts with its own password, which the invitation never changes", async () => {
    const other = await createPanel();
    const email = address();
    await admin("POST", `/panels/${other.id}/operators`, { email, role: "viewer", password: "existing passphrase" });
    const panel = await createPanel();
    const sent = await adminWithMail("POST", `/panels/${panel.id}/invitations`, { email, role: "marketer" });
    const token = tokenOf(sent.mails[0]!);
    expect((await auth("/invitation", { token })).body.has_account).toBe(true);
    const wrong = await auth("/invitation/accept", { token, password: "a new passphrase" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.errors[0].field).toBe("password");
    const right = await auth("/invitation/accept", { token, password: "existing passphrase" });
    expect(right.status).toBe(200);
    expect(right.body.panels.map((p: any) => [p.id, p.role]).sort()).toEqual([[other.id, "viewer"], [panel.id, "marketer"]].sort());
  });

  it("a role given directly closes the address's open invitation: its link neither raises that role nor lets a removed operator back in", async () => {
    const { panel, email, token } = await invited("owner");
    // The owner thinks better of it: the address gets the viewer role directly (its account exists elsewhere).
    await admin("POST", `/panels/${(await createPanel()).id}/operators`, { email, role: "viewer", password: "existing passphrase" });
    expect((await admin("POST", `/panels/${panel.id}/operators`, { email, role: "viewer" })).status).toBe(201);
    const roleIn = async () => (await admin("GET", `/panels/${panel.id}/operators`)).body.operators.find((o: any) => o.email === email)?.role ?? null;

    const raised = await auth("/invitation/accept", { token, password: "existing passphrase" });
    expect(raised.status).toBe(400);
    expect(raised.body.errors[0].field).toBe("token");
    expect(await roleIn()).toBe("viewer");

    const member = (await admin("GET", `/panels/${panel.id}/operators`)).body.operators.find((o: any) => o.email === email);
    expect((await admin("DELETE", `/panels/${panel.id}/operators/${member.id}`)).status).toBe(200);
    expect((await auth("/invitation/accept", { token, password: "existing passphrase" })).status).toBe(400);
    expect(await roleIn()).toBeNull();
  });

  it("refuses a member's address, bad input and callers other than owners; the owner's invitation names them", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const marketer = await operatorWithRole(panel.id, "marketer");
    const member = await asOperator(owner, "POST", `/panels/${panel.id}/invitations`, { email: marketer.email, role: "viewer" });
    expect(member.status).toBe(409);
    expect(member.body.errors[0]).toMatchObject({ field: "email", message: expect.stringMatching(/already a marketer/) });
    expect((await asOperator(owner, "POST", `/panels/${panel.id}/invitations`, { email: "nope", role: "viewer" })).body.errors[0].field).toBe("email");
    expect((await asOperator(owner, "POST", `/panels/${panel.id}/invitations`, { email: address(), role: "boss" })).body.errors[0].field).toBe("role");
    expect((await asOperator(marketer, "POST", `/panels/${panel.id}/invitations`, { email: address(), role: "viewer" })).status).toBe(403);
    expect((await asOperator(marketer, "GET", `/panels/${panel.id}/invitations`)).status).toBe(403);
    const sent = await asOperator(owner, "POST", `/panels/${panel.id}/invitations`, { email: address(), role: "viewer" });
    expect(sent.status).toBe(201);
    expect(sent.body.invited_by).toBe(owner.email);
    expect((await auth("/invitation", { token: "made-up" })).body.errors[0].field).toBe("token");
    expect((await auth("/invitation", { token: "made-up" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await auth("/invitation", { token: 7 })).body.errors[0]).toEqual({ field: "token", message: "must be a string, not an integer" });
    expect((await auth("/invitation/accept", { token: "made-up", password: 1234567890 })).body.errors[0]).toEqual({ field: "password", message: "must be a string, not an integer" });
    expect((await auth("/invitation/accept", { token: "t".repeat(201), password: "a long enough password" })).body.errors[0]).toEqual({ field: "token", message: "must be at most 200 characters" });
  });
});
