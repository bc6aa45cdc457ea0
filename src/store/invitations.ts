import type { ControlDb } from "./shards";
import type { OperatorRole } from "../domain/operators";
import { OPERATOR_COLUMNS, operatorFromRow, type Operator, type OperatorRow } from "./operators";

export interface Invitation {
  id: string;
  panelId: string;
  email: string;
  role: OperatorRole;
  invitedBy: string | null;
  createdAt: number;
  sentAt: number;
  expiresAt: number;
  acceptedAt: number | null;
  revokedAt: number | null;
}

interface InvitationRow {
  id: string;
  panel_id: string;
  email: string;
  role: OperatorRole;
  invited_by: string | null;
  created_at: number;
  sent_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
}

const COLUMNS = "id, panel_id, email, role, invited_by, created_at, sent_at, expires_at, accepted_at, revoked_at";
const OPEN = "accepted_at IS NULL AND revoked_at IS NULL";

function fromRow(row: InvitationRow): Invitation {
  return {
    id: row.id,
    panelId: row.panel_id,
    email: row.email,
    role: row.role,
    invitedBy: row.invited_by,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    expiresAt: row.expires_at,
    acceptedAt: row.accepted_at,
    revokedAt: row.revoked_at,
  };
}

/** The panel's open invitations (neither accepted nor revoked; expired ones included), newest first. */
export async function openInvitations(db: ControlDb, panelId: string): Promise<Invitation[]> {
  const { results } = await db
    .prepare(`SELECT ${COLUMNS} FROM operator_invitations WHERE panel_id = ? AND ${OPEN} ORDER BY sent_at DESC, id`)
    .bind(panelId)
    .all<InvitationRow>();
  return results.map(fromRow);
}

export async function openInvitation(db: ControlDb, panelId: string, id: string): Promise<Invitation | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM operator_invitations WHERE panel_id = ? AND id = ? AND ${OPEN}`).bind(panelId, id).first<InvitationRow>();
  return row ? fromRow(row) : null;
}

export async function invitationByToken(db: ControlDb, tokenHash: string): Promise<Invitation | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM operator_invitations WHERE token_hash = ?`).bind(tokenHash).first<InvitationRow>();
  return row ? fromRow(row) : null;
}

/**
 * Opens an invitation, or renews the open one of the same address in the panel: a new token (the
 * old link stops working), role, sender and expiry. Answers the stored invitation and whether it
 * was renewed.
 */
export async function upsertInvitation(
  db: ControlDb,
  invitation: Omit<Invitation, "acceptedAt" | "revokedAt">,
  tokenHash: string,
): Promise<{ invitation: Invitation; renewed: boolean }> {
  const row = await db
    .prepare(
      `INSERT INTO operator_invitations (id, panel_id, email, role, token_hash, invited_by, created_at, sent_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (panel_id, email) WHERE ${OPEN} DO UPDATE SET
         role = excluded.role, token_hash = excluded.token_hash, invited_by = excluded.invited_by, sent_at = excluded.sent_at, expires_at = excluded.expires_at
       RETURNING ${COLUMNS}`,
    )
    .bind(invitation.id, invitation.panelId, invitation.email, invitation.role, tokenHash, invitation.invitedBy, invitation.createdAt, invitation.sentAt, invitation.expiresAt)
    .first<InvitationRow>();
  const stored = fromRow(row!);
  return { invitation: stored, renewed: stored.id !== invitation.id };
}

/** Revokes an open invitation; answers it as revoked, or null when none was open. */
export async function revokeInvitation(db: ControlDb, panelId: string, id: string, now: number): Promise<Invitation | null> {
  const row = await db
    .prepare(`UPDATE operator_invitations SET revoked_at = ? WHERE panel_id = ? AND id = ? AND ${OPEN} RETURNING ${COLUMNS}`)
    .bind(now, panelId, id)
    .first<InvitationRow>();
  return row ? fromRow(row) : null;
}

/** Revokes the address's open invitation to the panel, if it has one (a statement, for a batch). */
export function revokeOpenInvitationStatement(db: ControlDb, panelId: string, email: string, now: number): D1PreparedStatement {
  return db.prepare(`UPDATE operator_invitations SET revoked_at = ? WHERE panel_id = ? AND email = ? AND ${OPEN}`).bind(now, panelId, email);
}

/**
 * Spends an open, unexpired invitation and gives its address the role, in one batch: the
 * operator is created with `passwordHash` unless the address has an account already, and each
 * write is conditional on the invitation still being open, so a link works once even when two
 * acceptances race. Answers the operator, or null when the invitation was not open.
 */
export async function acceptInvitation(
  db: ControlDb,
  tokenHash: string,
  newOperator: { id: string; name: string | null; passwordHash: string },
  now: number,
): Promise<Operator | null> {
  const open = `i.token_hash = ? AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?`;
  const [, , spent, accepted] = await db.batch([
    db
      .prepare(
        `INSERT INTO operators (id, email, name, disabled, created_at, password_hash, updated_at)
         SELECT ?, i.email, ?, 0, ?, ?, ? FROM operator_invitations i WHERE ${open} ON CONFLICT (email) DO NOTHING`,
      )
      .bind(newOperator.id, newOperator.name, now, newOperator.passwordHash, now, tokenHash, now),
    db
      .prepare(
        `INSERT INTO operator_roles (operator_id, panel_id, role, created_at)
         SELECT o.id, i.panel_id, i.role, ? FROM operator_invitations i JOIN operators o ON o.email = i.email WHERE ${open}
         ON CONFLICT (operator_id, panel_id) DO UPDATE SET role = excluded.role`,
      )
      .bind(now, tokenHash, now),
    db
      .prepare(`UPDATE operator_invitations AS i SET accepted_at = ? WHERE ${open} RETURNING email`)
      .bind(now, tokenHash, now),
    // The invitee's operator, read in the same batch (meaningful only when this batch spent the link).
    db
      .prepare(`SELECT ${OPERATOR_COLUMNS} FROM operators WHERE email = (SELECT email FROM operator_invitations WHERE token_hash = ? AND accepted_at = ?)`)
      .bind(tokenHash, now),
  ]);
  if (spent!.results.length === 0) return null;
  return operatorFromRow(accepted!.results[0] as OperatorRow);
}
