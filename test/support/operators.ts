import { expect } from "vitest";
import { solveChallenge } from "../../src/domain/sign-in-challenge";
import { admin, BASE, call } from "./helpers";

export interface OperatorSession {
  email: string;
  password: string;
  cookie: string;
  csrf: string;
  body: any;
}

let operatorCount = 0;

/** Adds an operator with the role to the panel (through the admin token) and signs them in. */
export async function operatorWithRole(panelId: string, role: "owner" | "marketer" | "viewer"): Promise<OperatorSession> {
  const email = `operator${++operatorCount}-${role}@example.com`;
  const password = `correct horse ${operatorCount}`;
  const added = await admin("POST", `/panels/${panelId}/operators`, { email, role, password });
  if (added.status !== 201) throw new Error(`operator not added: ${JSON.stringify(added.body)}`);
  return signIn(email, password);
}

export async function signIn(email: string, password: string, headers: Record<string, string> = {}): Promise<OperatorSession> {
  const response = await call("/auth/v1/sign-in", {
    method: "POST",
    headers: { origin: BASE, "content-type": "application/json", ...headers },
    body: JSON.stringify({ email, password }),
  });
  const body = (await response.json()) as any;
  if (response.status !== 200) throw new Error(`sign-in failed (${response.status}): ${JSON.stringify(body)}`);
  const cookie = /^panel_session=[^;]+/.exec(response.headers.get("set-cookie") ?? "")![0];
  return { email, password, cookie, csrf: body.csrf_token, body };
}

/** An admin API call as the browser makes it: session cookie, same origin, CSRF header. */
export async function asOperator<T = any>(
  session: OperatorSession,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const response = await call(`/admin/v1${path}`, {
    method,
    headers: {
      cookie: session.cookie,
      origin: BASE,
      "x-csrf-token": session.csrf,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // A 204 (a delete) has no body to read; a download (a CSV) is answered as its text.
  const text = await response.text();
  const json = response.headers.get("content-type")?.includes("json") ?? false;
  return { status: response.status, body: (text ? (json ? JSON.parse(text) : text) : null) as T };
}

/** A sign-in attempt from a client address (CF-Connecting-IP), answered as it is. */
export async function signInFrom(body: Record<string, unknown>, address: string): Promise<{ status: number; body: any; cookie: string | null }> {
  const response = await call("/auth/v1/sign-in", {
    method: "POST",
    headers: { origin: BASE, "content-type": "application/json", "cf-connecting-ip": address },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json(), cookie: response.headers.get("set-cookie") };
}

/** The sign-in challenge the panel asks for before signing `email` in. */
export async function challengeFor(email: string): Promise<any> {
  const response = await call("/auth/v1/sign-in/challenge", {
    method: "POST",
    headers: { origin: BASE, "content-type": "application/json" },
    body: JSON.stringify({ email }),
  });
  expect(response.status).toBe(200);
  return response.json();
}

/** What the panel does when a challenge is due: ask for it and solve it. */
export async function solvedChallenge(email: string): Promise<{ token: string; nonce: string; difficulty: number }> {
  const challenge = await challengeFor(email);
  expect(challenge.required).toBe(true);
  return { token: challenge.token, nonce: await solveChallenge(challenge.token, challenge.difficulty), difficulty: challenge.difficulty };
}
