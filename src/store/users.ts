import type { ControlDb } from "./shards";
import { PANEL_COLUMNS, panelFromRow, type Panel } from "./panels";
import { partitionsColumn } from "./panel-partitions";
import { isUniqueViolation } from "./sql";

export interface User {
  id: string;
  panelId: string;
  email: string;
  name: string | null;
  disabled: boolean;
  createdAt: number;
}

interface UserRow {
  id: string;
  panel_id: string;
  email: string;
  name: string | null;
  disabled: number;
  created_at: number;
}

const USER_COLUMNS = "id, panel_id, email, name, disabled, created_at";

function userFromRow(row: UserRow): User {
  return {
    id: row.id,
    panelId: row.panel_id,
    email: row.email,
    name: row.name,
    disabled: row.disabled === 1,
    createdAt: row.created_at,
  };
}

/** Returns false when the panel already has a user with this email. */
export async function insertUser(db: ControlDb, user: User, keyHash: string): Promise<boolean> {
  try {
    await db
      .prepare(`INSERT INTO users (${USER_COLUMNS}, api_key_hash, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
      .bind(user.id, user.panelId, user.email, user.name, user.disabled ? 1 : 0, user.createdAt, keyHash, user.createdAt)
      .run();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

export async function listUsers(db: ControlDb, panelId: string): Promise<User[]> {
  const { results } = await db
    .prepare(`SELECT ${USER_COLUMNS} FROM users WHERE panel_id = ? ORDER BY created_at`)
    .bind(panelId)
    .all<UserRow>();
  return results.map(userFromRow);
}

export async function getUser(db: ControlDb, panelId: string, userId: string): Promise<User | null> {
  const row = await db
    .prepare(`SELECT ${USER_COLUMNS} FROM users WHERE panel_id = ? AND id = ?`)
    .bind(panelId, userId)
    .first<UserRow>();
  return row ? userFromRow(row) : null;
}

/** Replaces the user's key hash; the old key stops working at once. */
export async function replaceKeyHash(db: ControlDb, panelId: string, userId: string, keyHash: string, now: number): Promise<boolean> {
  const result = await db
    .prepare("UPDATE users SET api_key_hash = ?, updated_at = ? WHERE panel_id = ? AND id = ?")
    .bind(keyHash, now, panelId, userId)
    .run();
  return result.meta.changes > 0;
}

export async function setUserDisabled(db: ControlDb, panelId: string, userId: string, disabled: boolean, now: number): Promise<User | null> {
  const row = await db
    .prepare(`UPDATE users SET disabled = ?, updated_at = ? WHERE panel_id = ? AND id = ? RETURNING ${USER_COLUMNS}`)
    .bind(disabled ? 1 : 0, now, panelId, userId)
    .first<UserRow>();
  return row ? userFromRow(row) : null;
}

export interface KeyOwner {
  panel: Panel;
  userDisabled: boolean;
  keyHash: string;
  /** The API user the key is of, named in the audit log of the changes it makes. */
  user: { id: string; email: string };
}

const OWNER_COLUMNS = `${PANEL_COLUMNS.split(", ").map((c) => `p.${c}`).join(", ")}, ${partitionsColumn("p")}`;

/** Finds the panel and user an API key hash belongs to (the panel's schema is on its shard). */
export async function findKeyOwner(db: ControlDb, keyHash: string): Promise<KeyOwner | null> {
  const row = await db
    .prepare(`SELECT ${OWNER_COLUMNS}, u.disabled AS user_disabled, u.api_key_hash, u.id AS user_id, u.email AS user_email FROM users u JOIN panels p ON p.id = u.panel_id WHERE u.api_key_hash = ?`)
    .bind(keyHash)
    .first<Parameters<typeof panelFromRow>[0] & { user_disabled: number; api_key_hash: string; user_id: string; user_email: string }>();
  if (!row) return null;
  return { panel: panelFromRow(row), userDisabled: row.user_disabled === 1, keyHash: row.api_key_hash, user: { id: row.user_id, email: row.user_email } };
}
