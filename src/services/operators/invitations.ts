import { sendTransactional, type MailerEnv } from "../channels/mailer";
import { hashPassword, sha256Hex, verifyPassword } from "../../lib/crypto";
import { config } from "../../lib/config";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId, randomBase64Url } from "../../lib/random";
import type { OperatorRole } from "../../domain/operators";
import {
  acceptInvitation as spendInvitation,
  invitationByToken,
  openInvitation,
  revokeInvitation as markRevoked,
  upsertInvitation,
  type Invitation,
} from "../../store/invitations";
import { findOperatorByEmail, panelMembers } from "../../store/operators";
import { recentFailures, recordFailure } from "../../store/operator-sessions";
import { getPanel } from "../../store/panels";
import type { ControlDb, ShardDb } from "../../store/shards";
import { panelDb } from "../access/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { accountSubject, addressSubject, afterPassword, FAILURES_PER_ADDRESS, SIGN_IN_WINDOW_MS, type SignInOutcome } from "./sessions";

/** An invitation's link works once, for this long; resending starts a new one. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** The panel's page an invitation link opens; the token rides in the fragment, which no server or Referer sees. */
export const INVITATION_PAGE = "/invitation";

type InviteEnv = Pick<Env, "DB"> & MailerEnv;

export interface InvitationInput {
  email: string;
  role: OperatorRole;
}

/**
 * Invites an address to the panel with a role and mails it a link. Inviting an address whose
 * invitation is still open renews it: a new link (the old one stops working), the new role and
 * seven more days. Refused (conflict) when the address already has a role in the panel.
 */
export async function inviteOperator(
  env: InviteEnv,
  db: ShardDb,
  panel: { id: string; name: string },
  input: InvitationInput,
  by: Auditor,
  now = Date.now(),
): Promise<Result<Invitation>> {
  const members = await panelMembers(env.DB, panel.id);
  const member = members.find((m) => m.email === input.email);
  if (member) return refusedField("conflict", "email", `${input.email} is already a ${member.role} in this panel; change their role in the table instead`);
  const token = randomBase64Url(32);
  const { invitation, renewed } = await upsertInvitation(
    env.DB,
    { id: newId("inv"), panelId: panel.id, email: input.email, role: input.role, invitedBy: by.operator?.email ?? null, createdAt: now, sentAt: now, expiresAt: now + INVITATION_TTL_MS },
    await sha256Hex(token),
  );
  await mailInvitation(env, panel.name, invitation, token);
  await recordAudit(db, panel.id, by, renewed ? "operator.invitation_resent" : "operator.invited", invitation.id, { email: invitation.email, role: invitation.role });
  return succeeded(invitation);
}

const noSuchInvitation = (id: string) => refused("not_found", [], `No open invitation with id "${id}" in this panel`);

/** Mails an open invitation again with a new link; the old link stops working. */
export async function resendInvitation(env: InviteEnv, db: ShardDb, panel: { id: string; name: string }, id: string, by: Auditor): Promise<Result<Invitation>> {
  const invitation = await openInvitation(env.DB, panel.id, id);
  if (!invitation) return noSuchInvitation(id);
  return inviteOperator(env, db, panel, { email: invitation.email, role: invitation.role }, by);
}

/** Revokes an open invitation: its link then says so. */
export async function revokeInvitation(env: Pick<Env, "DB">, db: ShardDb, panelId: string, id: string, by: Auditor): Promise<Result<true>> {
  const invitation = await markRevoked(env.DB, panelId, id, Date.now());
  if (!invitation) return noSuchInvitation(id);
  await recordAudit(db, panelId, by, "operator.invitation_revoked", id, { email: invitation.email, role: invitation.role });
  return succeeded(true);
}

async function mailInvitation(env: InviteEnv, panelName: string, invitation: Invitation, token: string): Promise<void> {
  const settings = config(env);
  // The deployment's own address, never a request's Host header.
  const link = `${settings.publicBaseUrl}${INVITATION_PAGE}#token=${token}`;
  const from = invitation.invitedBy ? `${invitation.invitedBy} invites you` : "You are invited";
  await sendTransactional(env, {
    from: settings.mailFrom,
    to: invitation.email,
    subject: `Join the panel ${panelName}`,
    text: [
      `${from} to work in the panel "${panelName}" as ${invitation.role}.`,
      "",
      `Open this link within ${INVITATION_TTL_MS / 86_400_000} days to choose your password and sign in. It works once:`,
      link,
      "",
      "If you did not expect this, ignore this mail: nothing happens unless the link is opened and a password set.",
    ].join("\n"),
  });
}

/** What an invitation link's page shows before the invitee sets a password. */
export interface InvitationPreview {
  email: string;
  panelName: string;
  role: OperatorRole;
  expiresAt: number;
  /** The address has an operator account already: the invitee signs in with its password instead of choosing one. */
  hasAccount: boolean;
}

/** Why a link no longer works, in words the invitee can act on. */
function closedReason(invitation: Invitation | null, now: number): string | null {
  if (!invitation) return "this invitation link is not valid: it was replaced by a newer invitation mail, or it is incomplete; use the newest mail or ask the panel's owner to send it again";
  if (invitation.acceptedAt !== null) return "this invitation was already accepted; sign in with your email and password";
  if (invitation.revokedAt !== null) return "this invitation was revoked by the panel's owner; ask them for a new one if you still need access";
  if (invitation.expiresAt <= now) return "this invitation has expired (links work for 7 days); ask the panel's owner to send it again";
  return null;
}

/** The invitation a link's token names, or why it no longer works (field `token`). */
export async function previewInvitation(db: ControlDb, token: string, now = Date.now()): Promise<Result<InvitationPreview>> {
  const invitation = await invitationByToken(db, await sha256Hex(token));
  const closed = closedReason(invitation, now);
  if (closed || !invitation) return refusedField("invalid", "token", closed!);
  const [panel, operator] = await Promise.all([getPanel(db, invitation.panelId), findOperatorByEmail(db, invitation.email)]);
  if (!panel) return refusedField("invalid", "token", closedReason(null, now)!);
  return succeeded({ email: invitation.email, panelName: panel.name, role: invitation.role, expiresAt: invitation.expiresAt, hasAccount: operator !== null });
}

export interface Acceptance {
  token: string;
  /** The new operator's password, or the existing account's. */
  password: string;
  name: string | null;
  /** The client's address (CF-Connecting-IP), for the rate limit of wrong passwords. */
  address: string;
}

/**
 * Accepts an invitation: a new address becomes an operator with the password chosen; an
 * address with an account proves it with that account's password (an invitation never changes
 * a password). The role is given, the link spent (once, even under a race) and a session
 * opened, or the second-factor step due first. Refused: a closed link (invalid, field token), a wrong password of an existing
 * account (unauthenticated), too many failures from the address (rate_limited).
 */
export async function acceptInvitation(env: Env, input: Acceptance, now = Date.now()): Promise<Result<SignInOutcome>> {
  const db = env.DB;
  const tokenHash = await sha256Hex(input.token);
  const invitation = await invitationByToken(db, tokenHash);
  const closed = closedReason(invitation, now);
  if (closed || !invitation) return refusedField("invalid", "token", closed!);

  const existing = await findOperatorByEmail(db, invitation.email);
  let passwordHash = "";
  if (existing) {
    const subjects = [addressSubject(input.address), accountSubject(existing.email)];
    const windowStart = now - SIGN_IN_WINDOW_MS;
    if ((await recentFailures(db, [subjects[0]!], windowStart)) >= FAILURES_PER_ADDRESS) return refused("rate_limited", [], "Too many failed sign-ins from this address; wait a few minutes and try again");
    if (existing.disabled) return refusedField("invalid", "token", "the operator account of this address is disabled; ask the deployment's administrator");
    if (!(await verifyPassword(input.password, existing.passwordHash))) {
      await recordFailure(db, subjects, now, windowStart);
      return refusedField("unauthenticated", "password", "is not the password of your existing operator account");
    }
  } else {
    passwordHash = await hashPassword(input.password);
  }

  const operator = await spendInvitation(db, tokenHash, { id: newId("opr"), name: input.name, passwordHash }, now);
  if (!operator) return refusedField("invalid", "token", closedReason(await invitationByToken(db, tokenHash), now) ?? "this invitation was already accepted; sign in with your email and password");
  await recordAudit(await panelDb(env, invitation.panelId), invitation.panelId, { operator: { id: operator.id, email: operator.email } }, "operator.invitation_accepted", invitation.id, {
    email: operator.email,
    role: invitation.role,
    new_account: !existing,
  });
  // The account's second factor, or the panel's requirement of one, still applies.
  return succeeded(await afterPassword(db, operator, now));
}
