import { panelOwningShards } from "../services/access/partitions";
import { formSettingsAnswer, signupFormAnswer, signupFormDeletedAnswer, signupFormListAnswer } from "../domain/answers/forms";
import { NEEDS } from "../domain/permissions";
import { formSettingsBody, formSnippet, signupFormBody, type SignupForm } from "../domain/signup-forms";
import { config } from "../lib/config";
import { orNotFound, unwrap } from "../lib/http/errors";
import { createSignupForm, noSuchFormMessage, removeSignupForm, replaceSignupForm, saveFormSettings, type FormsContext } from "../services/forms/forms";
import { loadAttributeSchema } from "../store/attributes";
import { listNamesOf } from "../store/lists";
import type { Panel } from "../store/panels";
import type { ShardDb } from "../store/shards";
import { getFormSettings, getSignupForm, listSignupForms } from "../store/signup-forms";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// A panel's signup forms (issue 45): the hosted page /f/{form}, the snippet and the JSON
// endpoint all serve the definition these routes write.

function formView(env: Env, form: SignupForm) {
  const base = config(env).publicBaseUrl;
  return {
    id: form.id,
    name: form.name,
    title: form.title,
    fields: form.fields.map((f) => ({ attribute: f.attribute, ...(f.label ? { label: f.label } : {}), required: f.required })),
    lists: form.listIds,
    consent_text: form.consentText,
    confirmation_text: form.confirmationText,
    thank_you_text: form.thankYouText,
    redirect_url: form.redirectUrl,
    allowed_origins: form.allowedOrigins,
    double_opt_in: form.doubleOptIn,
    turnstile_site_key: form.turnstileSiteKey,
    hosted_url: `${base}/f/${form.id}`,
    json_url: `${base}/f/${form.id}.json`,
    created_at: isoTime(form.createdAt),
    updated_at: isoTime(form.updatedAt),
  };
}

async function fullView(env: Env, db: ShardDb, panel: Panel, form: SignupForm) {
  const [schema, listNames] = await Promise.all([loadAttributeSchema(db, panel.id), listNamesOf(db, panel.id, form.listIds)]);
  const snippet = formSnippet(form, { action: `${config(env).publicBaseUrl}/f/${form.id}`, schema, listNames });
  return { ...formView(env, form), snippet };
}

const formsContext = (env: Env, db: ShardDb, panel: Panel): FormsContext => ({ control: env.DB, db, shards: panelOwningShards(env, panel, db), panelId: panel.id, primaryKey: panel.primaryKey });

const listForms = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/forms",
  role: NEEDS.read,
  response: signupFormListAnswer,
  summary: "The panel's signup forms by name, each with its hosted page and JSON endpoint",
  async handle({ env, panel, db }) {
    return { forms: (await listSignupForms(db, panel.id)).map((f) => formView(env, f)) };
  },
});

const createForm = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/forms",
  role: NEEDS.forms,
  response: signupFormAnswer,
  status: 201,
  summary:
    "Create a signup form: the attributes it asks for (the primary key always, required), the lists it offers, its texts, redirect, allowed origins, double opt-in and Turnstile; served at /f/{form} (HTML, no script needed), by the snippet in the answer, and as JSON at /f/{form}.json",
  body: signupFormBody,
  async handle({ env, caller, body, panel, db }) {
    const form = unwrap(await createSignupForm(formsContext(env, db, panel), body, auditorOf(caller)));
    return fullView(env, db, panel, form);
  },
});

const readForm = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/forms/:id",
  role: NEEDS.read,
  response: signupFormAnswer,
  summary: "Read a signup form with the HTML snippet to paste into a site",
  async handle({ env, path, panel, db }) {
    const form = await orNotFound(getSignupForm(db, panel.id, path.id), noSuchFormMessage(path.id));
    return fullView(env, db, panel, form);
  },
});

const replaceForm = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/forms/:id",
  role: NEEDS.forms,
  response: signupFormAnswer,
  summary: "Replace a signup form's definition; its URL stays, and signups awaiting confirmation keep the lists they chose",
  body: signupFormBody,
  async handle({ env, caller, body, path, panel, db }) {
    const form = unwrap(await replaceSignupForm(formsContext(env, db, panel), path.id, body, auditorOf(caller)));
    return fullView(env, db, panel, form);
  },
});

const removeForm = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/forms/:id",
  role: NEEDS.forms,
  response: signupFormDeletedAnswer,
  summary: "Delete a signup form: its page, snippet and JSON endpoint stop taking signups, and confirmation links not yet followed stop working",
  async handle({ env, caller, path, panel, db }) {
    unwrap(await removeSignupForm(formsContext(env, db, panel), path.id, auditorOf(caller)));
    return { deleted: true as const };
  },
});

const readSettings = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/form-settings",
  role: NEEDS.read,
  response: formSettingsAnswer,
  summary: "The panel's signup form settings: whether a Turnstile secret is set (never the secret), and whether consent records keep visitors' IP addresses and user agents",
  async handle({ panel, db }) {
    const settings = await getFormSettings(db, panel.id);
    return { turnstile_secret_set: settings.turnstileSecretEnc !== null, consent_keeps_client: settings.consentKeepsClient };
  },
});

const saveSettings = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/form-settings",
  role: NEEDS.channelSettings,
  response: formSettingsAnswer,
  summary: "Set the Turnstile secret forms check answers with (kept encrypted; null removes it, absent keeps it) and whether consent records keep visitors' IP addresses and user agents",
  body: formSettingsBody,
  async handle({ env, caller, body, panel, db }) {
    const settings = await saveFormSettings(env, panelOwningShards(env, panel, db), panel.id, body, auditorOf(caller));
    return { turnstile_secret_set: settings.turnstileSecretEnc !== null, consent_keeps_client: settings.consentKeepsClient };
  },
});

export const signupFormRoutes = [listForms, createForm, readForm, replaceForm, removeForm, readSettings, saveSettings];
