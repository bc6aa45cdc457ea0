import type { ControlDb } from "./shards";

export interface StoredPasskey {
  id: string;
  operatorId: string;
  /** base64url */
  credentialId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

interface PasskeyRow {
  id: string;
  operator_id: string;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

const COLUMNS = "id, operator_id, credential_id, public_key, counter, transports, name, created_at, last_used_at";

function passkeyOf(row: PasskeyRow): StoredPasskey {
  return {
    id: row.id,
    operatorId: row.operator_id,
    credentialId: row.credential_id,
    publicKey: row.public_key,
    counter: row.counter,
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

export async function passkeysOf(db: ControlDb, operatorId: string): Promise<StoredPasskey[]> {
  const { results } = await db.prepare(`SELECT ${COLUMNS} FROM operator_passkeys WHERE operator_id = ? ORDER BY created_at, id`).bind(operatorId).all<PasskeyRow>();
  return results.map(passkeyOf);
}

export async function findPasskeyByCredential(db: ControlDb, credentialId: string): Promise<StoredPasskey | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM operator_passkeys WHERE credential_id = ?`).bind(credentialId).first<PasskeyRow>();
  return row ? passkeyOf(row) : null;
}

/** Stores a new passkey; false when its credential id is registered already. */
export async function insertPasskey(db: ControlDb, passkey: Omit<StoredPasskey, "lastUsedAt">): Promise<boolean> {
  const row = await db
    .prepare(
      `INSERT INTO operator_passkeys (id, operator_id, credential_id, public_key, counter, transports, name, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING RETURNING id`,
    )
    .bind(passkey.id, passkey.operatorId, passkey.credentialId, passkey.publicKey, passkey.counter, JSON.stringify(passkey.transports), passkey.name, passkey.createdAt)
    .first();
  return row !== null;
}

/** Records a sign-in's new counter, if no other sign-in moved it meanwhile (false then). */
export async function usePasskey(db: ControlDb, id: string, oldCounter: number, newCounter: number, now: number): Promise<boolean> {
  const row = await db
    .prepare("UPDATE operator_passkeys SET counter = ?, last_used_at = ? WHERE id = ? AND counter = ? RETURNING id")
    .bind(newCounter, now, id, oldCounter)
    .first();
  return row !== null;
}

/** Deletes one of the operator's passkeys; answers its name, or null when there is none. */
export async function deletePasskey(db: ControlDb, operatorId: string, id: string): Promise<string | null> {
  return db.prepare("DELETE FROM operator_passkeys WHERE id = ? AND operator_id = ? RETURNING name").bind(id, operatorId).first<string>("name");
}

export async function insertWebAuthnChallenge(db: ControlDb, challengeHash: string, purpose: "register" | "authenticate", operatorId: string | null, expiresAt: number): Promise<void> {
  await db.prepare("INSERT INTO webauthn_challenges (challenge_hash, purpose, operator_id, expires_at) VALUES (?, ?, ?, ?)").bind(challengeHash, purpose, operatorId, expiresAt).run();
}

/** Spends a live challenge of the purpose (and operator, for registrations): true once, false after or when expired. */
export async function spendWebAuthnChallenge(db: ControlDb, challengeHash: string, purpose: "register" | "authenticate", operatorId: string | null, now: number): Promise<boolean> {
  const row = await db
    .prepare("DELETE FROM webauthn_challenges WHERE challenge_hash = ? AND purpose = ? AND operator_id IS ? AND expires_at > ? RETURNING challenge_hash")
    .bind(challengeHash, purpose, operatorId, now)
    .first();
  return row !== null;
}
