import type { FormField, SignupForm } from "../domain/signup-forms";
import type { ControlDb, ShardDb } from "./shards";
import { isUniqueViolation } from "./sql";
import type { BucketRanges } from "../domain/partitions";
import { fencedContactCopyHere } from "./panel-move/triggers";

// Signup forms (migrations/shard/0075_signup_forms.sql), their control directory (migrations/0067),
// the panel's form settings, and double opt-in signups waiting for their confirmation.

interface FormRow {
  panel_id: string;
  id: string;
  name: string;
  title: string;
  fields: string;
  list_ids: string;
  consent_text: string;
  confirmation_text: string;
  thank_you_text: string;
  redirect_url: string | null;
  allowed_origins: string;
  double_opt_in: number;
  turnstile_site_key: string | null;
  created_at: number;
  updated_at: number;
}

function fromRow(r: FormRow): SignupForm {
  return {
    panelId: r.panel_id,
    id: r.id,
    name: r.name,
    title: r.title,
    fields: JSON.parse(r.fields) as FormField[],
    listIds: JSON.parse(r.list_ids) as number[],
    consentText: r.consent_text,
    confirmationText: r.confirmation_text,
    thankYouText: r.thank_you_text,
    redirectUrl: r.redirect_url,
    allowedOrigins: JSON.parse(r.allowed_origins) as string[],
    doubleOptIn: r.double_opt_in === 1,
    turnstileSiteKey: r.turnstile_site_key,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The id of the panel's form of that name (any ASCII case), if any. */
export async function signupFormIdByName(db: ShardDb, panelId: string, name: string): Promise<string | null> {
  const row = await db.prepare("SELECT id FROM signup_forms WHERE panel_id = ? AND name = ? COLLATE NOCASE").bind(panelId, name).first<{ id: string }>();
  return row?.id ?? null;
}

/** Inserts or replaces the form; false when another form of the panel has its name (two calls may race). */
export async function putSignupForm(db: ShardDb, f: SignupForm): Promise<boolean> {
  try {
    await db
      .prepare(
        `INSERT INTO signup_forms (panel_id, id, name, title, fields, list_ids, consent_text, confirmation_text, thank_you_text, redirect_url,
           allowed_origins, double_opt_in, turnstile_site_key, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, title = excluded.title, fields = excluded.fields, list_ids = excluded.list_ids,
           consent_text = excluded.consent_text, confirmation_text = excluded.confirmation_text, thank_you_text = excluded.thank_you_text,
           redirect_url = excluded.redirect_url, allowed_origins = excluded.allowed_origins, double_opt_in = excluded.double_opt_in,
           turnstile_site_key = excluded.turnstile_site_key, updated_at = excluded.updated_at`,
      )
      .bind(
        f.panelId, f.id, f.name, f.title, JSON.stringify(f.fields), JSON.stringify(f.listIds), f.consentText, f.confirmationText, f.thankYouText,
        f.redirectUrl, JSON.stringify(f.allowedOrigins), f.doubleOptIn ? 1 : 0, f.turnstileSiteKey, f.createdAt, f.updatedAt,
      )
      .run();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

export async function getSignupForm(db: ShardDb, panelId: string, id: string): Promise<SignupForm | null> {
  const row = await db.prepare("SELECT * FROM signup_forms WHERE panel_id = ? AND id = ?").bind(panelId, id).first<FormRow>();
  return row ? fromRow(row) : null;
}

export async function listSignupForms(db: ShardDb, panelId: string): Promise<SignupForm[]> {
  const { results } = await db.prepare("SELECT * FROM signup_forms WHERE panel_id = ? ORDER BY name COLLATE NOCASE, id").bind(panelId).all<FormRow>();
  return results.map(fromRow);
}

/**
 * The signups waiting on form `id` go (on the home with the form, or on a shard holding another
 * of the panel's partitions). With `buckets` (the shard's in the panel's map) a split's source's
 * fenced copies of moved contacts' signups are left to its cleaning (fencedContactCopyHere;
 * decision 0047).
 */
export function deleteFormSignupsStatement(db: ShardDb, panelId: string, id: string, buckets: BucketRanges | null = null): D1PreparedStatement {
  return db
    .prepare(`DELETE FROM form_signups WHERE panel_id = ?1 AND form_id = ?2 AND NOT ${fencedContactCopyHere("form_signups", "?3")}`)
    .bind(panelId, id, buckets && JSON.stringify(buckets));
}

/** Deletes the form and the signups still waiting on it (their links stop working); false when there was none. */
export async function deleteSignupForm(db: ShardDb, panelId: string, id: string, buckets: BucketRanges | null = null): Promise<boolean> {
  const [deleted] = await db.batch([db.prepare("DELETE FROM signup_forms WHERE panel_id = ? AND id = ?").bind(panelId, id), deleteFormSignupsStatement(db, panelId, id, buckets)]);
  return (deleted?.meta.changes ?? 0) > 0;
}

// ---- the control directory: which panel a public form id belongs to ---------------------

export async function putFormDirectoryEntry(db: ControlDb, formId: string, panelId: string): Promise<void> {
  await db.prepare("INSERT INTO signup_form_directory (form_id, panel_id) VALUES (?, ?) ON CONFLICT (form_id) DO NOTHING").bind(formId, panelId).run();
}

export async function deleteFormDirectoryEntry(db: ControlDb, formId: string): Promise<void> {
  await db.prepare("DELETE FROM signup_form_directory WHERE form_id = ?").bind(formId).run();
}

export async function panelOfForm(db: ControlDb, formId: string): Promise<string | null> {
  const row = await db.prepare("SELECT panel_id FROM signup_form_directory WHERE form_id = ?").bind(formId).first<{ panel_id: string }>();
  return row?.panel_id ?? null;
}

// ---- the panel's form settings ----------------------------------------------------------

export interface FormSettings {
  turnstileSecretEnc: string | null;
  /** Consent records keep the visitor's IP address and user agent. */
  consentKeepsClient: boolean;
}

const DEFAULT_FORM_SETTINGS: FormSettings = { turnstileSecretEnc: null, consentKeepsClient: true };

export async function getFormSettings(db: ShardDb, panelId: string): Promise<FormSettings> {
  const row = await db
    .prepare("SELECT turnstile_secret_enc, consent_keeps_client FROM form_settings WHERE panel_id = ?")
    .bind(panelId)
    .first<{ turnstile_secret_enc: string | null; consent_keeps_client: number }>();
  return row ? { turnstileSecretEnc: row.turnstile_secret_enc, consentKeepsClient: row.consent_keeps_client === 1 } : DEFAULT_FORM_SETTINGS;
}

/**
 * Saves the panel's form settings. Turning `consentKeepsClient` off also forgets the IP address
 * and user agent of the signups still waiting for their confirmation (in the same batch): a
 * panel's pending signups are those of the last CONFIRMATION_TTL_HOURS, which housekeeping sweeps.
 */
export async function putFormSettings(db: ShardDb, panelId: string, settings: FormSettings, now: number, buckets: BucketRanges | null = null): Promise<void> {
  const put = db
    .prepare(
      `INSERT INTO form_settings (panel_id, turnstile_secret_enc, consent_keeps_client, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (panel_id) DO UPDATE SET turnstile_secret_enc = excluded.turnstile_secret_enc, consent_keeps_client = excluded.consent_keeps_client, updated_at = excluded.updated_at`,
    )
    .bind(panelId, settings.turnstileSecretEnc, settings.consentKeepsClient ? 1 : 0, now);
  if (settings.consentKeepsClient) {
    await put.run();
    return;
  }
  await db.batch([put, forgetSignupClientsStatement(db, panelId, buckets)]);
}

/**
 * The IP address and user agent of the panel's waiting signups are forgotten (putFormSettings;
 * each other shard of its partitions too). With `buckets`, a split's source's fenced copies are
 * left as they are: cleaning deletes them (fencedContactCopyHere).
 */
export function forgetSignupClientsStatement(db: ShardDb, panelId: string, buckets: BucketRanges | null = null): D1PreparedStatement {
  return db
    .prepare(`UPDATE form_signups SET ip = NULL, user_agent = NULL WHERE panel_id = ?1 AND (ip IS NOT NULL OR user_agent IS NOT NULL) AND NOT ${fencedContactCopyHere("form_signups", "?2")}`)
    .bind(panelId, buckets && JSON.stringify(buckets));
}

// ---- double opt-in signups waiting for their confirmation --------------------------------

export interface FormSignup {
  panelId: string;
  formId: string;
  contactId: number;
  tokenHash: string;
  listIds: number[];
  /** The submitted values, merged into the contact at confirmation. */
  attributes: Record<string, unknown>;
  consentText: string;
  ip: string | null;
  userAgent: string | null;
  createdAt: number;
  sentAt: number;
  expiresAt: number;
}

interface SignupRow {
  panel_id: string;
  form_id: string;
  contact_id: number;
  token_hash: string;
  list_ids: string;
  attrs: string;
  consent_text: string;
  ip: string | null;
  user_agent: string | null;
  created_at: number;
  sent_at: number;
  expires_at: number;
}

function signupFromRow(r: SignupRow): FormSignup {
  return {
    panelId: r.panel_id,
    formId: r.form_id,
    contactId: r.contact_id,
    tokenHash: r.token_hash,
    listIds: JSON.parse(r.list_ids) as number[],
    attributes: JSON.parse(r.attrs) as Record<string, unknown>,
    consentText: r.consent_text,
    ip: r.ip,
    userAgent: r.user_agent,
    createdAt: r.created_at,
    sentAt: r.sent_at,
    expiresAt: r.expires_at,
  };
}

export async function getFormSignup(db: ShardDb, panelId: string, formId: string, contactId: number): Promise<FormSignup | null> {
  const row = await db.prepare("SELECT * FROM form_signups WHERE panel_id = ? AND form_id = ? AND contact_id = ?").bind(panelId, formId, contactId).first<SignupRow>();
  return row ? signupFromRow(row) : null;
}

/** The statement that writes the signup, for the caller's batch (a resubmission replaces the one of its form and contact, token included). */
export function putFormSignupStatement(db: ShardDb, s: FormSignup): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO form_signups (panel_id, form_id, contact_id, token_hash, list_ids, attrs, consent_text, ip, user_agent, created_at, sent_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (panel_id, form_id, contact_id) DO UPDATE SET token_hash = excluded.token_hash, list_ids = excluded.list_ids, attrs = excluded.attrs,
         consent_text = excluded.consent_text, ip = excluded.ip, user_agent = excluded.user_agent, sent_at = excluded.sent_at, expires_at = excluded.expires_at`,
    )
    .bind(s.panelId, s.formId, s.contactId, s.tokenHash, JSON.stringify(s.listIds), JSON.stringify(s.attributes), s.consentText, s.ip, s.userAgent, s.createdAt, s.sentAt, s.expiresAt);
}

/** Takes the signup of the token, of this panel and form and not expired, for its confirmation: deleted in the same statement, so a link confirms once. */
export async function takeFormSignup(db: ShardDb, link: { tokenHash: string; panelId: string; formId: string; now: number }): Promise<FormSignup | null> {
  const row = await db
    .prepare("DELETE FROM form_signups WHERE token_hash = ? AND panel_id = ? AND form_id = ? AND expires_at > ? RETURNING *")
    .bind(link.tokenHash, link.panelId, link.formId, link.now)
    .first<SignupRow>();
  return row ? signupFromRow(row) : null;
}

/** The contact's signups awaiting confirmation (their lists are the contact's unconfirmed memberships). */
export async function formSignupsOfContact(db: ShardDb, panelId: string, contactId: number): Promise<FormSignup[]> {
  const { results } = await db.prepare("SELECT * FROM form_signups WHERE panel_id = ? AND contact_id = ? ORDER BY created_at").bind(panelId, contactId).all<SignupRow>();
  return results.map(signupFromRow);
}
