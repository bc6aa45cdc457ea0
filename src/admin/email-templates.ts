import { emailTemplateAnswer, emailTemplateDeletedAnswer, emailTemplateListAnswer } from "../domain/answers/email-templates";
import { mergeTagNames } from "../domain/merge-tags";
import { emailTemplateBody } from "../domain/email-templates";
import { NEEDS } from "../domain/permissions";
import { orNotFound, unwrap } from "../lib/http/errors";
import { createEmailTemplate, noSuchEmailTemplateMessage, removeEmailTemplate, replaceEmailTemplate } from "../services/email-templates/templates";
import { getEmailTemplate, listEmailTemplates, type EmailTemplate } from "../store/email-templates";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// A panel's saved email templates (issue 43, item 3): content campaigns and journey email steps
// copy when they name one (`email_template`). Not the journey templates of spec 6.3.

function templateView(t: EmailTemplate) {
  return {
    id: t.id,
    name: t.name,
    subject: t.subject,
    preheader: t.preheader,
    body_html: t.bodyHtml,
    body_source: t.bodySource,
    merge_tags: mergeTagNames(t.subject, t.preheader, t.bodyHtml),
    created_at: isoTime(t.createdAt),
    updated_at: isoTime(t.updatedAt),
  };
}

const listTemplates = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/email-templates",
  role: NEEDS.read,
  response: emailTemplateListAnswer,
  summary: "The panel's saved email templates by name, without their bodies",
  async handle({ panel, db }) {
    const templates = await listEmailTemplates(db, panel.id);
    return {
      templates: templates.map((t) => ({
        id: t.id,
        name: t.name,
        subject: t.subject,
        preheader: t.preheader,
        body_bytes: t.bodyBytes,
        created_at: isoTime(t.createdAt),
        updated_at: isoTime(t.updatedAt),
      })),
    };
  },
});

const createTemplate = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/email-templates",
  role: NEEDS.campaigns,
  response: emailTemplateAnswer,
  summary: "Save an email template (name unique in the panel, subject, preheader, HTML body); a campaign or journey email step naming it copies its content",
  status: 201,
  body: emailTemplateBody,
  async handle({ caller, body, panel, db }) {
    return templateView(unwrap(await createEmailTemplate(db, panel.id, body, auditorOf(caller))));
  },
});

const readTemplate = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/email-templates/:id",
  role: NEEDS.read,
  response: emailTemplateAnswer,
  summary: "Read an email template with its body and the merge tags it uses",
  async handle({ path, panel, db }) {
    return templateView(await orNotFound(getEmailTemplate(db, panel.id, path.id), noSuchEmailTemplateMessage(path.id)));
  },
});

const replaceTemplate = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/email-templates/:id",
  role: NEEDS.campaigns,
  response: emailTemplateAnswer,
  summary: "Replace an email template; campaigns and journey steps that copied it before keep their copy",
  body: emailTemplateBody,
  async handle({ caller, body, path, panel, db }) {
    return templateView(unwrap(await replaceEmailTemplate(db, panel.id, path.id, body, auditorOf(caller))));
  },
});

const removeTemplate = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/email-templates/:id",
  role: NEEDS.campaigns,
  response: emailTemplateDeletedAnswer,
  summary: "Delete an email template; campaigns and journey steps made from it keep their copy, so it is never refused for being in use",
  async handle({ caller, path, panel, db }) {
    unwrap(await removeEmailTemplate(db, panel.id, path.id, auditorOf(caller)));
    return { deleted: true as const };
  },
});

export const emailTemplateRoutes = [listTemplates, createTemplate, readTemplate, replaceTemplate, removeTemplate];
