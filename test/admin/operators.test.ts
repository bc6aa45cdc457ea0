import { describe, expect, it } from "vitest";
import { ADMIN_ROUTES } from "../../src/admin";
import type { AdminRole } from "../../src/admin/route";
import { roleAllows } from "../../src/domain/permissions";
import { SESSION_IDLE_MS, SIGN_IN_WINDOW_MS, sweepIdleSessions } from "../../src/services/operators/sessions";
import { runCronTasks } from "../../src/jobs/cron";
import { admin, BASE, call, createPanel } from "../support/helpers";
import { asOperator, operatorWithRole, signIn } from "../support/operators";

/** A path for the route with the panel filled in and made-up ids elsewhere. */
function concretePath(path: string, panelId: string): string {
  return path.replace(":panel", panelId).replace(/:(\w+)/g, (_, name: string) => `no-such-${name}`);
}

function allowed(held: "owner" | "marketer" | "viewer", needed: AdminRole): boolean {
  return needed !== "admin" && roleAllows(held, needed);
}

describe("operator sign-in", () => {
  it("signs in with email and password: HttpOnly, SameSite=Lax, Secure cookie; the session lists the operator's panels", async () => {
    const panel = await createPanel();
    const added = await admin("POST", `/panels/${panel.id}/operators`, { email: "Ada@Example.com", role: "owner", password: "a long passphrase" });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ email: "ada@example.com", role: "owner" });

    const response = await call("/auth/v1/sign-in", {
      method: "POST",
      headers: { origin: BASE, "content-type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com", password: "a long passphrase" }),
    });
    expect(response.status).toBe(200);
    const cookie = response.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^panel_session=[A-Za-z0-9_-]{40,};/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Secure");
    const body = (await response.json()) as any;
    expect(body.panels).toEqual([{ id: panel.id, name: panel.name, role: "owner" }]);

    const session = await call("/auth/v1/session", { headers: { cookie: cookie.split(";")[0]! } });
    expect(session.status).toBe(200);
    expect(((await session.json()) as any).operator.email).toBe("ada@example.com");
  });

  it("answers a wrong email and a wrong password alike", async () => {
    const panel = await createPanel();
    await admin("POST", `/panels/${panel.id}/operators`, { email: "grace@example.com", role: "viewer", password: "a long passphrase" });
    const attempt = async (email: string, password: string) => {
      const response = await call("/auth/v1/sign-in", {
        method: "POST",
        headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": "192.0.2.10" },
        body: JSON.stringify({ email, password }),
      });
      return { status: response.status, body: await response.json(), cookie: response.headers.get("set-cookie") };
    };
    const wrongPassword = await attempt("grace@example.com", "not her passphrase");
    const wrongEmail = await attempt("nobody@example.com", "not her passphrase");
    expect(wrongPassword.status).toBe(401);
    expect(wrongPassword).toEqual(wrongEmail);
    expect(wrongPassword.cookie).toBeNull();
  });

  it("refuses a sign-in from another origin", async () => {
    const response = await call("/auth/v1/sign-in", {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ email: "a@example.com", password: "whatever it is" }),
    });
    expect(response.status).toBe(403);
  });

  it("rate-limits failures per address across accounts", async () => {
    let last = 0;
    for (let i = 0; i < 31; i++) {
      const response = await call("/auth/v1/sign-in", {
        method: "POST",
        headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": "203.0.113.7" },
        body: JSON.stringify({ email: `guess${i}@example.com`, password: "some password" }),
      });
      last = response.status;
      await response.arrayBuffer();
    }
    expect(last).toBe(429);
  });

  it("sign-out ends the session at once", async () => {
    const panel = await createPanel();
    const session = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(session, "GET", `/panels/${panel.id}`)).status).toBe(200);
    const refused = await call("/auth/v1/sign-out", { method: "POST", headers: { cookie: session.cookie, origin: BASE } });
    expect(refused.status).toBe(403);
    const out = await call("/auth/v1/sign-out", { method: "POST", headers: { cookie: session.cookie, origin: BASE, "x-csrf-token": session.csrf } });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await asOperator(session, "GET", `/panels/${panel.id}`)).status).toBe(401);
    expect((await call("/auth/v1/session", { headers: { cookie: session.cookie } })).status).toBe(401);
  });

  it("ends a session idle for longer than the inactivity limit", async () => {
    const panel = await createPanel();
    const session = await operatorWithRole(panel.id, "viewer");
    const { env } = await import("cloudflare:workers");
    await env.DB.prepare("UPDATE operator_sessions SET last_seen_at = ? WHERE operator_id = ?")
      .bind(Date.now() - SESSION_IDLE_MS - 1000, session.body.operator.id)
      .run();
    expect((await asOperator(session, "GET", `/panels/${panel.id}`)).status).toBe(401);
  });

  it("the cron sweeps sessions past the inactivity limit and spent sign-in failures, and keeps live sessions", async () => {
    const panel = await createPanel();
    const idle = await operatorWithRole(panel.id, "viewer");
    const live = await operatorWithRole(panel.id, "viewer");
    const { env } = await import("cloudflare:workers");
    const now = Date.now();
    await env.DB.prepare("UPDATE operator_sessions SET last_seen_at = ? WHERE operator_id = ?").bind(now - SESSION_IDLE_MS - 1000, idle.body.operator.id).run();
    await env.DB.prepare("INSERT INTO sign_in_failures (subject, window_start, failures) VALUES (?, ?, 3)").bind(`account:spent-${now}@example.com`, now - SIGN_IN_WINDOW_MS - 1000).run();
    const sessionsOf = (operator: string) => env.DB.prepare("SELECT COUNT(*) AS n FROM operator_sessions WHERE operator_id = ?").bind(operator).first<number>("n");

    await runCronTasks(env, now, [sweepIdleSessions]);

    expect(await sessionsOf(idle.body.operator.id)).toBe(0);
    expect(await sessionsOf(live.body.operator.id)).toBe(1);
    expect(await env.DB.prepare("SELECT 1 FROM sign_in_failures WHERE subject = ?").bind(`account:spent-${now}@example.com`).first()).toBeNull();
    expect((await asOperator(live, "GET", `/panels/${panel.id}`)).status).toBe(200);
  });

  it("stores only hashes: PBKDF2 for the password, SHA-256 for the session token", async () => {
    const panel = await createPanel();
    const session = await operatorWithRole(panel.id, "viewer");
    const { env } = await import("cloudflare:workers");
    const operator = await env.DB.prepare("SELECT password_hash FROM operators WHERE email = ?").bind(session.email).first<{ password_hash: string }>();
    expect(operator!.password_hash).toMatch(/^pbkdf2-sha256\$100000\$/);
    const token = session.cookie.split("=")[1]!;
    expect(await env.DB.prepare("SELECT 1 FROM operator_sessions WHERE token_hash = ?").bind(token).first()).toBeNull();
  });
});

describe("operator sessions on the admin API", () => {
  it("refuses a cookie write without the CSRF token or from another origin", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "PATCH", `/panels/${panel.id}`, { name: "Renamed" }, { "x-csrf-token": "wrong" })).status).toBe(403);
    expect((await asOperator(owner, "PATCH", `/panels/${panel.id}`, { name: "Renamed" }, { origin: "https://evil.example" })).status).toBe(403);
    const ok = await asOperator(owner, "PATCH", `/panels/${panel.id}`, { name: "Renamed" });
    expect(ok.status).toBe(200);
    expect(ok.body.name).toBe("Renamed");
  });

  it("refuses each role every route its role does not allow (403), and only those", async () => {
    const panel = await createPanel();
    for (const held of ["viewer", "marketer", "owner"] as const) {
      const session = await operatorWithRole(panel.id, held);
      for (const route of ADMIN_ROUTES) {
        if (allowed(held, route.role)) continue;
        const answer = await asOperator(session, route.method, concretePath(route.path, panel.id), route.method === "GET" ? undefined : {});
        expect({ route: `${route.method} ${route.path}`, held, status: answer.status }).toEqual({
          route: `${route.method} ${route.path}`,
          held,
          status: 403,
        });
      }
    }
  });

  it("lets each role through to the routes its role allows (never 401/403)", async () => {
    const panel = await createPanel();
    for (const held of ["viewer", "marketer", "owner"] as const) {
      const session = await operatorWithRole(panel.id, held);
      for (const route of ADMIN_ROUTES.filter((r) => allowed(held, r.role) && r.method === "GET")) {
        const answer = await asOperator(session, route.method, concretePath(route.path, panel.id));
        expect([401, 403]).not.toContain(answer.status);
      }
    }
  });

  it("shows a session nothing of a panel it has no role in (404 on every panel route)", async () => {
    const mine = await createPanel();
    const theirs = await createPanel();
    const owner = await operatorWithRole(mine.id, "owner");
    for (const route of ADMIN_ROUTES.filter((r) => r.path.startsWith("/panels/:panel"))) {
      const answer = await asOperator(owner, route.method, concretePath(route.path, theirs.id), route.method === "GET" ? undefined : {});
      expect({ route: `${route.method} ${route.path}`, status: answer.status, error: answer.body.error }).toEqual({
        route: `${route.method} ${route.path}`,
        status: 404,
        error: `No panel with id "${theirs.id}"`,
      });
    }
  });

  it("one operator may hold different roles in several panels", async () => {
    const first = await createPanel();
    const second = await createPanel();
    const session = await operatorWithRole(first.id, "owner");
    expect((await admin("POST", `/panels/${second.id}/operators`, { email: session.email, role: "viewer" })).status).toBe(201);
    const again = await signIn(session.email, session.password);
    expect(again.body.panels).toHaveLength(2);
    expect((await asOperator(again, "PATCH", `/panels/${first.id}`, { name: "Mine" })).status).toBe(200);
    expect((await asOperator(again, "PATCH", `/panels/${second.id}`, { name: "Not mine" })).status).toBe(403);
  });

  it("an owner's session may not create an account with a password of its choosing, which another panel's role would then let it into", async () => {
    const mine = await createPanel();
    const theirs = await createPanel();
    const attacker = await operatorWithRole(mine.id, "owner");
    const victim = `cfo-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const created = await asOperator(attacker, "POST", `/panels/${mine.id}/operators`, { email: victim, role: "viewer", password: "the attacker's passphrase" });
    expect(created.status).toBe(403);
    const { env } = await import("cloudflare:workers");
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM operators WHERE email = ?").bind(victim).first("n")).toBe(0);
    // The other panel gives the address a role; only its holder's password opens it.
    expect((await admin("POST", `/panels/${theirs.id}/operators`, { email: victim, role: "owner", password: "the holder's own passphrase" })).status).toBe(201);
    await expect(signIn(victim, "the attacker's passphrase")).rejects.toThrow(/401/);
  });

  it("an owner's session may not give a role to an existing account without its consent (invitations ask it)", async () => {
    const mine = await createPanel();
    const elsewhere = await createPanel();
    const owner = await operatorWithRole(mine.id, "owner");
    const other = await operatorWithRole(elsewhere.id, "viewer");
    const added = await asOperator(owner, "POST", `/panels/${mine.id}/operators`, { email: other.email, role: "owner" });
    expect(added.status).toBe(403);
    expect((await signIn(other.email, other.password)).body.panels.map((p: any) => p.id)).toEqual([elsewhere.id]);
  });

  it("the admin token adds operators; an owner changes and removes them, but never the last owner", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const added = await admin("POST", `/panels/${panel.id}/operators`, { email: "new@example.com", role: "viewer", password: "short" });
    expect(added.status).toBe(400);
    expect(added.body.errors[0].field).toBe("password");
    const ok = await admin("POST", `/panels/${panel.id}/operators`, { email: "new@example.com", role: "viewer", password: "long enough password" });
    expect(ok.status).toBe(201);
    expect((await asOperator(owner, "PATCH", `/panels/${panel.id}/operators/${ok.body.id}`, { role: "marketer" })).body.role).toBe("marketer");
    const me = owner.body.operator.id;
    expect((await asOperator(owner, "PATCH", `/panels/${panel.id}/operators/${me}`, { role: "viewer" })).status).toBe(409);
    expect((await asOperator(owner, "DELETE", `/panels/${panel.id}/operators/${me}`)).status).toBe(409);
    expect((await asOperator(owner, "DELETE", `/panels/${panel.id}/operators/${ok.body.id}`)).status).toBe(200);
    const list = await asOperator(owner, "GET", `/panels/${panel.id}/operators`);
    expect(list.body.operators.map((o: any) => o.email)).toEqual([owner.email]);
  });

  it("adding a member again changes their role under the same rule as a change: never the last owner's", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const again = await admin("POST", `/panels/${panel.id}/operators`, { email: owner.email, role: "viewer" });
    expect(again.status).toBe(409);
    expect((await admin("GET", `/panels/${panel.id}/operators`)).body.operators.map((o: any) => [o.email, o.role])).toEqual([[owner.email, "owner"]]);
    const marketer = await operatorWithRole(panel.id, "marketer");
    expect((await admin("POST", `/panels/${panel.id}/operators`, { email: marketer.email, role: "viewer" })).body.role).toBe("viewer");
  });

  it("only the admin token creates panels and lists them all", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "GET", "/panels")).status).toBe(403);
    expect((await asOperator(owner, "POST", "/panels", { name: "Another" })).status).toBe(403);
  });

  it("a wrong bearer token is refused even with a valid session cookie", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "GET", `/panels/${panel.id}`, undefined, { authorization: "Bearer nope" })).status).toBe(401);
  });
});
