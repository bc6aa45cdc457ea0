import { proofHolds } from "../../domain/sign-in-challenge";
import { sha256Hex } from "../../lib/crypto";
import { base64UrlDecode, base64UrlEncode, randomBase64Url } from "../../lib/random";
import type { ControlDb } from "../../store/shards";
import { spendOnce } from "../../store/operator-sessions";

/**
 * An account's recent failed sign-ins never lock it: past CHALLENGE_AFTER_FAILURES they only make
 * each further try cost a proof of work (see domain/sign-in-challenge), whoever makes it. The
 * operator's browser solves it in a second or two; an attacker pays that for every guess.
 */
export const CHALLENGE_AFTER_FAILURES = 5;
/** Zero bits asked for at the first challenge, one more per FAILURES_PER_EXTRA_BIT further failures, capped. */
export const FIRST_DIFFICULTY = 10;
export const MAX_DIFFICULTY = 14;
const FAILURES_PER_EXTRA_BIT = 10;
/** A challenge works once, within this long of being issued. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;

/** Zero bits a sign-in must prove for an account with this many recent failures; 0 when no challenge is due. */
export function difficultyFor(failures: number): number {
  if (failures < CHALLENGE_AFTER_FAILURES) return 0;
  return Math.min(MAX_DIFFICULTY, FIRST_DIFFICULTY + Math.floor((failures - CHALLENGE_AFTER_FAILURES) / FAILURES_PER_EXTRA_BIT));
}

export interface IssuedChallenge {
  token: string;
  difficulty: number;
  expiresAt: number;
}

export interface SentChallenge {
  token: string;
  nonce: string;
}

export type ChallengeCheck = { ok: true } | { ok: false; field: "challenge" | "challenge.nonce"; reason: string };

interface ChallengePayload {
  id: string;
  /** Which account it was issued for (a hash, so the token does not carry the address). */
  account: string;
  difficulty: number;
  expiresAt: number;
}

const encoder = new TextEncoder();

// The signing key is derived from SECRETS_KEY for this one use, so it signs nothing else.
async function signingKey(secretsKey: string): Promise<CryptoKey> {
  const raw = Uint8Array.from(atob(secretsKey), (c) => c.charCodeAt(0));
  const base = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("sign-in challenge") },
    base,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

const accountTag = (email: string) => sha256Hex(`sign-in challenge account:${email}`);

export async function issueChallenge(secretsKey: string, email: string, difficulty: number, now: number): Promise<IssuedChallenge> {
  const payload: ChallengePayload = { id: randomBase64Url(12), account: await accountTag(email), difficulty, expiresAt: now + CHALLENGE_TTL_MS };
  const body = base64UrlEncode(encoder.encode(JSON.stringify(payload)));
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", await signingKey(secretsKey), encoder.encode(body)));
  return { token: `${body}.${base64UrlEncode(signature)}`, difficulty, expiresAt: payload.expiresAt };
}

async function readToken(secretsKey: string, token: string): Promise<ChallengePayload | null> {
  const [body, signature, ...rest] = token.split(".");
  if (!body || !signature || rest.length) return null;
  const signatureBytes = base64UrlDecode(signature);
  if (!signatureBytes || !(await crypto.subtle.verify("HMAC", await signingKey(secretsKey), signatureBytes, encoder.encode(body)))) return null;
  const bodyBytes = base64UrlDecode(body);
  return bodyBytes ? (JSON.parse(new TextDecoder().decode(bodyBytes)) as ChallengePayload) : null;
}

/**
 * Whether `sent` answers a challenge this server issued for `email`, unexpired, at least as hard as
 * `required`, never used before; a valid one is spent here, before the password is checked.
 */
export async function checkChallenge(
  db: ControlDb,
  secretsKey: string,
  email: string,
  sent: SentChallenge | undefined,
  required: number,
  now: number,
): Promise<ChallengeCheck> {
  const refuse = (reason: string, field: "challenge" | "challenge.nonce" = "challenge"): ChallengeCheck => ({ ok: false, field, reason });
  if (!sent) return refuse(`is required: this account had ${CHALLENGE_AFTER_FAILURES} or more failed sign-ins lately; get one from POST /auth/v1/sign-in/challenge and send its token with a solving nonce`);
  const payload = await readToken(secretsKey, sent.token);
  if (!payload || payload.account !== (await accountTag(email))) return refuse("is not a challenge this server issued for this email; get a new one");
  if (payload.expiresAt <= now) return refuse("has expired; get a new one");
  if (payload.difficulty < required) return refuse("is easier than this account now needs; get a new one");
  if (!(await proofHolds(sent.token, sent.nonce, payload.difficulty))) return refuse(`does not solve the challenge (needs ${payload.difficulty} leading zero bits)`, "challenge.nonce");
  if (!(await spendOnce(db, `spent-challenge:${payload.id}`, now))) return refuse("was already used; get a new one");
  return { ok: true };
}
