import type { SmsSettingsBody, SmsTemplateBody } from "../../../domain/sms";
import type { FieldProblem } from "../../../domain/problems";
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

export type TemplateOutcome = { ok: true; template: SmsTemplate } | { ok: false; problems: FieldProblem[] } | { ok: false; missing: true };

export async function createSmsTemplate(env: Pick<Env, "REGION">, db: ShardDb, panelId: string, body: SmsTemplateBody): Promise<TemplateOutcome> {
  const problems = dltProblem(env, body);
  if (problems.length) return { ok: false, problems };
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
  return { ok: true, template };
}

/** Replaces a template; journeys use the new text from their next message on. */
export async function replaceSmsTemplate(env: Pick<Env, "REGION">, db: ShardDb, panelId: string, templateId: string, body: SmsTemplateBody): Promise<TemplateOutcome> {
  const current = await getSmsTemplate(db, panelId, templateId);
  if (!current) return { ok: false, missing: true };
  const problems = dltProblem(env, body);
  if (problems.length) return { ok: false, problems };
  const next: SmsTemplate = {
    ...current,
    name: body.name,
    body: body.body,
    dltTemplateId: body.dlt_template_id ?? null,
    providerTemplateId: body.provider_template_id ?? null,
    updatedAt: Date.now(),
  };
  await putSmsTemplate(db, next);
  return { ok: true, template: next };
}

/** Deletes a template; false when the panel has no such template. */
export function removeSmsTemplate(db: ShardDb, panelId: string, templateId: string): Promise<boolean> {
  return deleteSmsTemplate(db, panelId, templateId);
}
