import { EMAIL_ATTRIBUTE } from "../../domain/email";
import { withRequiredKey, type FormSettingsBody, type SignupForm, type SignupFormBody } from "../../domain/signup-forms";
import { config, type ConfigSource } from "../../lib/config";
import { encryptSecret } from "../../lib/crypto";
import type { FieldProblem } from "../../lib/problems";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { loadAttributeSchema } from "../../store/attributes";
import { existingListIds } from "../../store/lists";
import type { ControlDb, ShardDb } from "../../store/shards";
import {
  deleteFormDirectoryEntry,
  deleteFormSignupsStatement,
  deleteSignupForm,
  forgetSignupClientsStatement,
  getFormSettings,
  getSignupForm,
  putFormDirectoryEntry,
  putFormSettings,
  putSignupForm,
  signupFormIdByName,
  type FormSettings,
} from "../../store/signup-forms";
import { recordAudit, type Auditor } from "../audit/record";
import type { OwningShards } from "../access/partitions";

// A panel's signup forms (issue 45): the one home of their writes and of the panel's form settings.

export const noSuchFormMessage = (id: string) => `No signup form with id "${id}" in this panel`;
const noSuchForm = (id: string) => refused<never>("not_found", [], noSuchFormMessage(id));
const nameTaken = (name: string) => refusedField<never>("conflict", "name", `the panel already has a signup form named "${name}"`);

/** Where a form's definition names what the panel does not have: attributes, the key, lists, an email for double opt-in. */
async function definitionProblems(db: ShardDb, panelId: string, primaryKey: string, body: SignupFormBody): Promise<FieldProblem[]> {
  const [schema, lists] = await Promise.all([loadAttributeSchema(db, panelId), existingListIds(db, panelId, body.lists)]);
  const problems: FieldProblem[] = [];
  body.fields.forEach((f, i) => {
    if (f.attribute !== primaryKey && !schema.has(f.attribute)) problems.push({ field: `fields.${i}.attribute`, message: `no attribute named ${f.attribute} in this panel` });
  });
  if (!body.fields.some((f) => f.attribute === primaryKey)) problems.push({ field: "fields", message: `must ask for the panel's primary key ${primaryKey}, which names the contact` });
  if (body.double_opt_in && !body.fields.some((f) => f.attribute === EMAIL_ATTRIBUTE)) {
    problems.push({ field: "double_opt_in", message: `needs the form to ask for ${EMAIL_ATTRIBUTE}: the confirmation is sent there` });
  }
  body.lists.forEach((id, i) => {
    if (!lists.has(id)) problems.push({ field: `lists.${i}`, message: `no list with id ${id} in this panel` });
  });
  return problems;
}

function formOf(panelId: string, id: string, primaryKey: string, body: SignupFormBody, createdAt: number, now: number): SignupForm {
  return {
    panelId,
    id,
    name: body.name,
    title: body.title,
    fields: withRequiredKey(body.fields, primaryKey),
    listIds: body.lists,
    consentText: body.consent_text,
    confirmationText: body.confirmation_text,
    thankYouText: body.thank_you_text,
    redirectUrl: body.redirect_url,
    allowedOrigins: body.allowed_origins,
    doubleOptIn: body.double_opt_in,
    turnstileSiteKey: body.turnstile_site_key,
    createdAt,
    updatedAt: now,
  };
}

export interface FormsContext {
  control: ControlDb;
  db: ShardDb;
  /**
   * The panel's shards (panelOwningShards: `db` first, then those holding its other partitions,
   * decision 0038), whose waiting signups a removed form takes, each within its map's buckets.
   */
  shards: OwningShards;
  panelId: string;
  primaryKey: string;
}

/** Refused: a name taken (conflict), or attributes, lists or the key the panel does not have (invalid, by field). */
export async function createSignupForm(ctx: FormsContext, body: SignupFormBody, by: Auditor): Promise<Result<SignupForm>> {
  const problems = await definitionProblems(ctx.db, ctx.panelId, ctx.primaryKey, body);
  if (problems.length) return refused("invalid", problems);
  if (await signupFormIdByName(ctx.db, ctx.panelId, body.name)) return nameTaken(body.name);
  const now = Date.now();
  const form = formOf(ctx.panelId, newId("frm"), ctx.primaryKey, body, now, now);
  // The directory entry first: a form is never stored without the entry its public URL needs.
  await putFormDirectoryEntry(ctx.control, form.id, ctx.panelId);
  if (!(await putSignupForm(ctx.db, form))) {
    await deleteFormDirectoryEntry(ctx.control, form.id);
    return nameTaken(body.name);
  }
  await recordAudit(ctx.db, ctx.panelId, by, "signup_form.created", form.id, { name: form.name });
  return succeeded(form);
}

export async function replaceSignupForm(ctx: FormsContext, id: string, body: SignupFormBody, by: Auditor): Promise<Result<SignupForm>> {
  const current = await getSignupForm(ctx.db, ctx.panelId, id);
  if (!current) return noSuchForm(id);
  const problems = await definitionProblems(ctx.db, ctx.panelId, ctx.primaryKey, body);
  if (problems.length) return refused("invalid", problems);
  const holder = await signupFormIdByName(ctx.db, ctx.panelId, body.name);
  if (holder !== null && holder !== id) return nameTaken(body.name);
  const next = formOf(ctx.panelId, id, ctx.primaryKey, body, current.createdAt, Date.now());
  if (!(await putSignupForm(ctx.db, next))) return nameTaken(body.name);
  await recordAudit(ctx.db, ctx.panelId, by, "signup_form.edited", id, { name: next.name });
  return succeeded(next);
}

/** Deletes the form: its page and snippet stop taking signups, and links of signups awaiting confirmation stop working. */
export async function removeSignupForm(ctx: FormsContext, id: string, by: Auditor): Promise<Result<true>> {
  const current = await getSignupForm(ctx.db, ctx.panelId, id);
  const [home, ...mirrors] = ctx.shards;
  // Each shard's within its buckets: between a split's switch and its cleaning the source's fenced
  // copies of moved contacts' signups are cleaning's (decision 0047); before, the delete met the
  // fence and answered 503 "nothing was changed", after the home's row had gone when the source was a mirror.
  if (!current || !(await deleteSignupForm(ctx.db, ctx.panelId, id, home.buckets))) return noSuchForm(id);
  await Promise.all(mirrors.map((m) => deleteFormSignupsStatement(m.db, ctx.panelId, id, m.buckets).run()));
  await deleteFormDirectoryEntry(ctx.control, id);
  await recordAudit(ctx.db, ctx.panelId, by, "signup_form.deleted", id, { name: current.name });
  return succeeded(true);
}

/** Saves the panel's form settings: the Turnstile secret (encrypted; null removes it, absent keeps it) and what consent records keep. */
export async function saveFormSettings(env: ConfigSource, shards: OwningShards, panelId: string, body: FormSettingsBody, by: Auditor): Promise<FormSettings> {
  const [{ db, buckets }, ...mirrors] = shards;
  const current = await getFormSettings(db, panelId);
  const next: FormSettings = {
    turnstileSecretEnc:
      body.turnstile_secret === undefined ? current.turnstileSecretEnc : body.turnstile_secret === null ? null : await encryptSecret(config(env).secretsKey, body.turnstile_secret),
    consentKeepsClient: body.consent_keeps_client ?? current.consentKeepsClient,
  };
  // Each shard's waiting signups within its buckets (a split's source's fenced copies are cleaning's, decision 0047).
  await putFormSettings(db, panelId, next, Date.now(), buckets);
  // Waiting signups on the panel's other shards (decision 0038) forget their client too.
  if (!next.consentKeepsClient) await Promise.all(mirrors.map((m) => forgetSignupClientsStatement(m.db, panelId, m.buckets).run()));
  await recordAudit(db, panelId, by, "signup_form.settings_changed", panelId, {
    turnstile_secret: body.turnstile_secret === undefined ? "kept" : body.turnstile_secret === null ? "removed" : "set",
    consent_keeps_client: next.consentKeepsClient,
  });
  return next;
}
