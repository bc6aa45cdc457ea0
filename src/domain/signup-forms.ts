import { z } from "../lib/z";
import { canonicalAttributeName, type AttributeSchema, type AttributeType } from "./attributes";
import { corsOriginList, freeText, listIdParam, MAX_LIST_IDS, nameText } from "./fields";
import { escapeHtml } from "./merge-tags";

/**
 * Signup forms (issue 45): a panel's form asks a site's visitors for some of the panel's
 * attributes and the lists it offers, and adds them as contacts (after a confirmation email
 * when double opt-in is on). Served three ways from one definition: the hosted page
 * `/f/{form}` (plain HTML, no script needed), an HTML snippet for any site (a plain `<form>`
 * POST to the same URL) and JSON (`POST /f/{form}.json`, CORS by the form's allowed origins).
 */

/** Most attributes one form asks for. */
export const MAX_FORM_FIELDS = 30;

/**
 * Submissions counted per window: from one client IP (across the forms of the panels of a
 * shard), and for one contact key of a panel (decision 0049).
 */
export const FORM_RATE_WINDOW_MS = 10 * 60_000;
export const SUBMISSIONS_PER_IP = 30;
export const SUBMISSIONS_PER_ADDRESS = 5;

/** How long a confirmation link works, as its email says. */
export const CONFIRMATION_TTL_HOURS = 48;
export const CONFIRMATION_TTL_MS = CONFIRMATION_TTL_HOURS * 3_600_000;
/** A resubmission sends the confirmation email again at most this often. */
export const CONFIRMATION_RESEND_MS = 10 * 60_000;

/**
 * The hidden field a person never fills in (it is off-screen and out of the tab order): a
 * submission that fills it is a bot's, answered as a success and not stored.
 */
export const HONEYPOT_FIELD = "hp_website";
/** The field Turnstile's widget adds to the form. */
export const TURNSTILE_FIELD = "cf-turnstile-response";
/** Where the Turnstile widget's script comes from (the hosted page's CSP allows it). */
export const TURNSTILE_ORIGIN = "https://challenges.cloudflare.com";

const field = z
  .object({
    attribute: nameText(64)
      .transform(canonicalAttributeName)
      .meta({ description: "An attribute of the panel (the primary key's included)" }),
    label: freeText(200).optional().meta({ description: "The label the visitor reads; the attribute's name in sentence case when absent" }),
    required: z.boolean({ error: "must be true or false" }).default(false),
  })
  .strict();

const formText = (max: number, description: string) => freeText(max).default("").meta({ description });

const redirectUrl = z
  .string({ error: "must be an http(s) URL" })
  .max(2000, { error: "must be at most 2000 characters" })
  .refine(
    (text) => {
      try {
        const url = new URL(text);
        return (url.protocol === "https:" || url.protocol === "http:") && url.username === "" && url.password === "";
      } catch {
        return false;
      }
    },
    { error: "must be an absolute http(s) URL without credentials" },
  );

/** A Turnstile site key as Cloudflare issues them (0x…, letters, digits, - and _). */
const siteKey = z
  .string({ error: "must be a Turnstile site key" })
  .max(100, { error: "must be at most 100 characters" })
  .regex(/^[0-9A-Za-z_-]{8,100}$/, { error: "must be a Turnstile site key (letters, digits, - and _)" });

/** POST and PUT /panels/{panel}/forms. */
export const signupFormBody = z
  .object({
    name: nameText(200).meta({ description: "The form's name in the panel, unique in it (whatever the case)" }),
    title: formText(200, "The heading of the hosted page"),
    fields: z
      .array(field, { error: "must be a list of fields" })
      .min(1, { error: "must name at least one attribute" })
      .max(MAX_FORM_FIELDS, { error: `must name at most ${MAX_FORM_FIELDS} attributes` })
      .meta({ description: "The attributes the form asks for, in order; the panel's primary key must be one, and is always required" }),
    lists: z
      .array(listIdParam, { error: "must be a list of list ids" })
      .max(MAX_LIST_IDS, { error: `must name at most ${MAX_LIST_IDS} lists` })
      .default([])
      .transform((ids) => [...new Set(ids)])
      .meta({ description: "The lists the form offers: one is joined without asking, several are boxes the visitor ticks" }),
    consent_text: formText(2000, "The consent the visitor gives, shown above the button and kept in the consent record"),
    confirmation_text: formText(2000, "With double opt-in: what the page says after a submission (check your inbox), and the confirmation email's opening"),
    thank_you_text: formText(2000, "What the page says once the visitor is subscribed (after confirming, with double opt-in)"),
    redirect_url: redirectUrl.nullable().default(null).meta({ description: "Where the visitor goes after a successful submission instead of the page's own answer" }),
    allowed_origins: corsOriginList.default([]).meta({ description: "Sites whose pages may post to the form (snippet or fetch); its hosted page always may" }),
    double_opt_in: z.boolean({ error: "must be true or false" }).default(true).meta({ description: "Lists are joined only once the visitor follows the link a confirmation email sends" }),
    turnstile_site_key: siteKey.nullable().default(null).meta({ description: "Cloudflare Turnstile on with this site key (the secret is in the panel's form settings); null: off" }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.fields.forEach((f, i) => {
      if (seen.has(f.attribute)) ctx.addIssue({ code: "custom", path: ["fields", i, "attribute"], message: `${f.attribute} is asked for twice` });
      seen.add(f.attribute);
    });
  });
export type SignupFormBody = z.output<typeof signupFormBody>;

/** PUT /panels/{panel}/form-settings. */
export const formSettingsBody = z
  .object({
    turnstile_secret: z
      .string({ error: "must be text" })
      .trim()
      .min(1, { error: "must not be empty" })
      .max(200, { error: "must be at most 200 characters" })
      .nullable()
      .optional()
      .meta({ description: "The Turnstile secret key forms check answers with, kept encrypted; null removes it; absent keeps it" }),
    consent_keeps_client: z
      .boolean({ error: "must be true or false" })
      .optional()
      .meta({ description: "Consent records keep the visitor's IP address and user agent" }),
  })
  .strict();
export type FormSettingsBody = z.output<typeof formSettingsBody>;

export interface FormField {
  attribute: string;
  label?: string;
  required: boolean;
}

/** A stored form (migrations/shard/0075_signup_forms.sql). */
export interface SignupForm {
  panelId: string;
  id: string;
  name: string;
  title: string;
  fields: FormField[];
  listIds: number[];
  consentText: string;
  confirmationText: string;
  thankYouText: string;
  redirectUrl: string | null;
  allowedOrigins: string[];
  doubleOptIn: boolean;
  turnstileSiteKey: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Form ids: `frm_` and 16 letters or digits (the public URL's one segment). */
export const FORM_ID = /^frm_[A-Za-z0-9]{16}$/;

/** The label a field shows: its own, or the attribute's name in sentence case (FIRST_NAME: "First name"). */
export function fieldLabel(f: FormField): string {
  if (f.label && f.label.trim() !== "") return f.label.trim();
  const words = f.attribute.toLowerCase().replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The form's fields with the primary key among them and required (a contact is named by it). */
export function withRequiredKey(fields: readonly FormField[], primaryKey: string): FormField[] {
  return fields.map((f) => (f.attribute === primaryKey ? { ...f, required: true } : f));
}

/** The list ids a visitor chose: every offered list when there is one, otherwise the ticked ones among those offered. */
export function chosenLists(form: Pick<SignupForm, "listIds">, params: Record<string, unknown>): number[] {
  if (form.listIds.length <= 1) return [...form.listIds];
  const named = params.lists;
  if (Array.isArray(named)) return form.listIds.filter((id) => named.some((n) => String(n) === String(id)));
  return form.listIds.filter((id) => {
    const ticked = params[`list_${id}`];
    return ticked !== undefined && ticked !== "" && ticked !== false && ticked !== "0";
  });
}

// ---- HTML -------------------------------------------------------------------------------

const STYLE = `
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#f3f4f6;color:#1d2330;font:17px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:34rem;margin:0 auto;padding:24px 20px 40px}
.card{background:#fff;border:1px solid #d5d9e0;border-radius:12px;padding:24px 20px}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 16px}
p{margin:0 0 14px;white-space:pre-line}
label{display:block;font-weight:600;margin:0 0 6px}
.field{margin:0 0 16px}
input[type=text],input[type=email],input[type=number],input[type=date],input[type=tel]{display:block;width:100%;min-height:48px;padding:10px 12px;border:1px solid #6b7280;border-radius:8px;font:inherit;color:inherit;background:#fff}
input:focus-visible,button:focus-visible{outline:3px solid #f2b300;outline-offset:2px}
.check{display:flex;gap:12px;align-items:flex-start;padding:8px 0}
.check input{width:24px;height:24px;margin:2px 0 0;flex:none}
.check label{font-weight:400;margin:0}
fieldset{border:0;padding:0;margin:0 0 16px}
legend{font-weight:600;margin-bottom:4px}
.consent{font-size:15px;color:#3d4451}
.error{color:#a11a1a;font-size:15px;margin:6px 0 0}
.errors{border-left:4px solid #a11a1a;padding-left:12px}
button{display:block;width:100%;min-height:48px;padding:12px 20px;border-radius:10px;border:2px solid #1a56b8;background:#1a56b8;color:#fff;font:inherit;font-weight:600;cursor:pointer}
button:hover{background:#15479a;border-color:#15479a}
.done{border-left:4px solid #1f7a3d;padding-left:12px}
`;

function inputType(type: AttributeType | undefined, attribute: string): string {
  if (attribute === "EMAIL") return "email";
  if (attribute === "MOBILE" || attribute === "PHONE") return "tel";
  if (type === "integer" || type === "float") return "number";
  if (type === "date") return "date";
  return "text";
}

function autocompleteOf(attribute: string): string | null {
  const known: Record<string, string> = { EMAIL: "email", FIRST_NAME: "given-name", LAST_NAME: "family-name", NAME: "name", MOBILE: "tel", PHONE: "tel", CITY: "address-level2", COUNTRY: "country-name" };
  return known[attribute] ?? null;
}

/** What the form's markup needs besides the form: its lists' names and the attributes' types. */
export interface FormMarkupFacts {
  /** Absolute URL the form posts to (`/f/{form}` on the service's origin). */
  action: string;
  schema: AttributeSchema;
  listNames: ReadonlyMap<number, string>;
}

/** Values to show again and refusals by field, when a submission came back refused. */
export interface FormEcho {
  values: Record<string, unknown>;
  errors: ReadonlyArray<{ field: string; message: string }>;
}

/** The `<form>` element: the hosted page's and the snippet's. Every value written is escaped. */
export function formMarkup(form: SignupForm, facts: FormMarkupFacts, echo?: FormEcho): string {
  const id = (name: string) => `${form.id}-${name.toLowerCase()}`;
  const errorOf = (name: string) => echo?.errors.find((e) => e.field === name)?.message;
  const parts: string[] = [`<form method="post" action="${escapeHtml(facts.action)}" accept-charset="utf-8">`];
  for (const f of form.fields) {
    const type = facts.schema.get(f.attribute);
    const error = errorOf(f.attribute);
    const value = echo?.values[f.attribute];
    if (type === "boolean") {
      const checked = value !== undefined && value !== "" && value !== "false" && value !== "0" ? " checked" : "";
      parts.push(
        `<div class="check"><input type="checkbox" id="${id(f.attribute)}" name="${f.attribute}" value="true"${checked}${f.required ? " required" : ""}>` +
          `<label for="${id(f.attribute)}">${escapeHtml(fieldLabel(f))}</label></div>`,
      );
    } else {
      const autocomplete = autocompleteOf(f.attribute);
      const described = error ? ` aria-describedby="${id(f.attribute)}-error" aria-invalid="true"` : "";
      parts.push(
        `<div class="field"><label for="${id(f.attribute)}">${escapeHtml(fieldLabel(f))}${f.required ? "" : " (optional)"}</label>` +
          `<input type="${inputType(type, f.attribute)}" id="${id(f.attribute)}" name="${f.attribute}"` +
          `${typeof value === "string" && value !== "" ? ` value="${escapeHtml(value)}"` : ""}` +
          `${autocomplete ? ` autocomplete="${autocomplete}"` : ""}${type === "float" ? ` step="any"` : ""}${f.required ? " required" : ""}${described}>` +
          (error ? `<p class="error" id="${id(f.attribute)}-error">${escapeHtml(error)}</p>` : "") +
          "</div>",
      );
    }
  }
  if (form.listIds.length > 1) {
    parts.push(`<fieldset><legend>Subscribe to</legend>`);
    for (const listId of form.listIds) {
      parts.push(
        `<div class="check"><input type="checkbox" id="${id(`list-${listId}`)}" name="list_${listId}" value="1" checked>` +
          `<label for="${id(`list-${listId}`)}">${escapeHtml(facts.listNames.get(listId) ?? `List ${listId}`)}</label></div>`,
      );
    }
    parts.push(`</fieldset>`);
  }
  parts.push(
    // Hidden by its own style: the snippet runs on sites without this page's stylesheet.
    `<div aria-hidden="true" style="position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden"><label for="${id(HONEYPOT_FIELD)}">Leave this empty</label>` +
      `<input type="text" id="${id(HONEYPOT_FIELD)}" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off"></div>`,
  );
  if (form.turnstileSiteKey) parts.push(`<div class="cf-turnstile" data-sitekey="${escapeHtml(form.turnstileSiteKey)}"></div>`);
  if (form.consentText) parts.push(`<p class="consent">${escapeHtml(form.consentText)}</p>`);
  parts.push(`<button type="submit">Subscribe</button></form>`);
  return parts.join("\n");
}

/** The snippet the panel shows for pasting into any site: the form, and Turnstile's script when on. */
export function formSnippet(form: SignupForm, facts: FormMarkupFacts): string {
  const script = form.turnstileSiteKey ? `<script src="${TURNSTILE_ORIGIN}/turnstile/v0/api.js" async defer></script>\n` : "";
  return `${script}${formMarkup(form, facts)}\n`;
}

function page(title: string, body: string, extraHead = ""): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style>${extraHead}</head>` +
    `<body><main><div class="card">${body}</div></main></body></html>`
  );
}

/** The hosted page: the form, refusals at their fields (and a summary) when a submission came back. */
export function hostedFormPage(form: SignupForm, facts: FormMarkupFacts, echo?: FormEcho): string {
  const title = form.title || form.name;
  const general = echo?.errors.filter((e) => !form.fields.some((f) => f.attribute === e.field)) ?? [];
  const summary = general.length ? `<div class="errors" role="alert">${general.map((e) => `<p>${escapeHtml(e.message)}</p>`).join("")}</div>` : "";
  const script = form.turnstileSiteKey ? `<script src="${TURNSTILE_ORIGIN}/turnstile/v0/api.js" async defer></script>` : "";
  return page(title, `<h1>${escapeHtml(title)}</h1>${summary}${formMarkup(form, facts, echo)}`, script);
}

/** A page of one message after a submission or a confirmation: check your inbox, thank you, or why not. */
export function formMessagePage(title: string, text: string, done = true): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><div class="${done ? "done" : "errors"}" role="status"><p>${escapeHtml(text)}</p></div>`);
}

/** The confirmation link's page: a button, since mail scanners open links (a GET confirms nothing). */
export function confirmPage(form: Pick<SignupForm, "title" | "name">, action: string): string {
  const title = form.title || form.name;
  return page(
    `Confirm your subscription: ${title}`,
    `<h1>Confirm your subscription</h1><p>${escapeHtml(title)}</p>` +
      `<form method="post" action="${escapeHtml(action)}"><button type="submit">Confirm my subscription</button></form>`,
  );
}

/** The confirmation email's text. */
export function confirmationMail(form: Pick<SignupForm, "title" | "name" | "confirmationText">, link: string): { subject: string; text: string } {
  const title = form.title || form.name;
  const opening = form.confirmationText || `Please confirm your subscription to ${title}.`;
  return {
    subject: `Confirm your subscription: ${title}`,
    text: `${opening}\n\nConfirm here: ${link}\n\nThe link works once, for ${CONFIRMATION_TTL_HOURS} hours. If you did not ask to subscribe, ignore this email: nothing happens without your confirmation.\n`,
  };
}
