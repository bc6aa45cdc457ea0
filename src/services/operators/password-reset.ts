import { sendTransactional, type MailerEnv } from "../channels/mailer";
import { hashPassword, sha256Hex } from "../../lib/crypto";
import { refusedField, refused, succeeded, type Result } from "../../lib/problems";
import { randomBase64Url } from "../../lib/random";
import { clearFailures, completePasswordReset, consumePasswordReset, insertPasswordReset, recentFailures, recordFailure } from "../../store/operator-sessions";
import { findOperatorByEmail, getOperator } from "../../store/operators";
import type { ControlDb } from "../../store/shards";
import { accountSubject, SIGN_IN_WINDOW_MS } from "./sessions";
import { config } from "../../lib/config";

/** A reset link works once, for this long. */
export const PASSWORD_RESET_TTL_MS = 30 * 60 * 1000;
/** Reset requests allowed per window (the sign-in window), per address and per email asked for. */
export const RESETS_PER_ADDRESS = 30;
export const RESETS_PER_ACCOUNT = 5;

/** The panel's page a reset link opens; the token rides in the fragment, which no server or Referer sees. */
export const RESET_PAGE = "/reset-password";

type ResetEnv = Pick<Env, "DB"> & MailerEnv;

export interface ResetRequest {
  email: string;
  /** The client's address (CF-Connecting-IP), for the rate limit. */
  address: string;
  now: number;
  /** Takes the lookup and the mail, so the answer does not wait for them. */
  waitUntil(work: Promise<unknown>): void;
}

/**
 * Asks for a reset link. The answer is the same whether the address has an operator account:
 * the rate limit counts the address asked for whether or not it exists, and the lookup, the
 * link and the mail happen after the answer.
 */
export async function requestPasswordReset(env: ResetEnv, request: ResetRequest): Promise<Result<void>> {
  const subjects = [`reset-address:${request.address}`, `reset-${accountSubject(request.email)}`];
  const windowStart = request.now - SIGN_IN_WINDOW_MS;
  const [byAddress, byAccount] = await Promise.all([recentFailures(env.DB, [subjects[0]!], windowStart), recentFailures(env.DB, [subjects[1]!], windowStart)]);
  if (byAddress >= RESETS_PER_ADDRESS || byAccount >= RESETS_PER_ACCOUNT) return refused("rate_limited", [], "Too many reset requests; wait a few minutes and try again");
  await recordFailure(env.DB, subjects, request.now, windowStart);
  request.waitUntil(sendResetLink(env, request));
  return succeeded(undefined);
}

async function sendResetLink(env: ResetEnv, request: ResetRequest): Promise<void> {
  const operator = await findOperatorByEmail(env.DB, request.email);
  if (!operator || operator.disabled) return;
  const token = randomBase64Url(32);
  await insertPasswordReset(env.DB, await sha256Hex(token), operator.id, request.now + PASSWORD_RESET_TTL_MS);
  // The deployment's own address, never the request's Host header, which the asker chooses.
  const link = `${config(env).publicBaseUrl}${RESET_PAGE}#token=${token}`;
  await sendTransactional(env, {
    from: config(env).mailFrom,
    to: operator.email,
    subject: "Set a new password for the panel",
    text: [
      `Someone, hopefully you, asked to set a new password for the panel account ${operator.email}.`,
      "",
      `Open this link within ${PASSWORD_RESET_TTL_MS / 60_000} minutes to choose a new password. It works once:`,
      link,
      "",
      "Setting a new password signs the account out everywhere. If you did not ask for this, ignore this mail: your password stays as it is.",
    ].join("\n"),
  });
}

/**
 * Sets a new password with a reset link's token: the token must be unused and unexpired, and it
 * is spent first, so a link works once even when two requests race. Every session of the
 * operator ends, and so do their other links.
 */
export async function resetPassword(db: ControlDb, token: string, password: string, now: number): Promise<Result<void>> {
  const passwordHash = await hashPassword(password);
  const operatorId = await consumePasswordReset(db, await sha256Hex(token), now);
  if (!operatorId) return refusedField("invalid", "token", "this link has expired or was already used; ask for a new one");
  await completePasswordReset(db, operatorId, passwordHash, now);
  // The owner of the account proved it: earlier failed sign-ins no longer hold it back.
  const operator = await getOperator(db, operatorId);
  if (operator) await clearFailures(db, accountSubject(operator.email));
  return succeeded(undefined);
}
