import { Secret, TOTP } from "otpauth";
import { decryptSecret, encryptSecret, sha256Hex } from "../../lib/crypto";
import { config, type ConfigSource } from "../../lib/config";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { randomBase32 } from "../../lib/random";
import { clearFailures, recentFailures, recordFailure } from "../../store/operator-sessions";
import type { ControlDb } from "../../store/shards";
import {
  confirmTotp,
  deleteTotp,
  findTotp,
  spendRecoveryCode,
  spendTotpStep,
  startTotp,
  twoFactorRequiredFor,
  unusedRecoveryCodes,
} from "../../store/two-factor";

// TOTP (RFC 6238) second factor through `otpauth`: 6 digits, 30-second steps, SHA-1, the
// parameters every authenticator app reads from an otpauth:// URI. Codes of the previous and
// next step are taken too (clock drift); each step's code works once.

const PERIOD_SECONDS = 30;
const RECOVERY_CODES = 10;
/** Wrong codes per operator in the sign-in window before further tries are refused (429). */
export const CODE_FAILURES_PER_OPERATOR = 10;
const CODE_WINDOW_MS = 15 * 60 * 1000;

type TwoFactorEnv = Pick<Env, "DB"> & ConfigSource;

const codeSubject = (operatorId: string) => `two-factor:${operatorId}`;

function totpOf(base32: string, label: string, issuer: string): TOTP {
  return new TOTP({ issuer, label, algorithm: "SHA1", digits: 6, period: PERIOD_SECONDS, secret: Secret.fromBase32(base32) });
}

/** The name authenticator apps show for the account: the deployment's host. */
function issuerOf(env: ConfigSource): string {
  return `Panel ${new URL(config(env).publicBaseUrl).host}`;
}

/** A recovery code as shown: ten letters and digits in two groups (50 bits, no look-alike letters). */
function newRecoveryCode(): string {
  const text = randomBase32(10);
  return `${text.slice(0, 5)}-${text.slice(5)}`;
}

const normalRecoveryCode = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, "");

export interface TwoFactorStatus {
  enabled: boolean;
  recoveryCodesLeft: number;
  /** A panel the operator works in requires a second factor (it cannot be turned off). */
  required: boolean;
}

export async function twoFactorStatus(db: ControlDb, operatorId: string): Promise<TwoFactorStatus> {
  const [totp, left, required] = await Promise.all([findTotp(db, operatorId), unusedRecoveryCodes(db, operatorId), twoFactorRequiredFor(db, operatorId)]);
  return { enabled: !!totp?.confirmed, recoveryCodesLeft: totp?.confirmed ? left : 0, required };
}

/**
 * Starts enrolling an authenticator: a new secret, stored encrypted and unconfirmed until a
 * code proves the app holds it. Refused (conflict) when a second factor is on already.
 */
export async function beginEnrolment(env: TwoFactorEnv, operator: { id: string; email: string }, now = Date.now()): Promise<Result<{ secret: string; uri: string }>> {
  const secret = new Secret({ size: 20 }).base32;
  if (!(await startTotp(env.DB, operator.id, await encryptSecret(config(env).secretsKey, secret), now))) {
    return refused("conflict", [], "Two-factor sign-in is on already; turn it off first to enrol another authenticator");
  }
  return succeeded({ secret, uri: totpOf(secret, operator.email, issuerOf(env)).toString() });
}

/** The time step a TOTP code belongs to, if it is right for the stored secret now; null otherwise. */
async function stepOf(env: TwoFactorEnv, encrypted: string, code: string, now: number): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const secret = await decryptSecret(config(env).secretsKey, encrypted);
  const delta = totpOf(secret, "", "").validate({ token: code, timestamp: now, window: 1 });
  return delta === null ? null : Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
}

async function tooManyFailures(db: ControlDb, operatorId: string, now: number): Promise<boolean> {
  return (await recentFailures(db, [codeSubject(operatorId)], now - CODE_WINDOW_MS)) >= CODE_FAILURES_PER_OPERATOR;
}

const limited = () => refused<never>("rate_limited", [], "Too many wrong codes; wait 15 minutes and try again");
const wrongCode = (recovery: boolean) => refusedField<never>("unauthenticated", "code", recovery ? "is not a valid recovery code, or it was used already" : "is not the current code of your authenticator, or it was used already");

/** Confirms an enrolment with a first code; answers the ten recovery codes, shown this once. */
export async function confirmEnrolment(env: TwoFactorEnv, operatorId: string, code: string, now = Date.now()): Promise<Result<{ recoveryCodes: string[] }>> {
  const totp = await findTotp(env.DB, operatorId);
  if (!totp) return refusedField("invalid", "code", "start the enrolment first: no authenticator is being enrolled");
  if (totp.confirmed) return refused("conflict", [], "Two-factor sign-in is on already");
  if (await tooManyFailures(env.DB, operatorId, now)) return limited();
  const step = await stepOf(env, totp.secret, code.trim(), now);
  if (step === null || !(await spendTotpStep(env.DB, operatorId, step))) {
    await recordFailure(env.DB, [codeSubject(operatorId)], now, now - CODE_WINDOW_MS);
    return wrongCode(false);
  }
  const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  await confirmTotp(env.DB, operatorId, await Promise.all(recoveryCodes.map((c) => sha256Hex(normalRecoveryCode(c)))), now);
  await clearFailures(env.DB, codeSubject(operatorId));
  return succeeded({ recoveryCodes });
}

/**
 * Checks a second-factor code: the authenticator's current code (once per step) or an unused
 * recovery code (spent). Wrong codes count per operator; past the limit every try is refused.
 */
export async function checkCode(env: TwoFactorEnv, operatorId: string, code: string, now = Date.now()): Promise<Result<{ via: "totp" | "recovery" }>> {
  const totp = await findTotp(env.DB, operatorId);
  if (!totp?.confirmed) return refusedField("invalid", "code", "two-factor sign-in is not on for this account");
  if (await tooManyFailures(env.DB, operatorId, now)) return limited();
  const trimmed = code.trim();
  const recovery = !/^\d{6}$/.test(trimmed);
  const ok = recovery
    ? await spendRecoveryCode(env.DB, operatorId, await sha256Hex(normalRecoveryCode(trimmed)), now)
    : await (async () => {
        const step = await stepOf(env, totp.secret, trimmed, now);
        return step !== null && (await spendTotpStep(env.DB, operatorId, step));
      })();
  if (!ok) {
    await recordFailure(env.DB, [codeSubject(operatorId)], now, now - CODE_WINDOW_MS);
    return wrongCode(recovery);
  }
  await clearFailures(env.DB, codeSubject(operatorId));
  return succeeded({ via: recovery ? "recovery" : "totp" });
}

/** Turns the second factor off with a code; refused while a panel the operator works in requires it. */
export async function disableTwoFactor(env: TwoFactorEnv, operatorId: string, code: string, now = Date.now()): Promise<Result<true>> {
  if (await twoFactorRequiredFor(env.DB, operatorId)) return refused("conflict", [], "A panel you work in requires two-factor sign-in; it cannot be turned off");
  const checked = await checkCode(env, operatorId, code, now);
  if (!checked.ok) return checked;
  await deleteTotp(env.DB, operatorId);
  return succeeded(true);
}
