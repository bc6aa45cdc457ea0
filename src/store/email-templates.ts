import type { EmailSource } from "../domain/email-source";
import type { ShardDb } from "./shards";
import { isUniqueViolation } from "./sql";

/** A panel's saved email template (migrations/shard/0067_email_templates.sql). */
export interface EmailTemplate {
  panelId: string;
  id: string;
  name: string;
  subject: string;
  preheader: string;
  bodyHtml: string;
  /** The visual editor's source the HTML was rendered from (migrations/shard/0072); null: HTML written by hand. */
  bodySource: EmailSource | null;
  createdAt: number;
  updatedAt: number;
}

interface EmailTemplateRow {
  panel_id: string;
  id: string;
  name: string;
  subject: string;
  preheader: string;
  body_html: string;
  body_source: string | null;
  created_at: number;
  updated_at: number;
}

function fromRow(r: EmailTemplateRow): EmailTemplate {
  return {
    panelId: r.panel_id,
    id: r.id,
    name: r.name,
    subject: r.subject,
    preheader: r.preheader,
    bodyHtml: r.body_html,
    // Validated by domain/email-source.ts when it was saved.
    bodySource: r.body_source === null ? null : (JSON.parse(r.body_source) as EmailSource),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The id of the panel's template of that name (any ASCII case), if any. */
export async function emailTemplateIdByName(db: ShardDb, panelId: string, name: string): Promise<string | null> {
  const row = await db.prepare("SELECT id FROM email_templates WHERE panel_id = ? AND name = ? COLLATE NOCASE").bind(panelId, name).first<{ id: string }>();
  return row?.id ?? null;
}

/**
 * Inserts the template, or replaces the one with its id; false when another template of the
 * panel has its name (checked before, but two calls may race).
 */
export async function putEmailTemplate(db: ShardDb, t: EmailTemplate): Promise<boolean> {
  try {
    await db
      .prepare(
        `INSERT INTO email_templates (panel_id, id, name, subject, preheader, body_html, body_source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, subject = excluded.subject, preheader = excluded.preheader,
           body_html = excluded.body_html, body_source = excluded.body_source, updated_at = excluded.updated_at`,
      )
      .bind(t.panelId, t.id, t.name, t.subject, t.preheader, t.bodyHtml, t.bodySource === null ? null : JSON.stringify(t.bodySource), t.createdAt, t.updatedAt)
      .run();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

export async function getEmailTemplate(db: ShardDb, panelId: string, id: string): Promise<EmailTemplate | null> {
  const row = await db.prepare("SELECT * FROM email_templates WHERE panel_id = ? AND id = ?").bind(panelId, id).first<EmailTemplateRow>();
  return row ? fromRow(row) : null;
}

export type EmailTemplateSummary = Omit<EmailTemplate, "bodyHtml" | "bodySource"> & { bodyBytes: number };

/** The panel's templates by name, without their bodies (up to 256 KiB each): a list shows names and subjects. */
export async function listEmailTemplates(db: ShardDb, panelId: string): Promise<EmailTemplateSummary[]> {
  const { results } = await db
    .prepare(
      `SELECT panel_id, id, name, subject, preheader, '' AS body_html, NULL AS body_source, length(CAST(body_html AS BLOB)) AS body_bytes, created_at, updated_at
       FROM email_templates WHERE panel_id = ? ORDER BY name COLLATE NOCASE, id`,
    )
    .bind(panelId)
    .all<EmailTemplateRow & { body_bytes: number }>();
  return results.map(({ body_bytes, ...row }) => {
    const { bodyHtml: _, bodySource: __, ...summary } = fromRow(row);
    return { ...summary, bodyBytes: body_bytes };
  });
}

export async function deleteEmailTemplate(db: ShardDb, panelId: string, id: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM email_templates WHERE panel_id = ? AND id = ?").bind(panelId, id).run();
  return result.meta.changes > 0;
}
