import type { ControlDb } from "./shards";

export interface StoredTotp {
  /** Encrypted (lib/crypto encryptSecret). */
  secret: string;
  confirmed: boolean;
  lastStep: number;
}

export async function findTotp(db: ControlDb, operatorId: string): Promise<StoredTotp | null> {
  const row = await db
    .prepare("SELECT secret, confirmed_at, last_step FROM operator_totp WHERE operator_id = ?")
    .bind(operatorId)
    .first<{ secret: string; confirmed_at: number | null; last_step: number }>();
  return row ? { secret: row.secret, confirmed: row.confirmed_at !== null, lastStep: row.last_step } : null;
}

/** Starts (or restarts) an unconfirmed enrolment; a confirmed factor is left as it is (answers false). */
export async function startTotp(db: ControlDb, operatorId: string, encryptedSecret: string, now: number): Promise<boolean> {
  const row = await db
    .prepare(
      `INSERT INTO operator_totp (operator_id, secret, created_at) VALUES (?, ?, ?)
       ON CONFLICT (operator_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = 0 WHERE confirmed_at IS NULL
       RETURNING operator_id`,
    )
    .bind(operatorId, encryptedSecret, now)
    .first();
  return row !== null;
}

/** Records that a code of `step` was used, if no code of that step or a later one was: a code works once. */
export async function spendTotpStep(db: ControlDb, operatorId: string, step: number): Promise<boolean> {
  const row = await db.prepare("UPDATE operator_totp SET last_step = ? WHERE operator_id = ? AND last_step < ? RETURNING operator_id").bind(step, operatorId, step).first();
  return row !== null;
}

/** Confirms the enrolment and replaces the recovery codes, at once. */
export async function confirmTotp(db: ControlDb, operatorId: string, recoveryCodeHashes: string[], now: number): Promise<void> {
  await db.batch([
    db.prepare("UPDATE operator_totp SET confirmed_at = ? WHERE operator_id = ?").bind(now, operatorId),
    db.prepare("DELETE FROM operator_recovery_codes WHERE operator_id = ?").bind(operatorId),
    db.prepare("INSERT INTO operator_recovery_codes (operator_id, code_hash) SELECT ?, value FROM json_each(?)").bind(operatorId, JSON.stringify(recoveryCodeHashes)),
  ]);
}

export async function deleteTotp(db: ControlDb, operatorId: string): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM operator_totp WHERE operator_id = ?").bind(operatorId),
    db.prepare("DELETE FROM operator_recovery_codes WHERE operator_id = ?").bind(operatorId),
  ]);
}

/** Spends an unused recovery code; false when it is unknown or used. */
export async function spendRecoveryCode(db: ControlDb, operatorId: string, codeHash: string, now: number): Promise<boolean> {
  const row = await db
    .prepare("UPDATE operator_recovery_codes SET used_at = ? WHERE operator_id = ? AND code_hash = ? AND used_at IS NULL RETURNING operator_id")
    .bind(now, operatorId, codeHash)
    .first();
  return row !== null;
}

export async function unusedRecoveryCodes(db: ControlDb, operatorId: string): Promise<number> {
  return (await db.prepare("SELECT COUNT(*) AS n FROM operator_recovery_codes WHERE operator_id = ? AND used_at IS NULL").bind(operatorId).first<number>("n")) ?? 0;
}

/** Whether a panel the operator works in requires a second factor. */
export async function twoFactorRequiredFor(db: ControlDb, operatorId: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS yes FROM operator_roles r JOIN panels p ON p.id = r.panel_id WHERE r.operator_id = ? AND p.require_two_factor = 1 LIMIT 1")
    .bind(operatorId)
    .first();
  return row !== null;
}

export async function insertSignInStep(db: ControlDb, tokenHash: string, operatorId: string, step: "code" | "enrol", expiresAt: number): Promise<void> {
  await db.prepare("INSERT INTO sign_in_steps (token_hash, operator_id, step, expires_at) VALUES (?, ?, ?, ?)").bind(tokenHash, operatorId, step, expiresAt).run();
}

export async function findSignInStep(db: ControlDb, tokenHash: string, now: number): Promise<{ operatorId: string; step: "code" | "enrol"; failures: number } | null> {
  const row = await db
    .prepare("SELECT operator_id, step, failures FROM sign_in_steps WHERE token_hash = ? AND expires_at > ?")
    .bind(tokenHash, now)
    .first<{ operator_id: string; step: "code" | "enrol"; failures: number }>();
  return row ? { operatorId: row.operator_id, step: row.step, failures: row.failures } : null;
}

export async function countStepFailure(db: ControlDb, tokenHash: string): Promise<void> {
  await db.prepare("UPDATE sign_in_steps SET failures = failures + 1 WHERE token_hash = ?").bind(tokenHash).run();
}

/** Ends a pending sign-in step; false when it was already ended (two requests raced). */
export async function endSignInStep(db: ControlDb, tokenHash: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM sign_in_steps WHERE token_hash = ?").bind(tokenHash).run();
  return result.meta.changes > 0;
}
