import type { EmailTemplateBody, EmailTemplateContent } from "../../domain/email-templates";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { deleteEmailTemplate, emailTemplateIdByName, getEmailTemplate, putEmailTemplate, type EmailTemplate } from "../../store/email-templates";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";

// The panel's saved email templates (issue 43, item 3): the one home of their writes, and the
// copy a campaign or a journey email step takes of one. Copies, not references: a template
// edited or deleted afterwards changes nothing already scheduled or sent, so deleting one
// that campaigns or journeys were made from is safe and is never refused.

export const noSuchEmailTemplateMessage = (id: string) => `No email template with id "${id}" in this panel`;
const noSuchTemplate = (id: string) => refused<never>("not_found", [], noSuchEmailTemplateMessage(id));
const nameTaken = (name: string) => refusedField<never>("conflict", "name", `the panel already has an email template named "${name}"`);

/** Refused when the name is taken (conflict, field `name`) or, on a change, there is no such template (not_found). */
export type EmailTemplateOutcome = Result<EmailTemplate>;

export async function createEmailTemplate(db: ShardDb, panelId: string, body: EmailTemplateBody, by: Auditor): Promise<EmailTemplateOutcome> {
  if (await emailTemplateIdByName(db, panelId, body.name)) return nameTaken(body.name);
  const now = Date.now();
  const template: EmailTemplate = { panelId, id: newId("etp"), name: body.name, subject: body.subject, preheader: body.preheader, bodyHtml: body.body_html, bodySource: body.body_source, createdAt: now, updatedAt: now };
  if (!(await putEmailTemplate(db, template))) return nameTaken(body.name);
  await recordAudit(db, panelId, by, "email_template.created", template.id, { name: template.name });
  return succeeded(template);
}

/** Replaces a template's content; what campaigns and journeys copied from it before stays as it was. */
export async function replaceEmailTemplate(db: ShardDb, panelId: string, id: string, body: EmailTemplateBody, by: Auditor): Promise<EmailTemplateOutcome> {
  const current = await getEmailTemplate(db, panelId, id);
  if (!current) return noSuchTemplate(id);
  const holder = await emailTemplateIdByName(db, panelId, body.name);
  if (holder !== null && holder !== id) return nameTaken(body.name);
  const next: EmailTemplate = { ...current, name: body.name, subject: body.subject, preheader: body.preheader, bodyHtml: body.body_html, bodySource: body.body_source, updatedAt: Date.now() };
  if (!(await putEmailTemplate(db, next))) return nameTaken(body.name);
  await recordAudit(db, panelId, by, "email_template.edited", id, { name: next.name });
  return succeeded(next);
}

export async function removeEmailTemplate(db: ShardDb, panelId: string, id: string, by: Auditor): Promise<Result<true>> {
  const current = await getEmailTemplate(db, panelId, id);
  if (!current || !(await deleteEmailTemplate(db, panelId, id))) return noSuchTemplate(id);
  await recordAudit(db, panelId, by, "email_template.deleted", id, { name: current.name });
  return succeeded(true);
}

/**
 * The content a campaign or email step copies from the template it names, at the moment it
 * names it; refused (invalid, under `field`) when the panel has no such template.
 */
export async function copyOfEmailTemplate(db: ShardDb, panelId: string, id: string, field: string): Promise<Result<EmailTemplateContent & { id: string }>> {
  const template = await getEmailTemplate(db, panelId, id);
  if (!template) return refusedField("invalid", field, `no email template with id "${id}" in this panel`);
  return succeeded({ id: template.id, subject: template.subject, preheader: template.preheader, bodyHtml: template.bodyHtml, bodySource: template.bodySource });
}
