import type { SmsSettingsBody, SmsTemplateBody } from "../../../domain/sms";
import type { FieldProblem } from "../../../domain/problems";
import { refused, succeeded, type Result } from "../../../lib/problems";
import { newId } from "../../../lib/random";
import { config, type ConfigSource } from "../../../lib/config";
import type { ShardDb } from "../../../store/shards";
import { deleteSmsTemplate, getSmsTemplate, putSmsTemplate, type SmsTemplate } from "../../../store/sms";
import { recordAudit, type Auditor } from "../../audit/record";
import { panelSms, saveSmsSettings, smsSettingsView } from "./settings";

// The panel's use cases on its SMS: provider settings and message templates.

/** The panel's SMS provider and the URLs to give it; never the credential. */
export async function readSmsSettings(env: Pick<Env, "SECRETS_KEY" | "PUBLIC_BASE_URL">, db: ShardDb, panelId: string) {
  return smsSettingsView(env, await panelSms(env, db, panelId));
}

/** Chooses the panel's SMS provider; the audit log names the provider only, never its credentials. */
export async function changeSmsSettings(env: Pick<Env, "SECRETS_KEY" | "PUBLIC_BASE_URL">, db: ShardDb, panelId: string, body: SmsSettingsBody, by: Auditor) {
  await saveSmsSettings(env, db, panelId, body, Date.now());
  await recordAudit(db, panelId, by, "sms.settings_changed", panelId, { provider: body.provider });
  return readSmsSettings(env, db, panelId);
}

/** India's carriers refuse commercial SMS without a registered (DLT) template. */
function dltProblem(env: ConfigSource, body: SmsTemplateBody): FieldProblem[] {
  if (config(env).region === "india" && !body.dlt_template_id) return [{ field: "dlt_template_id", message: "is required in the India region: the TRAI DLT id the template is registered under" }];
  return [];
}

/** The template as saved; refused when it breaks a rule of the region (invalid) or there is no such template (not_found). */
export type TemplateOutcome = Result<SmsTemplate>;

export const noSuchTemplateMessage = (templateId: string) => `No SMS template with id "${templateId}" in this panel`;
const noSuchTemplate = (templateId: string) => refused("not_found", [], noSuchTemplateMessage(templateId));

export async function createSmsTemplate(env: Pick<Env, "REGION">, db: ShardDb, panelId: string, body: SmsTemplateBody, by: Auditor): Promise<TemplateOutcome> {
  const problems = dltProblem(env, body);
  if (problems.length) return refused("invalid", problems);
  const now = Date.now();
  const template: SmsTemplate = {
    panelId,
    id: newId("smt"),
    name: body.name,
    body: body.body,
    dltTemplateId: body.dlt_template_id ?? null,
    providerTemplateId: body.provider_template_id ?? null,
    createdAt: now,
    updatedAt: now,
  };
  await putSmsTemplate(db, template);
  await recordAudit(db, panelId, by, "sms.template_created", template.id, { name: template.name });
  return succeeded(template);
}

/** Replaces a template; journeys use the new text from their next message on. */
export async function replaceSmsTemplate(env: Pick<Env, "REGION">, db: ShardDb, panelId: string, templateId: string, body: SmsTemplateBody, by: Auditor): Promise<TemplateOutcome> {
  const current = await getSmsTemplate(db, panelId, templateId);
  if (!current) return noSuchTemplate(templateId);
  const problems = dltProblem(env, body);
  if (problems.length) return refused("invalid", problems);
  const next: SmsTemplate = {
    ...current,
    name: body.name,
    body: body.body,
    dltTemplateId: body.dlt_template_id ?? null,
    providerTemplateId: body.provider_template_id ?? null,
    updatedAt: Date.now(),
  };
  await putSmsTemplate(db, next);
  await recordAudit(db, panelId, by, "sms.template_replaced", next.id, { name: next.name, ...(current.body === next.body ? {} : { body: { before: current.body, after: next.body } }) });
  return succeeded(next);
}

/** Deletes a template; refused (not_found) when the panel has no such template. */
export async function removeSmsTemplate(db: ShardDb, panelId: string, templateId: string, by: Auditor): Promise<Result<true>> {
  if (!(await deleteSmsTemplate(db, panelId, templateId))) return noSuchTemplate(templateId);
  await recordAudit(db, panelId, by, "sms.template_deleted", templateId);
  return succeeded(true);
}
