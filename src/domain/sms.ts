import { z } from "../lib/z";
import { nameText } from "./fields";
import { normalisePrimaryKey } from "./primary-key";

/**
 * SMS without I/O: phone numbers as providers want them, the length of a message in segments
 * (GSM-7 or UCS-2, as carriers count them), the links a message carries, STOP and START
 * replies, and the admin bodies of a panel's SMS provider and templates.
 */

/** A number as the contact's MOBILE holds it, reduced to its digits (country code first); null when it is not a number. */
export function phoneDigits(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return null;
  const checked = normalisePrimaryKey("MOBILE", "string", raw);
  return checked.ok ? checked.value.replace(/^\+/, "") : null;
}

// GSM 03.38: the default alphabet, and the extension table whose characters take two septets.
const GSM_BASIC = new Set(
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà",
);
const GSM_EXTENDED = new Set("\f^{}\\[~]|€");

export interface SmsLength {
  /** GSM-7 when every character is in the GSM alphabet, else UCS-2 (UTF-16). */
  encoding: "GSM-7" | "UCS-2";
  /** Characters as the user sees them (code points). */
  characters: number;
  /** Units the encoding spends: septets (extension characters take two) or UTF-16 code units. */
  units: number;
  /** Segments the message is sent as: 160/70 units in one, 153/67 per segment once split. */
  segments: number;
}

export function smsLength(text: string): SmsLength {
  let septets = 0;
  let gsm = true;
  for (const char of text) {
    if (GSM_BASIC.has(char)) septets += 1;
    else if (GSM_EXTENDED.has(char)) septets += 2;
    else {
      gsm = false;
      break;
    }
  }
  const characters = [...text].length;
  if (gsm) return { encoding: "GSM-7", characters, units: septets, segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  const units = text.length;
  return { encoding: "UCS-2", characters, units, segments: units <= 70 ? 1 : Math.ceil(units / 67) };
}

/** http(s) links in a message's text; punctuation that ends a sentence is not part of the link. */
const LINK = /https?:\/\/[^\s<>"']+/g;

export function smsLinks(text: string): string[] {
  return [...text.matchAll(LINK)].map((m) => m[0].replace(/[.,;:!?)\]]+$/, ""));
}

/** Replaces each link of `smsLinks(text)`, in order, by what `short` gives for it. */
export function replaceSmsLinks(text: string, short: (url: string, index: number) => string): string {
  let index = 0;
  return text.replace(LINK, (match) => {
    const url = match.replace(/[.,;:!?)\]]+$/, "");
    return short(url, index++) + match.slice(url.length);
  });
}

// The carriers' and Twilio's standard opt-out and opt-in keywords (CTIA).
const STOP_WORDS = new Set(["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE"]);
const START_WORDS = new Set(["START", "UNSTOP", "YES", "OPTIN"]);

/** What a reply asks for: the whole message is one keyword (case and spaces aside). */
export function replyKeyword(body: string): "stop" | "start" | null {
  const word = body.trim().toUpperCase();
  if (STOP_WORDS.has(word)) return "stop";
  if (START_WORDS.has(word)) return "start";
  return null;
}

const secret = (what: string) => z.string({ error: `is required: the ${what}` }).trim().min(1, { error: "must not be empty" }).max(200);
const e164 = z
  .string()
  .trim()
  .max(16, { abort: true, error: "must be a number in E.164 form, such as +14155550100" })
  .regex(/^\+[1-9]\d{5,14}$/, { error: "must be a number in E.164 form, such as +14155550100" });
const dltId = z
  .string()
  .trim()
  .max(25, { abort: true, error: "must be the DLT template id: 10 to 25 digits" })
  .regex(/^\d{10,25}$/, { error: "must be the DLT template id: 10 to 25 digits" });

/** PUT /panels/{panel}/sms: the panel's provider; `outbox` removes the provider (nothing is sent). */
export const smsSettingsBody = z.discriminatedUnion(
  "provider",
  [
    z
      .object({
        provider: z.literal("twilio"),
        account_sid: z
          .string({ error: "is required" })
          .trim()
          .max(34, { abort: true, error: "must be the account SID: AC and 32 hex digits" })
          .regex(/^AC[0-9a-fA-F]{32}$/, { error: "must be the account SID: AC and 32 hex digits" }),
        auth_token: secret("account's auth token"),
        from: e164.optional(),
        messaging_service_sid: z
          .string()
          .trim()
          .max(34, { abort: true, error: "must be a messaging service SID: MG and 32 hex digits" })
          .regex(/^MG[0-9a-fA-F]{32}$/, { error: "must be a messaging service SID: MG and 32 hex digits" })
          .optional(),
      })
      .strict()
      .refine((b) => (b.from === undefined) !== (b.messaging_service_sid === undefined), {
        error: "give either from (the sending number) or messaging_service_sid, not both",
        path: ["from"],
      }),
    z
      .object({
        provider: z.literal("msg91"),
        authkey: secret("MSG91 authkey"),
        sender_id: z
          .string({ error: "is required: the DLT-approved sender id" })
          .trim()
          .max(11, { abort: true, error: "must be 3 to 11 letters or digits (a DLT header is 6 letters)" })
          .regex(/^[A-Za-z0-9]{3,11}$/, { error: "must be 3 to 11 letters or digits (a DLT header is 6 letters)" }),
        template_id: z.string({ error: "is required: the MSG91 flow/template id whose content is ##message##" }).trim().min(1).max(64),
        dlt_template_id: dltId.optional(),
      })
      .strict(),
    z.object({ provider: z.literal("outbox") }).strict(),
  ],
  { error: "provider must be one of twilio, msg91, outbox" },
);
export type SmsSettingsBody = z.output<typeof smsSettingsBody>;

/** POST/PUT of a panel's SMS template. Merge tags as in email: `{{FIRSTNAME | there}}`. */
export const smsTemplateBody = z
  .object({
    name: nameText(200),
    body: z.string({ error: "is required" }).trim().min(1, { error: "must not be empty" }).max(1600, { error: "must be at most 1600 characters (10 segments)" }),
    dlt_template_id: dltId.nullable().optional(),
    provider_template_id: z.string().trim().min(1).max(64).nullable().optional(),
  })
  .strict();
export type SmsTemplateBody = z.output<typeof smsTemplateBody>;

/** POST /panels/{panel}/sms/preview: a body (or a template) filled with attributes, and its length. */
export const smsPreviewBody = z
  .object({
    body: z.string().min(1).max(1600).optional(),
    template: z.string().trim().min(1).max(64).optional(),
    attributes: z.record(z.string().max(100), z.union([z.string().max(2000), z.number(), z.boolean(), z.null()])).default({}),
  })
  .strict()
  .refine((b) => (b.body === undefined) !== (b.template === undefined), { error: "give either body or template", path: ["body"] });

/**
 * GET /panels/{panel}/sms/suppressions: a page of the stopped numbers, newest first; `cursor`
 * is the `next_cursor` of the page before: the last stop it listed, `<created_at ms>.<number>`
 * (the number as stored: digits, or an erased contact's `erased:<hash>`).
 */
export const smsSuppressionsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: z
      .string()
      .regex(/^\d{1,16}\.[0-9A-Za-z:]{1,100}$/, { error: "must be the next_cursor of the previous page" })
      .transform((text) => ({ createdAt: Number(text.slice(0, text.indexOf("."))), phone: text.slice(text.indexOf(".") + 1) }))
      .optional()
      .meta({ description: "next_cursor of the previous page" }),
  })
  .strict();

/** The next_cursor going on after the stop `last` (smsSuppressionsQuery reads it back). */
export function smsSuppressionsCursor(last: { createdAt: number; phone: string }): string {
  return `${last.createdAt}.${last.phone}`;
}
