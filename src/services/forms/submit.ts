import { CALLER_CACHE_MS } from "../access/api-keys";
import { contactPlace } from "../access/partitions";
import { canonicalAttributeName, type AttributeSchema } from "../../domain/attributes";
import { prepareContact, type KeyedSchema, type PreparedContact } from "../../domain/contacts";
import { EMAIL_ATTRIBUTE } from "../../domain/email";
import {
  chosenLists,
  CONFIRMATION_RESEND_MS,
  CONFIRMATION_TTL_MS,
  confirmationMail,
  FORM_RATE_WINDOW_MS,
  HONEYPOT_FIELD,
  SUBMISSIONS_PER_IP,
  TURNSTILE_FIELD,
  type SignupForm,
} from "../../domain/signup-forms";
import { config } from "../../lib/config";
import { decryptSecret, sha256Hex } from "../../lib/crypto";
import type { FieldProblem } from "../../lib/problems";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { randomBase64Url } from "../../lib/random";
import { TtlCache } from "../../lib/ttl-cache";
import { getContactByKey, listsOfContact, type Contact } from "../../store/contacts";
import { countAttemptsBatched } from "../../store/attempt-batches";
import type { ShardDb } from "../../store/shards";
import { getFormSignup, putFormSignupStatement, type FormSettings } from "../../store/signup-forms";
import type { Panel } from "../../store/panels";
import { sendTransactional, type MailerEnv } from "../channels/mailer";
import { addContact } from "../contacts/add";
import { missingLists } from "../contacts/lists";
import { consentStatements, consentStatementsOfKey, type ConsentClient } from "../consent/record";
import { formLimitsStatement, tooManyFromIp, withinFormLimits } from "./limits";
import { verifyTurnstile } from "./turnstile";

// A visitor's submission of a signup form (issue 45), whichever way it came: the hosted page,
// a snippet's plain POST, or JSON. Bots meet a honeypot, per-IP and per-address limits and,
// where the form turns it on, Turnstile checked server-side.

/** subscribed: the lists are joined. confirmation_sent: an email asks to confirm (or did within the last 10 minutes). */
export type SubmitOutcome = "subscribed" | "confirmation_sent";

export interface FormSubmitContext {
  env: Env;
  db: ShardDb;
  panel: Panel;
  form: SignupForm;
  schema: AttributeSchema;
  /** The panel's form settings (Turnstile secret, what consent records keep). */
  settings: FormSettings;
  client: ConsentClient;
  now: number;
  waitUntil(work: Promise<unknown>): void;
}

/**
 * Decrypted Turnstile secrets by their stored ciphertext (a new secret is a new ciphertext, so
 * a changed one is never answered from here): decrypting for every submission was a thirtieth
 * of its CPU (PROFILE=forms npm run bench:profile).
 */
const turnstileSecrets = new TtlCache<Promise<string>>(CALLER_CACHE_MS, 100);

function turnstileSecret(env: Env, sealed: string): Promise<string> {
  let secret = turnstileSecrets.get(sealed);
  if (!secret) {
    secret = decryptSecret(config(env).secretsKey, sealed);
    turnstileSecrets.set(sealed, secret);
    secret.catch(() => turnstileSecrets.delete(sealed));
  }
  return secret;
}

/** The visitor's values of the form's fields (others are ignored); required ones that are missing are named. */
function formValues(form: SignupForm, params: Record<string, unknown>): { input: Record<string, unknown>; problems: FieldProblem[] } {
  const byName = new Map(Object.entries(params).map(([name, value]) => [canonicalAttributeName(name), value]));
  const input: Record<string, unknown> = {};
  const problems: FieldProblem[] = [];
  for (const f of form.fields) {
    const value = byName.get(f.attribute);
    const empty = value === undefined || value === null || (typeof value === "string" && value.trim() === "");
    if (empty) {
      if (f.required) problems.push({ field: f.attribute, message: "is required" });
      continue;
    }
    input[f.attribute] = typeof value === "string" ? value.trim() : value;
  }
  return { input, problems };
}

/** The attribute a refusal of prepareContact names (`form.EMAIL` → `EMAIL`). */
const asField = (problem: FieldProblem): FieldProblem => ({ ...problem, field: problem.field.replace(/^form\./, "") });

/**
 * Takes a submission: refused `invalid` (fields named by attribute, `lists`, or Turnstile's
 * `cf-turnstile-response`), `rate_limited`, or `upstream` when Turnstile could not be asked. A
 * filled honeypot answers as a success and stores nothing, so a bot learns nothing.
 */
export async function submitSignupForm(ctx: FormSubmitContext, params: Record<string, unknown>): Promise<Result<SubmitOutcome>> {
  const { form } = ctx;
  const honeypot = params[HONEYPOT_FIELD];
  if (typeof honeypot === "string" ? honeypot !== "" : honeypot !== undefined && honeypot !== null) return succeeded(form.doubleOptIn ? "confirmation_sent" : "subscribed");

  // The fields are read here, but refused only after the IP's limit and Turnstile, as ever.
  const { input, problems } = formValues(form, params);
  const lists = chosenLists(form, params);
  if (form.listIds.length > 1 && lists.length === 0) problems.push({ field: "lists", message: "tick at least one list" });
  const schema = { primaryKey: ctx.panel.primaryKey, attributes: ctx.schema };
  const prepared = prepareContact(schema, input, "reject", "form");
  if (!prepared.ok) problems.push(...prepared.problems.map(asField).filter((p) => !problems.some((q) => q.field === p.field)));

  // Input that cannot subscribe anyone is counted by its IP first, so it cannot probe fields
  // freely: in the control database (it writes nothing on a shard to ride with), with the
  // concurrent submissions' counts in one round trip (store/attempt-batches.ts).
  if ((!prepared.ok || problems.length) && ctx.client.ip) {
    const attempt = { subject: `form-ip:${ctx.client.ip}`, limit: SUBMISSIONS_PER_IP };
    if (!(await countAttemptsBatched(ctx.env.DB, [attempt], ctx.now, ctx.now - FORM_RATE_WINDOW_MS, ctx.waitUntil))[0]) return tooManyFromIp();
  }

  if (form.turnstileSiteKey) {
    const answer = params[TURNSTILE_FIELD];
    if (typeof answer !== "string" || answer === "") return refusedField("invalid", TURNSTILE_FIELD, "is required: complete the challenge and submit again");
    const { turnstileSecretEnc } = ctx.settings;
    if (!turnstileSecretEnc) return refusedField("upstream", TURNSTILE_FIELD, "the form cannot check challenges: the panel has no Turnstile secret");
    // A valid submission's limits are counted with its write, after the challenge: a failed
    // challenge has used up nothing.
    const verdict = await verifyTurnstile(ctx.env, await turnstileSecret(ctx.env, turnstileSecretEnc), answer, ctx.client.ip);
    if (verdict === "unavailable") return refusedField("upstream", TURNSTILE_FIELD, "the challenge could not be checked just now; try again");
    if (verdict !== "passed") return refusedField("invalid", TURNSTILE_FIELD, "the challenge was not passed; try again");
  }

  if (problems.length || !prepared.ok) return refused("invalid", problems);
  return withinFormLimits(() => writeSubmission(ctx, schema, prepared, input, lists));
}

/**
 * Writes a valid submission, its limits counted first in the first batch it writes (a batch they
 * refuse writes nothing, and withinFormLimits answers rate_limited).
 */
async function writeSubmission(
  ctx: FormSubmitContext,
  schema: KeyedSchema,
  prepared: Extract<PreparedContact, { ok: true }>,
  input: Record<string, unknown>,
  lists: number[],
): Promise<Result<SubmitOutcome>> {
  const { form } = ctx;
  // The contact, its memberships, consent records, pending signup and the limits' counts go to
  // its key's partition (decision 0038); the form stays where it is.
  const { db, configElsewhere } = contactPlace(ctx.env, ctx.panel, ctx.db, prepared.key);
  const limits = await formLimitsStatement(db, ctx.panel.id, prepared.key, ctx.client.ip, ctx.now);
  // Lists deleted since the form was saved are skipped, not refused: the visitor cannot fix that.
  const writeCtx = { env: ctx.env, db, configElsewhere, panelId: ctx.panel.id, schema, unknown: "reject" as const, now: ctx.now, waitUntil: ctx.waitUntil };

  if (!form.doubleOptIn) {
    // The proof of consent is written in the contact's batch (both or neither), and the
    // membership and consent statements themselves skip deleted lists: no look before.
    const consent = await consentStatementsOfKey(
      db,
      ctx.panel.id,
      prepared.key,
      { kind: "subscribe", listIds: lists, via: "form", viaId: form.id, client: ctx.client, text: form.consentText, at: ctx.now },
      { keepsClient: ctx.settings.consentKeepsClient, skipGoneLists: true },
    );
    const added = await addContact(writeCtx, input, lists, { fieldPrefix: "form", missingLists: "skip", first: [limits], alongside: consent, prepared });
    if (!added.ok) return refused(added.problem.kind, added.problem.fields.map(asField), added.problem.message);
    return succeeded("subscribed");
  }

  const missing = new Set(await missingLists(db, ctx.panel.id, lists));
  const listIds = lists.filter((id) => !missing.has(id));

  // Double opt-in: a new contact is created with its values and no list; an existing one is not
  // changed by someone who has not yet shown they own the address. Lists wait for the link.
  // The limits ride in the first batch this path writes; an answer that writes nothing counts them alone.
  let uncounted = [limits];
  let contact: Contact | null = await getContactByKey(db, ctx.panel.id, prepared.key);
  if (!contact) {
    const added = await addContact(writeCtx, input, [], { fieldPrefix: "form", onlyNew: true, first: uncounted, prepared });
    if (added.ok) {
      contact = added.value.contact;
      uncounted = [];
    } else if (added.problem.kind === "conflict") contact = await getContactByKey(db, ctx.panel.id, prepared.key);
    else return refused(added.problem.kind, added.problem.fields.map(asField), added.problem.message);
    if (!contact) return refused("conflict", [], "The contact changed while signing up; submit again");
  }
  const joined = new Set((await listsOfContact(db, ctx.panel.id, contact.id)).map((m) => m.id));
  const countAlone = async () => {
    if (uncounted.length) await db.batch(uncounted);
  };
  if (listIds.length > 0 && listIds.every((id) => joined.has(id))) {
    await countAlone();
    return succeeded("subscribed");
  }

  const pending = await getFormSignup(db, ctx.panel.id, form.id, contact.id);
  if (pending && ctx.now - pending.sentAt < CONFIRMATION_RESEND_MS) {
    await countAlone();
    return succeeded("confirmation_sent");
  }
  const address = prepared.values[EMAIL_ATTRIBUTE];
  if (typeof address !== "string") return refusedField("invalid", EMAIL_ATTRIBUTE, "is required: the confirmation is sent there");

  // The link names the form too, whose directory entry leads it to the panel's shard.
  const token = randomBase64Url(24);
  // The signup and its proof of consent in one batch (both or neither), after the limits' count.
  const signup = putFormSignupStatement(db, {
    panelId: ctx.panel.id,
    formId: form.id,
    contactId: contact.id,
    tokenHash: await sha256Hex(token),
    listIds,
    attributes: input,
    consentText: form.consentText,
    // Kept only where the panel's consent records keep them too (form_settings).
    ip: ctx.settings.consentKeepsClient ? ctx.client.ip : null,
    userAgent: ctx.settings.consentKeepsClient ? (ctx.client.userAgent?.slice(0, 1000) ?? null) : null,
    createdAt: pending?.createdAt ?? ctx.now,
    sentAt: ctx.now,
    expiresAt: ctx.now + CONFIRMATION_TTL_MS,
  });
  const consent = await consentStatements(
    db,
    ctx.panel.id,
    { contactId: contact.id, kind: "subscribe", listIds, via: "form", viaId: form.id, client: ctx.client, text: form.consentText, at: ctx.now },
    ctx.settings.consentKeepsClient,
  );
  await db.batch([...uncounted, signup, ...consent]);
  const mail = confirmationMail(form, `${config(ctx.env).publicBaseUrl}/f/${form.id}/confirm/${token}`);
  ctx.waitUntil(sendConfirmation(ctx.env, address, mail));
  return succeeded("confirmation_sent");
}

async function sendConfirmation(env: MailerEnv, to: string, mail: { subject: string; text: string }): Promise<void> {
  try {
    await sendTransactional(env, { from: config(env).mailFrom, to, ...mail });
  } catch (error) {
    // The visitor can submit again after the resend interval; the failure is the operator's to see.
    console.error(`signup confirmation to ${to} not sent: ${error instanceof Error ? error.message : String(error)}`);
  }
}
