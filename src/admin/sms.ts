import { panelShards } from "../services/access/partitions";
import { smsPreviewAnswer, smsSettingsAnswer, smsSuppressionAnswer, smsSuppressionListAnswer, smsTemplateAnswer, smsTemplateDeletedAnswer, smsTemplateListAnswer } from "../domain/answers/channels";
import { mergeTagNames, personalize } from "../domain/merge-tags";
import { NEEDS } from "../domain/permissions";
import { maskedNumber } from "../domain/audit";
import { phoneDigits, smsLength, smsPreviewBody, smsSettingsBody, smsSuppressionsCursor, smsSuppressionsQuery, smsTemplateBody } from "../domain/sms";
import { invalidField, orNotFound, unwrap } from "../lib/http/errors";
import { changeSmsSettings, createSmsTemplate, noSuchTemplateMessage, readSmsSettings, removeSmsTemplate, replaceSmsTemplate } from "../services/channels/sms/panel-settings";
import { isoTime } from "../store/sql";
import { getSmsTemplate, listSmsTemplates, type SmsTemplate } from "../store/sms";
import { liftSmsSuppression, panelSmsSuppressions, suppressSms } from "../services/channels/sms/suppressions";
import { definePanelRoute } from "./route";
import { audited, auditorOf } from "./audit";

// A panel's SMS (issue 19): its provider and credentials (encrypted, never shown), its message
// templates with their length in segments, and the numbers SMS is not sent to.

const readSettings = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sms",
  role: NEEDS.channels,
  response: smsSettingsAnswer,
  summary: "The panel's SMS provider (outbox, twilio or msg91) and the URLs to give it for delivery reports and replies; never the credential",
  async handle({ env, panel, db }) {
    return readSmsSettings(env, db, panel.id);
  },
});

const putSettings = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/sms",
  role: NEEDS.channelSettings,
  response: smsSettingsAnswer,
  summary: "Choose the panel's SMS provider: twilio (account_sid, auth_token, from or messaging_service_sid), msg91 (authkey, sender_id, template_id, dlt_template_id) or outbox",
  body: smsSettingsBody,
  async handle({ env, caller, body, panel, db }) {
    return changeSmsSettings(env, db, panel.id, body, auditorOf(caller));
  },
});

function templateView(t: SmsTemplate) {
  return {
    id: t.id,
    name: t.name,
    body: t.body,
    dlt_template_id: t.dltTemplateId,
    provider_template_id: t.providerTemplateId,
    merge_tags: mergeTagNames(t.body),
    // Measured with every merge tag at its fallback; a contact's values change it (POST .../sms/preview).
    length: smsLength(personalize(t.body, {}, "plain")),
    created_at: isoTime(t.createdAt),
    updated_at: isoTime(t.updatedAt),
  };
}

const createTemplate = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/sms/templates",
  role: NEEDS.channels,
  response: smsTemplateAnswer,
  summary: "Add an SMS template (merge tags {{NAME | fallback}}); the answer shows its length, encoding and segments",
  status: 201,
  body: smsTemplateBody,
  async handle({ env, caller, body, panel, db }) {
    return templateView(unwrap(await createSmsTemplate(env, db, panel.id, body, auditorOf(caller))));
  },
});

const listTemplates = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sms/templates",
  role: NEEDS.read,
  response: smsTemplateListAnswer,
  summary: "The panel's SMS templates with their length in segments",
  async handle({ panel, db }) {
    return { templates: (await listSmsTemplates(db, panel.id)).map(templateView) };
  },
});

const readTemplate = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sms/templates/:id",
  role: NEEDS.read,
  response: smsTemplateAnswer,
  summary: "Read an SMS template",
  async handle({ path, panel, db }) {
    return templateView(await orNotFound(getSmsTemplate(db, panel.id, path.id), noSuchTemplateMessage(path.id)));
  },
});

const replaceTemplate = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/sms/templates/:id",
  role: NEEDS.channels,
  response: smsTemplateAnswer,
  summary: "Replace an SMS template; journeys use the new text from their next message on",
  body: smsTemplateBody,
  async handle({ env, caller, body, path, panel, db }) {
    return templateView(unwrap(await replaceSmsTemplate(env, db, panel.id, path.id, body, auditorOf(caller))));
  },
});

const removeTemplate = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/sms/templates/:id",
  role: NEEDS.channels,
  response: smsTemplateDeletedAnswer,
  summary: "Delete an SMS template (a journey step that names it then records its message as failed)",
  async handle({ caller, path, panel, db }) {
    unwrap(await removeSmsTemplate(db, panel.id, path.id, auditorOf(caller)));
    return { deleted: true };
  },
});

const preview = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/sms/preview",
  role: NEEDS.read,
  response: smsPreviewAnswer,
  summary: "Fill an SMS body or template with attributes and show its text, encoding (GSM-7 or UCS-2) and segments",
  body: smsPreviewBody,
  async handle({ body, panel, db }) {
    let source = body.body;
    if (body.template !== undefined) {
      const template = await getSmsTemplate(db, panel.id, body.template);
      if (!template) throw invalidField("template", `no SMS template "${body.template}" in this panel`, 404);
      source = template.body;
    }
    const attributes = Object.fromEntries(Object.entries(body.attributes).flatMap(([k, v]) => (v === null ? [] : [[k.toUpperCase(), v]])));
    const text = personalize(source!, attributes, "plain");
    return { text, length: smsLength(text) };
  },
});

const phoneParam = (raw: string) => {
  const phone = phoneDigits(raw);
  if (!phone) throw invalidField("phone", "must be a mobile number with its country code: 6 to 15 digits");
  return phone;
};

const listSuppressions = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sms/suppressions",
  role: NEEDS.read,
  response: smsSuppressionListAnswer,
  summary: "Numbers SMS is not sent to (STOP replies, provider opt-outs, operators' entries), newest first; next_cursor pages on",
  query: smsSuppressionsQuery,
  async handle({ env, query, panel, db }) {
    const page = await panelSmsSuppressions(panelShards(env, panel, db), panel.id, query.limit, query.cursor);
    return {
      suppressions: page.rows.map((r) => ({ phone: r.phone, reason: r.reason, created_at: isoTime(r.createdAt) })),
      next_cursor: page.next && smsSuppressionsCursor(page.next),
    };
  },
});

const addSuppression = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/sms/suppressions/:phone",
  role: NEEDS.channels,
  response: smsSuppressionAnswer,
  summary: "Stop SMS to a number",
  async handle({ env, caller, path, panel, db }) {
    const phone = phoneParam(path.phone);
    await suppressSms(panelShards(env, panel, db), panel.id, phone, "operator", Date.now());
    await audited({ db, caller, panel }, "sms.number_stopped", maskedNumber(phone));
    return { phone, suppressed: true };
  },
});

const removeSuppression = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/sms/suppressions/:phone",
  role: NEEDS.channels,
  response: smsSuppressionAnswer,
  summary: "Send SMS to a number again (also one that replied STOP: only with its consent)",
  async handle({ env, caller, path, panel, db }) {
    const phone = phoneParam(path.phone);
    unwrap(await liftSmsSuppression(panelShards(env, panel, db), panel.id, phone));
    await audited({ db, caller, panel }, "sms.number_allowed", maskedNumber(phone));
    return { phone, suppressed: false };
  },
});

export const smsRoutes = [readSettings, putSettings, createTemplate, listTemplates, readTemplate, replaceTemplate, removeTemplate, preview, listSuppressions, addSuppression, removeSuppression];
