import type { ControlDb } from "../../store/shards";
import { constantTimeEqual, hashPassword, sha256Hex, verifyPassword } from "../../lib/crypto";
import { newId, randomBase64Url } from "../../lib/random";
import type { CronTask } from "../../lib/tasks";
import {
  clearFailures,
  deleteIdleSessions,
  deleteSession,
  findSession,
  insertSession,
  recentFailures,
  recordFailure,
  touchSession,
} from "../../store/operator-sessions";
import { findOperatorByEmail, insertOperator, rolesOf, type Operator, type OperatorRole, type PanelRole } from "../../store/operators";

/** A session ends after this long without a request. */
export const SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
/** last_seen_at is written at most this often, not on every request. */
const TOUCH_EVERY_MS = 60 * 1000;

/** Sign-in rate limit: failures allowed per window, per address and per account. */
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;
export const FAILURES_PER_ADDRESS = 30;
export const FAILURES_PER_ACCOUNT = 10;

export interface Session {
  operator: Operator;
  roles: PanelRole[];
  csrfToken: string;
  tokenHash: string;
}

export type SignInResult =
  | { ok: true; token: string; session: Session }
  | { ok: false; reason: "wrong" | "rate_limited" };

// Spent on an unknown email so that it takes as long as a wrong password.
let decoyHash: Promise<string> | undefined;

const addressSubject = (address: string) => `address:${address}`;
export const accountSubject = (email: string) => `account:${email}`;

export function sessionTokenHash(token: string): Promise<string> {
  return sha256Hex(token);
}

/**
 * Checks email and password and opens a session. A wrong email and a wrong password give the
 * same answer after the same work; too many failures from the address or for the account in
 * the window refuse before any check.
 */
export async function signIn(db: ControlDb, email: string, password: string, address: string, now = Date.now()): Promise<SignInResult> {
  const subjects = [addressSubject(address), accountSubject(email)];
  const windowStart = now - SIGN_IN_WINDOW_MS;
  const [byAddress, byAccount] = await Promise.all([
    recentFailures(db, [subjects[0]!], windowStart),
    recentFailures(db, [subjects[1]!], windowStart),
  ]);
  if (byAddress >= FAILURES_PER_ADDRESS || byAccount >= FAILURES_PER_ACCOUNT) return { ok: false, reason: "rate_limited" };

  const operator = await findOperatorByEmail(db, email);
  const matches = operator
    ? await verifyPassword(password, operator.passwordHash)
    : await verifyPassword(password, await (decoyHash ??= hashPassword(randomBase64Url(16))));
  if (!operator || !matches || operator.disabled) {
    await recordFailure(db, subjects, now, windowStart);
    return { ok: false, reason: "wrong" };
  }
  await clearFailures(db, subjects[1]!);
  const token = randomBase64Url(32);
  const tokenHash = await sessionTokenHash(token);
  const csrfToken = randomBase64Url(24);
  await insertSession(db, tokenHash, operator.id, csrfToken, now);
  const { passwordHash: _passwordHash, ...plain } = operator;
  return { ok: true, token, session: { operator: plain, roles: await rolesOf(db, operator.id), csrfToken, tokenHash } };
}

/** The live session a cookie token names, or null (unknown, idle too long, operator disabled). */
export async function resolveSession(db: ControlDb, token: string, now = Date.now()): Promise<Session | null> {
  const tokenHash = await sessionTokenHash(token);
  const stored = await findSession(db, tokenHash);
  if (!stored) return null;
  if (stored.operator.disabled || now - stored.lastSeenAt > SESSION_IDLE_MS) {
    await deleteSession(db, tokenHash);
    return null;
  }
  const [roles] = await Promise.all([
    rolesOf(db, stored.operator.id),
    now - stored.lastSeenAt > TOUCH_EVERY_MS ? touchSession(db, tokenHash, now) : undefined,
  ]);
  return { operator: stored.operator, roles, csrfToken: stored.csrfToken, tokenHash };
}

export function signOut(db: ControlDb, session: Session): Promise<void> {
  return deleteSession(db, session.tokenHash);
}

export function csrfMatches(session: Session, sent: string | null): boolean {
  return !!sent && constantTimeEqual(sent, session.csrfToken);
}

const ROLE_RANK: Record<OperatorRole, number> = { viewer: 1, marketer: 2, owner: 3 };

/** Whether `held` allows what `needed` allows. */
export function roleAllows(held: OperatorRole, needed: OperatorRole): boolean {
  return ROLE_RANK[held] >= ROLE_RANK[needed];
}

export type NewOperatorResult = { created: true; operator: Operator } | { created: false };

export async function createOperator(
  db: ControlDb,
  email: string,
  name: string | null,
  password: string,
  now = Date.now(),
): Promise<NewOperatorResult> {
  const operator: Operator = { id: newId("opr"), email, name, disabled: false, createdAt: now };
  return (await insertOperator(db, operator, await hashPassword(password))) ? { created: true, operator } : { created: false };
}

/** Removes sessions past their idle time, expired reset links and spent sign-in failure windows (they refuse nothing any more). */
export const sweepIdleSessions: CronTask = {
  name: "sweep idle operator sessions",
  async run(env, now) {
    await deleteIdleSessions(env.DB, now - SESSION_IDLE_MS, now - SIGN_IN_WINDOW_MS, now);
  },
};
