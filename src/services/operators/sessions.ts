import type { ControlDb } from "../../store/shards";
import { constantTimeEqual, hashPassword, sha256Hex, verifyPassword } from "../../lib/crypto";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
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
import { findTotp, insertSignInStep, twoFactorRequiredFor } from "../../store/two-factor";
import { findOperatorByEmail, insertOperator, rolesOf, type Operator, type PanelRole } from "../../store/operators";
import { checkChallenge, difficultyFor, issueChallenge, type IssuedChallenge, type SentChallenge } from "./sign-in-challenge";

/** A session ends after this long without a request. */
export const SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
/** last_seen_at is written at most this often, not on every request. */
const TOUCH_EVERY_MS = 60 * 1000;

/**
 * Sign-in limits. Failures from one address in the window refuse that address (429): that only
 * holds back whoever fails there. Failures for one account never lock it (anyone anywhere can
 * make them); they make a proof-of-work challenge due instead (see sign-in-challenge.ts).
 */
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;
export const FAILURES_PER_ADDRESS = 30;

export interface Session {
  operator: Operator;
  roles: PanelRole[];
  csrfToken: string;
  tokenHash: string;
}

export interface SignInAttempt {
  email: string;
  password: string;
  /** The client's address (CF-Connecting-IP). */
  address: string;
  challenge?: SentChallenge;
}

/**
 * What a right password leads to: a session, or a step first (the operator's second factor's
 * code, or enrolling one because a panel of theirs requires it), named by a short-lived token.
 */
export type SignInOutcome = { kind: "session"; token: string; session: Session } | { kind: "step"; step: "code" | "enrol"; token: string; expiresAt: number };

/** Refused: too many failures from the address (rate_limited), a missing or wrong challenge (invalid), or a wrong email or password (unauthenticated, one answer for both). */
export type SignInResult = Result<SignInOutcome>;

/** How long a sign-in waits for its second factor after the password. */
export const SIGN_IN_STEP_TTL_MS = 10 * 60 * 1000;

export type ChallengeAnswer = { required: false } | { required: true; challenge: IssuedChallenge };

// Spent on an unknown email so that it takes as long as a wrong password.
let decoyHash: Promise<string> | undefined;

export const addressSubject = (address: string) => `address:${address}`;
export const accountSubject = (email: string) => `account:${email}`;

export function sessionTokenHash(token: string): Promise<string> {
  return sha256Hex(token);
}

async function accountFailures(db: ControlDb, email: string, now: number): Promise<number> {
  return recentFailures(db, [accountSubject(email)], now - SIGN_IN_WINDOW_MS);
}

/**
 * A proof-of-work challenge for signing in to `email` when one is due. The answer depends only on
 * the failures counted for the email, which unknown emails collect alike: it tells nothing of
 * whether an account exists.
 */
export async function signInChallenge(db: ControlDb, secretsKey: string, email: string, now = Date.now()): Promise<ChallengeAnswer> {
  const difficulty = difficultyFor(await accountFailures(db, email, now));
  if (difficulty === 0) return { required: false };
  return { required: true, challenge: await issueChallenge(secretsKey, email, difficulty, now) };
}

/**
 * Checks email and password and opens a session. A wrong email and a wrong password give the
 * same answer after the same work. Too many failures from the address refuse before any check;
 * recent failures for the account ask for a solved challenge first, never lock it.
 */
export async function signIn(db: ControlDb, secretsKey: string, attempt: SignInAttempt, now = Date.now()): Promise<SignInResult> {
  const { email, password } = attempt;
  const subjects = [addressSubject(attempt.address), accountSubject(email)];
  const windowStart = now - SIGN_IN_WINDOW_MS;
  const [byAddress, byAccount] = await Promise.all([recentFailures(db, [subjects[0]!], windowStart), accountFailures(db, email, now)]);
  if (byAddress >= FAILURES_PER_ADDRESS) return refused("rate_limited", [], "Too many failed sign-ins from this address; wait a few minutes and try again");
  const difficulty = difficultyFor(byAccount);
  if (difficulty > 0) {
    const check = await checkChallenge(db, secretsKey, email, attempt.challenge, difficulty, now);
    if (!check.ok) return refusedField("invalid", check.field, check.reason);
  }

  const operator = await findOperatorByEmail(db, email);
  const matches = operator
    ? await verifyPassword(password, operator.passwordHash)
    : await verifyPassword(password, await (decoyHash ??= hashPassword(randomBase64Url(16))));
  if (!operator || !matches || operator.disabled) {
    await recordFailure(db, subjects, now, windowStart);
    return refused("unauthenticated", [], "The email or the password is wrong");
  }
  await clearFailures(db, subjects[1]!);
  const { passwordHash: _passwordHash, ...plain } = operator;
  return succeeded(await afterPassword(db, plain, now));
}

/** The session of an operator whose password was right, or the second-factor step due first. */
export async function afterPassword(db: ControlDb, operator: Operator, now: number): Promise<SignInOutcome> {
  const [totp, required] = await Promise.all([findTotp(db, operator.id), twoFactorRequiredFor(db, operator.id)]);
  const step = totp?.confirmed ? "code" : required ? "enrol" : null;
  if (!step) return { kind: "session", ...(await openSession(db, operator, now)) };
  const token = randomBase64Url(32);
  await insertSignInStep(db, await sha256Hex(token), operator.id, step, now + SIGN_IN_STEP_TTL_MS);
  return { kind: "step", step, token, expiresAt: now + SIGN_IN_STEP_TTL_MS };
}

/** Starts a session for an operator who proved who they are; answers the cookie's token and the session. */
export async function openSession(db: ControlDb, operator: Operator, now: number): Promise<{ token: string; session: Session }> {
  const token = randomBase64Url(32);
  const tokenHash = await sessionTokenHash(token);
  const csrfToken = randomBase64Url(24);
  await insertSession(db, tokenHash, operator.id, csrfToken, now);
  return { token, session: { operator, roles: await rolesOf(db, operator.id), csrfToken, tokenHash } };
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
