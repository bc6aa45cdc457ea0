import type { ShardDb } from "./shards";
import type { DomainChecks } from "../domain/sender-domains";

export type SenderDomainState = "pending" | "verified" | "failed";

/** A panel's sender domain; private keys stay encrypted here (SECRETS_KEY, lib/crypto). */
export interface SenderDomain {
  panelId: string;
  domain: string;
  rsaSelector: string;
  rsaPrivateSealed: string;
  rsaPublic: string;
  edSelector: string;
  edPrivateSealed: string;
  edPublic: string;
  state: SenderDomainState;
  edPublished: boolean;
  checks: DomainChecks | null;
  checkedAt: number | null;
  createdAt: number;
}

interface Row {
  panel_id: string;
  domain: string;
  rsa_selector: string;
  rsa_private: string;
  rsa_public: string;
  ed_selector: string;
  ed_private: string;
  ed_public: string;
  state: SenderDomainState;
  ed_published: number;
  checks: string | null;
  checked_at: number | null;
  created_at: number;
}

function fromRow(row: Row): SenderDomain {
  return {
    panelId: row.panel_id,
    domain: row.domain,
    rsaSelector: row.rsa_selector,
    rsaPrivateSealed: row.rsa_private,
    rsaPublic: row.rsa_public,
    edSelector: row.ed_selector,
    edPrivateSealed: row.ed_private,
    edPublic: row.ed_public,
    state: row.state,
    edPublished: row.ed_published === 1,
    checks: row.checks ? (JSON.parse(row.checks) as DomainChecks) : null,
    checkedAt: row.checked_at,
    createdAt: row.created_at,
  };
}

/** Adds the domain; false when the panel already has it (its keys are kept). */
export async function insertSenderDomain(db: ShardDb, domain: SenderDomain): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO sender_domains (panel_id, domain, rsa_selector, rsa_private, rsa_public, ed_selector, ed_private, ed_public, state, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (panel_id, domain) DO NOTHING`,
    )
    .bind(domain.panelId, domain.domain, domain.rsaSelector, domain.rsaPrivateSealed, domain.rsaPublic, domain.edSelector, domain.edPrivateSealed, domain.edPublic, domain.createdAt)
    .run();
  return result.meta.changes > 0;
}

export async function getSenderDomain(db: ShardDb, panelId: string, domain: string): Promise<SenderDomain | null> {
  const row = await db.prepare("SELECT * FROM sender_domains WHERE panel_id = ? AND domain = ?").bind(panelId, domain).first<Row>();
  return row ? fromRow(row) : null;
}

export async function listSenderDomains(db: ShardDb, panelId: string): Promise<SenderDomain[]> {
  const { results } = await db.prepare("SELECT * FROM sender_domains WHERE panel_id = ? ORDER BY domain").bind(panelId).all<Row>();
  return results.map(fromRow);
}

export async function recordSenderDomainCheck(
  db: ShardDb,
  panelId: string,
  domain: string,
  check: { state: SenderDomainState; edPublished: boolean; checks: DomainChecks },
  now: number,
): Promise<SenderDomain | null> {
  const row = await db
    .prepare("UPDATE sender_domains SET state = ?, ed_published = ?, checks = ?, checked_at = ? WHERE panel_id = ? AND domain = ? RETURNING *")
    .bind(check.state, check.edPublished ? 1 : 0, JSON.stringify(check.checks), now, panelId, domain)
    .first<Row>();
  return row ? fromRow(row) : null;
}

export async function deleteSenderDomain(db: ShardDb, panelId: string, domain: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM sender_domains WHERE panel_id = ? AND domain = ?").bind(panelId, domain).run();
  return result.meta.changes > 0;
}

/**
 * Sender domains of every panel whose last check is older than their interval, oldest first:
 * verified ones after `verifiedBefore`, the others (never checked, or failing) after `othersBefore`.
 */
export async function dueSenderDomains(db: ShardDb, verifiedBefore: number, othersBefore: number, limit: number): Promise<SenderDomain[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM sender_domains
       WHERE (state = 'verified' AND checked_at <= ?) OR (state != 'verified' AND COALESCE(checked_at, created_at) <= ?)
       ORDER BY COALESCE(checked_at, created_at) LIMIT ?`,
    )
    .bind(verifiedBefore, othersBefore, limit)
    .all<Row>();
  return results.map(fromRow);
}
