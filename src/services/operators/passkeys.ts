import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { isoBase64URL, isoUint8Array } from "@simplewebauthn/server/helpers";
import { sha256Hex } from "../../lib/crypto";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { getOperator } from "../../store/operators";
import {
  deletePasskey,
  findPasskeyByCredential,
  insertPasskey,
  insertWebAuthnChallenge,
  passkeysOf,
  spendWebAuthnChallenge,
  usePasskey,
  type StoredPasskey,
} from "../../store/passkeys";
import type { ControlDb } from "../../store/shards";
import { panelDb } from "../access/shards";
import { recordAudit } from "../audit/record";
import { openSession, type Session } from "./sessions";

// Passkeys (WebAuthn) through @simplewebauthn/server. Every ceremony asks for user verification
// (a PIN or biometric on the authenticator), so a passkey proves possession and the user: it
// counts as both factors and opens a session on its own, also in panels that require two-factor
// sign-in. Challenges are stored (as hashes) server-side, live 5 minutes and work once.

export const WEBAUTHN_CHALLENGE_TTL_MS = 5 * 60 * 1000;

/** The relying party: the host the panel is served from (RP ID) and its origin. */
export interface RelyingParty {
  id: string;
  origin: string;
}

type PasskeyEnv = Env;

const expired = (field: string) => refusedField<never>("invalid", field, "the passkey challenge is unknown, expired or used already; start again");
const notVerified = (reason: string) => refusedField<never>("unauthenticated", "credential", reason);

/** The challenge a browser's answer signed, from its clientDataJSON; null when unreadable. */
function challengeOf(clientDataJSON: string): string | null {
  try {
    const parsed = JSON.parse(isoBase64URL.toUTF8String(clientDataJSON)) as { challenge?: unknown };
    return typeof parsed.challenge === "string" ? parsed.challenge : null;
  } catch {
    return null;
  }
}

export async function listPasskeys(db: ControlDb, operatorId: string): Promise<StoredPasskey[]> {
  return passkeysOf(db, operatorId);
}

/** Options for the browser's navigator.credentials.create; its challenge is stored for this operator. */
export async function passkeyRegistrationOptions(
  db: ControlDb,
  operator: { id: string; email: string; name: string | null },
  rp: RelyingParty,
  now = Date.now(),
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await passkeysOf(db, operator.id);
  const options = await generateRegistrationOptions({
    rpName: `Panel ${rp.id}`,
    rpID: rp.id,
    userName: operator.email,
    userDisplayName: operator.name ?? operator.email,
    userID: isoUint8Array.fromUTF8String(operator.id),
    attestationType: "none",
    timeout: WEBAUTHN_CHALLENGE_TTL_MS,
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransport[] })),
    authenticatorSelection: { residentKey: "required", userVerification: "required" },
  });
  await insertWebAuthnChallenge(db, await sha256Hex(options.challenge), "register", operator.id, now + WEBAUTHN_CHALLENGE_TTL_MS);
  return options;
}

async function auditEverywhere(env: PasskeyEnv, session: Session, action: "operator.passkey_added" | "operator.passkey_removed", detail: Record<string, unknown>): Promise<void> {
  const by = { operator: { id: session.operator.id, email: session.operator.email } };
  await Promise.all(session.roles.map(async (role) => recordAudit(await panelDb(env, role.panelId), role.panelId, by, action, session.operator.id, detail)));
}

/** Verifies the browser's answer to a registration challenge and stores the passkey under `name`. */
export async function registerPasskey(
  env: PasskeyEnv,
  session: Session,
  input: { name: string; credential: RegistrationResponseJSON },
  rp: RelyingParty,
  now = Date.now(),
): Promise<Result<StoredPasskey>> {
  const challenge = challengeOf(input.credential.response.clientDataJSON);
  if (!challenge || !(await spendWebAuthnChallenge(env.DB, await sha256Hex(challenge), "register", session.operator.id, now))) return expired("credential");
  let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verification = await verifyRegistrationResponse({
      response: input.credential,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
    });
  } catch (error) {
    return notVerified(`could not be verified: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!verification.verified) return notVerified("could not be verified");
  const { credential } = verification.registrationInfo;
  const passkey = {
    id: newId("pky"),
    operatorId: session.operator.id,
    credentialId: credential.id,
    publicKey: isoBase64URL.fromBuffer(credential.publicKey),
    counter: credential.counter,
    transports: credential.transports ?? input.credential.response.transports ?? [],
    name: input.name,
    createdAt: now,
  };
  if (!(await insertPasskey(env.DB, passkey))) return refused("conflict", [], "This passkey is registered already");
  await auditEverywhere(env, session, "operator.passkey_added", { name: passkey.name });
  return succeeded({ ...passkey, lastUsedAt: null });
}

export async function removePasskey(env: PasskeyEnv, session: Session, passkeyId: string): Promise<Result<true>> {
  const name = await deletePasskey(env.DB, session.operator.id, passkeyId);
  if (name === null) return refused("not_found", [], `You have no passkey with id "${passkeyId}"`);
  await auditEverywhere(env, session, "operator.passkey_removed", { name });
  return succeeded(true);
}

/** Options for navigator.credentials.get: any passkey of this site (discoverable), challenge stored. */
export async function passkeySignInOptions(db: ControlDb, rp: RelyingParty, now = Date.now()): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await generateAuthenticationOptions({ rpID: rp.id, userVerification: "required", timeout: WEBAUTHN_CHALLENGE_TTL_MS });
  await insertWebAuthnChallenge(db, await sha256Hex(options.challenge), "authenticate", null, now + WEBAUTHN_CHALLENGE_TTL_MS);
  return options;
}

/**
 * Signs in with a passkey: the challenge is spent, the signature checked against the stored
 * public key, the counter moved on; a session opens (no password, no second code: the passkey
 * with user verification is both factors).
 */
export async function signInWithPasskey(env: PasskeyEnv, credential: AuthenticationResponseJSON, rp: RelyingParty, now = Date.now()): Promise<Result<{ token: string; session: Session }>> {
  const challenge = challengeOf(credential.response.clientDataJSON);
  if (!challenge || !(await spendWebAuthnChallenge(env.DB, await sha256Hex(challenge), "authenticate", null, now))) return expired("credential");
  const passkey = await findPasskeyByCredential(env.DB, credential.id);
  const operator = passkey ? await getOperator(env.DB, passkey.operatorId) : null;
  if (!passkey || !operator || operator.disabled) return notVerified("is not a passkey of an operator of this deployment");
  let verification: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    verification = await verifyAuthenticationResponse({
      response: credential,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: { id: passkey.credentialId, publicKey: isoBase64URL.toBuffer(passkey.publicKey), counter: passkey.counter, transports: passkey.transports as AuthenticatorTransport[] },
      requireUserVerification: true,
    });
  } catch (error) {
    return notVerified(`could not be verified: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!verification.verified) return notVerified("could not be verified");
  if (!(await usePasskey(env.DB, passkey.id, passkey.counter, verification.authenticationInfo.newCounter, now))) return notVerified("was used by another sign-in at the same moment; try again");
  return succeeded(await openSession(env.DB, operator, now));
}
