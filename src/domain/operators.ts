import { z } from "../lib/z";
import { emailAddress as email } from "./fields";

/** Roles an operator holds per panel, from most to least allowed. */
export const OPERATOR_ROLES = ["owner", "marketer", "viewer"] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];
export const operatorRole = z.enum(OPERATOR_ROLES, { error: "must be owner, marketer or viewer" });

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;

const password = z
  .string()
  .min(MIN_PASSWORD_LENGTH, { error: `must be at least ${MIN_PASSWORD_LENGTH} characters` })
  .max(MAX_PASSWORD_LENGTH, { error: `must be at most ${MAX_PASSWORD_LENGTH} characters` });

export const signInBody = z.object({
  email,
  // Any length is checked against the hash, so a too-short password is "wrong", not a hint.
  password: z.string({ error: "is required" }).min(1, { error: "is required" }).max(MAX_PASSWORD_LENGTH),
  /** A solved proof-of-work challenge, needed after recent failed sign-ins for the account. */
  challenge: z
    .object({
      token: z.string({ error: "must be the token of a challenge" }).min(1, { error: "is required" }).max(1000),
      nonce: z.string({ error: "must be a string" }).min(1, { error: "is required" }).max(100),
    }, { error: "must be an object with token and nonce" })
    .optional(),
});

export const signInChallengeBody = z.object({ email });

/** What POST /auth/v1/sign-in/challenge answers. */
export type SignInChallengeView = { required: false } | { required: true; token: string; difficulty: number; expires_at: string };

export const addOperatorBody = z
  .object({
    email,
    name: z.string().trim().max(200).optional(),
    role: operatorRole,
    /** Required when no operator has this email yet; ignored for an existing operator. */
    password: password.optional(),
  })
  .strict();

/** An owner's invitation of an address to the panel (POST /panels/{panel}/invitations). */
export const inviteOperatorBody = z.object({ email, role: operatorRole }).strict();

/**
 * The token of a mailed link (invitation, password reset) or of a sign-in waiting for its second
 * factor. The house messages say what is wrong with a value of the wrong type or length.
 */
const linkToken = z.string().min(1, { error: "is required" }).max(200);
/** What an invitation link's page asks about its token (POST /auth/v1/invitation). */
export const invitationLookupBody = z.object({ token: linkToken }).strict();
/** Accepting an invitation: a new operator's chosen password, or an existing account's (POST /auth/v1/invitation/accept). */
export const acceptInvitationBody = z
  .object({
    token: linkToken,
    password,
    name: z.string().trim().max(200).optional(),
  })
  .strict();

/** What POST /auth/v1/invitation answers for an open link. */
export interface InvitationPreviewView {
  email: string;
  panel_name: string;
  role: OperatorRole;
  expires_at: string;
  has_account: boolean;
}

export const changeOperatorBody = z.object({ role: operatorRole }).strict();

export const passwordResetRequestBody = z.object({ email }).strict();
export const passwordResetBody = z.object({ token: linkToken, password }).strict();

/** A second-factor code: the authenticator's 6 digits or a recovery code. */
const code = z.string().trim().min(1, { error: "is required" }).max(40, { error: "must be at most 40 characters" });
export const signInCodeBody = z.object({ token: linkToken, code }).strict();
export const signInEnrolBody = z.object({ token: linkToken }).strict();
export const twoFactorCodeBody = z.object({ code }).strict();

/** What sign-in (and accepting an invitation) answers when a second factor is due before the session. */
export interface SignInStepView {
  step: "code" | "enrol";
  token: string;
  expires_at: string;
}

/** An authenticator to enrol: the secret as text and as an otpauth:// URI. */
export interface TotpEnrolmentView {
  secret: string;
  uri: string;
}

export interface TwoFactorStatusView {
  enabled: boolean;
  recovery_codes_left: number;
  required: boolean;
}

/** What /auth/v1/session and sign-in answer. */
export interface SessionView {
  operator: { id: string; email: string; name: string | null };
  panels: { id: string; name: string; role: OperatorRole }[];
  csrf_token: string;
}

// WebAuthn answers as @simplewebauthn/browser sends them: base64url fields, checked in shape
// here and cryptographically by the service.
const b64url = z.string().min(1).max(16_384).regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url");
const credentialBase = {
  id: b64url,
  rawId: b64url,
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
};
export const passkeyRegistrationBody = z
  .object({
    name: z.string().trim().min(1, "must not be empty").max(60, "must be at most 60 characters").default("Passkey"),
    credential: z.object({
      ...credentialBase,
      response: z.object({
        clientDataJSON: b64url,
        attestationObject: b64url,
        transports: z.array(z.enum(["ble", "cable", "hybrid", "internal", "nfc", "smart-card", "usb"])).max(8).optional(),
        authenticatorData: b64url.optional(),
        publicKey: b64url.optional(),
        publicKeyAlgorithm: z.number().int().optional(),
      }),
    }),
  })
  .strict();
export const passkeySignInBody = z
  .object({
    credential: z.object({
      ...credentialBase,
      response: z.object({ clientDataJSON: b64url, authenticatorData: b64url, signature: b64url, userHandle: b64url.optional() }),
    }),
  })
  .strict();

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}
