import type { ControlDb } from "./shards";
import type { OperatorRole } from "../domain/operators";
import { isUniqueViolation } from "./sql";

export type { OperatorRole };

export interface Operator {
  id: string;
  email: string;
  name: string | null;
  disabled: boolean;
  createdAt: number;
}

export interface OperatorRow {
  id: string;
  email: string;
  name: string | null;
  disabled: number;
  created_at: number;
}

export const OPERATOR_COLUMNS = "id, email, name, disabled, created_at";

export function operatorFromRow(row: OperatorRow): Operator {
  return { id: row.id, email: row.email, name: row.name, disabled: row.disabled === 1, createdAt: row.created_at };
}

/** Returns false when an operator with this email exists. */
export async function insertOperator(db: ControlDb, operator: Operator, passwordHash: string): Promise<boolean> {
  try {
    await db
      .prepare(`INSERT INTO operators (${OPERATOR_COLUMNS}, password_hash, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
      .bind(operator.id, operator.email, operator.name, operator.disabled ? 1 : 0, operator.createdAt, passwordHash, operator.createdAt)
      .run();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

export async function findOperatorByEmail(db: ControlDb, email: string): Promise<(Operator & { passwordHash: string }) | null> {
  const row = await db
    .prepare(`SELECT ${OPERATOR_COLUMNS}, password_hash FROM operators WHERE email = ?`)
    .bind(email)
    .first<OperatorRow & { password_hash: string }>();
  return row ? { ...operatorFromRow(row), passwordHash: row.password_hash } : null;
}

export async function getOperator(db: ControlDb, operatorId: string): Promise<Operator | null> {
  const row = await db.prepare(`SELECT ${OPERATOR_COLUMNS} FROM operators WHERE id = ?`).bind(operatorId).first<OperatorRow>();
  return row ? operatorFromRow(row) : null;
}

export async function setOperatorPassword(db: ControlDb, operatorId: string, passwordHash: string, now: number): Promise<void> {
  await db.prepare("UPDATE operators SET password_hash = ?, updated_at = ? WHERE id = ?").bind(passwordHash, now, operatorId).run();
}

export interface PanelRole {
  panelId: string;
  panelName: string;
  role: OperatorRole;
}

export async function rolesOf(db: ControlDb, operatorId: string): Promise<PanelRole[]> {
  const { results } = await db
    .prepare("SELECT r.panel_id, p.name, r.role FROM operator_roles r JOIN panels p ON p.id = r.panel_id WHERE r.operator_id = ? ORDER BY p.name, p.id")
    .bind(operatorId)
    .all<{ panel_id: string; name: string; role: OperatorRole }>();
  return results.map((row) => ({ panelId: row.panel_id, panelName: row.name, role: row.role }));
}

/** Gives the operator a role in the panel, replacing the one they had there. */
export async function setRole(db: ControlDb, operatorId: string, panelId: string, role: OperatorRole, now: number): Promise<void> {
  await setRoleStatement(db, operatorId, panelId, role, now).run();
}

/** setRole's statement, for a batch. */
export function setRoleStatement(db: ControlDb, operatorId: string, panelId: string, role: OperatorRole, now: number): D1PreparedStatement {
  return db
    .prepare(
      "INSERT INTO operator_roles (operator_id, panel_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (operator_id, panel_id) DO UPDATE SET role = excluded.role",
    )
    .bind(operatorId, panelId, role, now);
}

export async function removeRole(db: ControlDb, operatorId: string, panelId: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM operator_roles WHERE operator_id = ? AND panel_id = ?").bind(operatorId, panelId).run();
  return result.meta.changes > 0;
}

export interface PanelMember extends Operator {
  role: OperatorRole;
}

export async function panelMembers(db: ControlDb, panelId: string): Promise<PanelMember[]> {
  const { results } = await db
    .prepare(
      `SELECT o.id, o.email, o.name, o.disabled, o.created_at, r.role FROM operator_roles r JOIN operators o ON o.id = r.operator_id WHERE r.panel_id = ? ORDER BY o.email`,
    )
    .bind(panelId)
    .all<OperatorRow & { role: OperatorRole }>();
  return results.map((row) => ({ ...operatorFromRow(row), role: row.role }));
}

export async function panelMember(db: ControlDb, panelId: string, operatorId: string): Promise<PanelMember | null> {
  const row = await db
    .prepare(
      `SELECT o.id, o.email, o.name, o.disabled, o.created_at, r.role FROM operator_roles r JOIN operators o ON o.id = r.operator_id WHERE r.panel_id = ? AND r.operator_id = ?`,
    )
    .bind(panelId, operatorId)
    .first<OperatorRow & { role: OperatorRole }>();
  return row ? { ...operatorFromRow(row), role: row.role } : null;
}
