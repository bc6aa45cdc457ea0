import { parseCallerJson } from "../lib/json";
import { checkOutboundUrl } from "../lib/outbound-address";
import { z } from "../lib/z";
import { emailAddressProblem, MAX_EMAIL_LENGTH, parseAddressList } from "./email";
import { describeJsonType } from "./problems";

/**
 * The field schemas every route shares, each the one parser of its kind of input: list ids,
 * text, JSON objects, email addresses, address lists, outbound URLs. An envelope parameter
 * arrives as text (query string or form body) or as a JSON value (JSON body), so these accept
 * both where a number or text may come, and produce one typed value.
 */

/** Digits, with a zero fraction as spreadsheets and pandas write whole numbers (`4.0`, CONTRACT 10). */
const ID_TEXT = /^(\d{1,16})(?:\.0+)?$/;

/** A positive integer id written as digits (`ID_TEXT`), as a number; undefined otherwise. */
export function idFromText(value: string | number): number | undefined {
  const digits = ID_TEXT.exec(String(value).trim())?.[1];
  if (digits === undefined) return undefined;
  const id = Number(digits);
  return id >= 1 && Number.isSafeInteger(id) ? id : undefined;
}

/**
 * A list id from text or a number; null when it is not a positive safe integer. Shard k hands
 * out ids from k * 2^40 (decision 0030), so ids pass int32 and stay below 2^53.
 */
export function parseListId(value: string | number): number | null {
  return idFromText(value) ?? null;
}

/** A list id: a positive integer below 2^53, as a number or decimal text. */
export const listIdParam = z
  .union([z.string(), z.number()], { error: "must be a list id (a positive integer)" })
  .transform((value, ctx) => {
    const id = parseListId(value);
    if (id === null) {
      ctx.addIssue({ code: "custom", message: `must be a list id (a positive integer), not "${value}"` });
      return z.NEVER;
    }
    return id;
  })
  .meta({ description: "List id: a positive integer (below 2^53)", example: "12" });

/** Most distinct list ids one call may name. */
export const MAX_LIST_IDS = 100;

/** The parts of a list-id parameter: one id, `"4,7"`, a JSON array (`[4,7]`) or its text (`"[4,7]"`). */
function listIdParts(value: string | number | Array<string | number>): Array<string | number> | null {
  if (Array.isArray(value)) return value;
  const text = String(value).trim();
  if (!text.startsWith("[")) return text.split(",");
  const parsed = parseCallerJson(text);
  if (!parsed.ok) return null;
  const parts = parsed.value;
  return Array.isArray(parts) && parts.every((part) => typeof part === "string" || typeof part === "number") ? parts : null;
}

/** One list id or several: comma separated (`4,7,9`) or a JSON array (`[4,7,9]`, as JSON or as its text); at most MAX_LIST_IDS distinct ones. */
export const listIdsParam = z
  .union([z.string(), z.number(), z.array(z.union([z.string(), z.number()]))], {
    error: "must be one list id or several, comma separated or as a JSON array",
  })
  .transform((value, ctx) => {
    const parts = listIdParts(value);
    if (parts === null) {
      ctx.addIssue({ code: "custom", message: `must be list ids: one, comma separated, or a JSON array of them; "${value}" is none of those` });
      return z.NEVER;
    }
    const distinct = new Set<number>();
    for (const part of parts) {
      const id = parseListId(part);
      if (id === null) {
        ctx.addIssue({ code: "custom", message: `must be list ids (positive integers), comma separated or as a JSON array; "${String(part).trim()}" is not one` });
        return z.NEVER;
      }
      distinct.add(id);
    }
    const ids = [...distinct];
    if (ids.length === 0) {
      ctx.addIssue({ code: "custom", message: "must name at least one list" });
      return z.NEVER;
    }
    if (ids.length > MAX_LIST_IDS) {
      ctx.addIssue({ code: "custom", message: `must name at most ${MAX_LIST_IDS} list ids, not ${ids.length}` });
      return z.NEVER;
    }
    return ids;
  })
  .meta({ description: `One list id or several: comma separated, or a JSON array (at most ${MAX_LIST_IDS})`, example: "4,7" });

// Control characters (Unicode Cc: C0, DEL, C1) have no place in a name: a NUL cuts it short in
// some readers, an escape rewrites a terminal, a line break forges log lines. Free text
// (descriptions) may hold tabs and line breaks, and no other control character.
const CONTROL_CHARACTER = /\p{Cc}/u;
const CONTROL_IN_FREE_TEXT = /(?![\t\n\r])\p{Cc}/u;
const NO_CONTROLS = "must not contain control characters";

/** A name (of a list, an activity, a panel, a user, a webhook…): trimmed, 1 to `max` characters, no control characters. */
export function nameText(max: number) {
  return z
    .string({ error: "must be text" })
    .trim()
    .min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` })
    .refine((text) => !CONTROL_CHARACTER.test(text), { error: NO_CONTROLS });
}

/** Free text (a description): at most `max` characters; tabs and line breaks, but no other control character. */
export function freeText(max: number) {
  return z
    .string({ error: "must be text" })
    .max(max, { error: `must be at most ${max} characters` })
    .refine((text) => !CONTROL_IN_FREE_TEXT.test(text), { error: NO_CONTROLS });
}

/** Required non-empty text, trimmed (a number is read as its text); a name, so no control characters. */
export function textParam(maxLength: number) {
  return z
    .union([z.string(), z.number()], { error: "is required" })
    .transform((value) => String(value))
    .pipe(nameText(maxLength));
}

/** Optional free text; absent (or JSON null, as JSON clients send an unset field) stays undefined; "" is empty text. */
export function optionalTextParam(maxLength: number) {
  return z.preprocess(
    (value) => (value === null ? undefined : value),
    z
      .union([z.string(), z.number()])
      .transform((value) => String(value))
      .pipe(freeText(maxLength))
      .optional(),
  );
}

/**
 * An optional parameter that a form sends empty (`listid=`), or a JSON client as null or as an
 * empty array (`"listid": []`, `json.dumps([])`: a list of ids with none chosen) when it has no
 * value: each is "not given", as an absent one (no list to join is not a wrong list id).
 */
export function absentWhenEmpty<S extends z.ZodType>(schema: S) {
  return z.preprocess((value) => (isEmptyValue(value) ? undefined : value), schema.optional());
}

function isEmptyValue(value: unknown): boolean {
  if (value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "string" && /^\s*(?:\[\s*\])?\s*$/.test(value);
}

/**
 * `data` holding a JSON object: JSON text (form and query) or the object itself (JSON body).
 * Arrays, scalars and unparsable text are refused with the reason.
 */
export const jsonObjectParam = z
  .union([z.string(), z.record(z.string(), z.unknown())], {
    error: (issue) => (issue.input === undefined ? "is required: a JSON object" : "must be a JSON object"),
  })
  .transform((value, ctx) => {
    let parsed: unknown = value;
    if (typeof value === "string") {
      const json = parseCallerJson(value);
      if (!json.ok) {
        const invalid = json.reason === "must be valid JSON";
        ctx.addIssue({ code: "custom", path: json.path, message: invalid ? "must be a JSON object; the text could not be parsed as JSON" : json.reason });
        return z.NEVER;
      }
      parsed = json.value;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      ctx.addIssue({ code: "custom", message: `must be a JSON object, not ${describeJsonType(parsed)}` });
      return z.NEVER;
    }
    if (Object.keys(parsed).length === 0) {
      ctx.addIssue({ code: "custom", message: "must not be an empty object" });
      return z.NEVER;
    }
    return parsed as Record<string, unknown>;
  })
  .meta({ description: "JSON object (as JSON text in a query or form body)", example: '{"EMAIL":"ada@example.com","NAME":"Ada"}' });

/** `data` naming one contact: its primary-key value, or a JSON object holding it. */
export const contactRefParam = z
  .union([z.string(), z.number(), z.record(z.string(), z.unknown())], {
    error: (issue) => (issue.input === undefined ? "is required: the contact's primary-key value" : "must be the contact's primary-key value, or a JSON object holding it"),
  })
  .meta({ description: "The contact's primary-key value, or a JSON object holding it", example: "ada@example.com" });

/** One email address, trimmed and lower-cased (the rule of domain/email.ts). */
export const emailAddress = z
  .string({ error: "must be an email address" })
  .trim()
  .max(MAX_EMAIL_LENGTH, { abort: true, error: `must be at most ${MAX_EMAIL_LENGTH} characters` })
  .toLowerCase()
  .check((ctx) => {
    const problem = emailAddressProblem(ctx.value);
    if (problem) ctx.issues.push({ code: "custom", input: ctx.value, message: problem.startsWith("is not") ? `must be an email address, not "${ctx.value}"` : problem });
  })
  .meta({ format: "email", example: "ada@example.com" });

/**
 * Text, a number as its text, or a list of texts as their comma-separated text: a JSON array
 * (`"notify_me": ["a@example.com", "b@example.com"]`) or a name repeated in a form
 * (`notifyemail=a&notifyemail=b`, Python's requests for a list), as clients hold a list of addresses.
 */
function textOrTextList(missing: string) {
  return z
    .union([z.string(), z.number(), z.array(z.string())], {
      error: (issue) => (issue.input === undefined ? missing : "must be text, or a JSON array of texts"),
    })
    .transform((value) => (Array.isArray(value) ? value.join(",") : String(value)));
}

/** Required text as textParam reads it, which may also come as a list of texts (textOrTextList). */
export function textListParam(maxLength: number) {
  return textOrTextList("is required").pipe(nameText(maxLength));
}

/** Optional free text as optionalTextParam reads it, which may also come as a list of texts (textOrTextList). */
export function optionalTextListParam(maxLength: number) {
  return z.preprocess((value) => (value === null ? undefined : value), textOrTextList("must be text").pipe(freeText(maxLength)).optional());
}

/** Email addresses in one text, separated by commas or semicolons: one to `max` of them. */
export function addressList(max: number) {
  return z
    .string({ error: "must be email addresses, comma separated" })
    .transform((text, ctx) => {
      const parsed = parseAddressList(text, max);
      if (parsed.ok) return parsed.value;
      ctx.addIssue({ code: "custom", message: parsed.reason });
      return z.NEVER;
    })
    .meta({ description: `One to ${max} email addresses, separated by commas or semicolons`, example: "ops@example.com, crm@example.com" });
}

/** What some input rules read from the deployment. */
export interface InputRules {
  /** Outbound URLs may name private, loopback or link-local hosts (local development and tests). */
  allowPrivateFetch: boolean;
}

/**
 * A URL the service will fetch or post to (bulk `path` and `callback`, broadcast sources,
 * webhooks), under lib/outbound.ts's rule; the answer is the URL in its normal form.
 */
export function outboundUrl(rules: InputRules) {
  return z
    .string()
    .transform((raw, ctx) => {
      const checked = checkOutboundUrl(raw, rules.allowPrivateFetch);
      if (checked.ok) return checked.url.toString();
      ctx.addIssue({ code: "custom", message: checked.reason });
      return z.NEVER;
    })
    .meta({ format: "uri" });
}

/** Most origins a panel lists for CORS. */
export const MAX_CORS_ORIGINS = 50;

/** Browser-extension pages have origins of their own scheme, which URL parsing leaves opaque. */
const EXTENSION_ORIGIN = /^(?:chrome|moz|safari-web)-extension:\/\/[a-z0-9-]+$/;

/** One CORS origin in its standard form, or null when the text is not one. */
function corsOrigin(raw: string): string | null {
  const text = raw.trim();
  if (text === "*") return text;
  if (EXTENSION_ORIGIN.test(text.toLowerCase())) return text.toLowerCase();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const web = url.protocol === "https:" || url.protocol === "http:";
  return web && text.replace(/\/$/, "").toLowerCase() === url.origin.toLowerCase() ? url.origin : null;
}

/**
 * The origins whose browser pages may call a panel's public API: each `scheme://host[:port]`
 * (http or https, nothing after the host; stored in the URL standard's form), a browser
 * extension's origin (`chrome-extension://<id>`, `moz-extension://<id>`), or `*` for any.
 */
/** Longest origin accepted: a scheme and a host name of at most 253 characters, with a port. */
const MAX_ORIGIN_LENGTH = 300;

/** The Access-Control-Allow-Origin value for `origin` under a list of corsOriginList's; null when the list does not allow it. */
export function allowOrigin(origins: readonly string[], origin: string): string | null {
  if (origins.includes("*")) return "*";
  return origins.includes(origin) ? origin : null;
}

export const corsOriginList = z
  .array(
    z
      .string({ error: "must be an origin such as https://shop.example.com, or *" })
      .max(MAX_ORIGIN_LENGTH, { error: `must be at most ${MAX_ORIGIN_LENGTH} characters` })
      .transform((raw, ctx) => {
      const origin = corsOrigin(raw);
      if (origin === null) {
        ctx.addIssue({ code: "custom", message: `must be an origin such as https://shop.example.com (scheme and host, no path), or *; not "${raw}"` });
        return z.NEVER;
      }
      return origin;
    }),
    { error: "must be a list of origins" },
  )
  .max(MAX_CORS_ORIGINS, { error: `must hold at most ${MAX_CORS_ORIGINS} origins` })
  .transform((origins) => [...new Set(origins)])
  .meta({ description: "Origins allowed to call the public API from a browser (web pages, extensions); [\"*\"] allows any", example: ["https://shop.example.com"] });
