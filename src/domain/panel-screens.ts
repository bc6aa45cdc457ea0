import { z } from "../lib/z";
import { MAX_ACTIVITY_NAME_LENGTH, MAX_PARAMS_PER_ACTIVITY, PARAM_NAME_PATTERN } from "./activity";
import { MAX_ARRAY_MEMBERS, SCALAR_PARAM_TYPES } from "./activity-param-types";
import { ATTRIBUTE_TYPES, checkTextValue, type AttributeType, type AttributeValue } from "./attributes";
import { listIdParam, MAX_LIST_IDS, nameText, outboundUrl, type InputRules } from "./fields";
import { MAX_LIST_DESCRIPTION_LENGTH, MAX_LIST_NAME_LENGTH } from "./lists";

/**
 * GET /panels/{panel}/contacts: search by the primary key or by one other attribute's value,
 * exact or by prefix (text attributes), paged by key.
 */
export const contactSearchQuery = z
  .object({
    q: z.string().trim().max(500).default(""),
    attribute: z.string().trim().max(64).optional(),
    match: z.enum(["prefix", "exact", "contains"], { error: "must be prefix, exact or contains" }).default("prefix"),
    after: z.string().max(500).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(25),
  })
  .strict();

/**
 * The value an attribute search looks for, read from the search text as the attribute's type
 * (as a CSV cell is): `true`/`yes`/`1` for a boolean, a decimal number for a number. A prefix
 * is only meaningful for text, so only string and date attributes take one.
 */
export function attributeSearchValue(type: AttributeType, q: string, match: "prefix" | "exact" | "contains"): { ok: true; value: AttributeValue } | { ok: false; field: "q" | "match"; reason: string } {
  if (q === "") return { ok: false, field: "q", reason: "is required to search by an attribute" };
  if (match !== "exact" && type !== "string" && type !== "date") return { ok: false, field: "match", reason: `a ${type} attribute is searched by its exact value` };
  if (match !== "exact") return { ok: true, value: q };
  const value = checkTextValue(type, q);
  return value.ok ? { ok: true, value: value.value } : { ok: false, field: "q", reason: value.reason };
}

/**
 * How many contacts a "contains" search looks at per page, in key order: no index serves a
 * substring, so the scan is bounded and says so ("searched the first N contacts; refine"). The
 * bound is what keeps a page within bench:panel's 300 ms while four searches queue on one shard
 * (decision 0045: alone, a request cost 103-180 ms at 50,000 and 38-99 ms at 20,000).
 */
export const CONTAINS_SCAN_ROWS = 20_000;

/**
 * PATCH /panels/{panel}/contacts/{key}: attribute changes for one contact, as the API's
 * `update` takes them (a value sets the attribute, null removes it); the key names the contact.
 */
export const editContactBody = z.strictObject({
  attributes: z.record(z.string().max(64), z.unknown()).refine((changes) => Object.keys(changes).length > 0, { error: "must change at least one attribute" }),
});

/**
 * POST /panels/{panel}/contacts: a new contact from the panel's form, its attributes (the
 * primary key among them) under the API's `add` rules, optionally joining lists.
 */
export const addContactBody = z.strictObject({
  attributes: z.record(z.string().max(64), z.unknown()),
  lists: z.array(listIdParam).max(MAX_LIST_IDS).optional(),
});

const listName = z.string().trim().min(1, { error: "must not be empty" }).max(MAX_LIST_NAME_LENGTH);

/** POST /panels/{panel}/lists. */
export const createListBody = z
  .object({ name: listName, description: z.string().trim().max(MAX_LIST_DESCRIPTION_LENGTH).optional() })
  .strict();

/** PATCH /panels/{panel}/lists/{list}. */
export const renameListBody = z
  .object({ name: listName, description: z.string().trim().max(MAX_LIST_DESCRIPTION_LENGTH).optional() })
  .strict();

/** GET /panels/{panel}/lists/{list}/members: a page of members, after a contact id. */
export const listMembersQuery = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

/** Most columns a mapping names. */
export const MAX_MAPPED_COLUMNS = 500;

/**
 * A panel import's column mapping: CSV header → an attribute's name, a new attribute
 * (`{"new": name, "type": type}`), or null to skip the column. Whether the attributes exist is
 * checked against the panel (domain/imports.ts checkMapping), the header when the file is read.
 */
export const columnMapping = z
  .record(
    z.string().trim().min(1, { error: "a column's header must not be empty" }).max(200),
    z.union(
      [
        z.string().trim().min(1).max(64),
        z.null(),
        z.strictObject({ new: z.string().trim().min(1).max(64), type: z.enum(ATTRIBUTE_TYPES, { error: `must be one of ${ATTRIBUTE_TYPES.join(", ")}` }) }),
      ],
      { error: 'must be an attribute\'s name, {"new": name, "type": type} for a new attribute, or null to skip the column' },
    ),
  )
  .refine((mapping) => Object.keys(mapping).length <= MAX_MAPPED_COLUMNS, { error: `must name at most ${MAX_MAPPED_COLUMNS} columns` })
  .meta({ example: { "E-mail": "EMAIL", "First name": "FIRSTNAME", "Shoe size": { new: "SHOE_SIZE", type: "integer" }, Notes: null } });

/** POST /panels/{panel}/lists/{list}/imports: a CSV file the import engine fetches, as bulk upload's `path`. */
export function importFromUrlBody(rules: InputRules) {
  return z.strictObject({
    url: z.string().trim().min(1, { error: "is required" }).max(2048).pipe(outboundUrl(rules)).meta({ example: "https://crm.example.com/export.csv" }),
    mapping: columnMapping.optional(),
  });
}

/** POST /panels/{panel}/lists/{list}/uploads: the file is the body, so its name and mapping (JSON text) ride in the query. */
export const uploadQuery = z.strictObject({
  name: z.string().trim().min(1).max(200).default("upload.csv"),
  mapping: z
    .string()
    .max(64 * 1024)
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object of the CSV's headers; the text could not be parsed as JSON" });
        return z.NEVER;
      }
    })
    .pipe(columnMapping)
    .optional(),
});

/** GET /panels/{panel}/imports: the import history, newest first, of the panel or one list. */
export const importHistoryQuery = z.strictObject({
  list: listIdParam.optional(),
  cursor: z
    .string()
    .regex(/^\d{1,16}\.[A-Za-z0-9_-]{1,64}$/, { error: "must be a next_cursor this route answered" })
    .transform((text) => ({ createdAt: Number(text.slice(0, text.indexOf("."))), id: text.slice(text.indexOf(".") + 1) }))
    .optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

/** The largest CSV file the panel uploads in one request. */
export const MAX_PANEL_UPLOAD_BYTES = 100 * 1024 * 1024;

const TYPE_CHOICES = `must be one of ${SCALAR_PARAM_TYPES.join(", ")}, or {"type":"array","of":{member: type}}`;

/**
 * A scalar type's name. Text is required first so that any other value fails this alternative
 * as a mismatch of type: a union of it and an array definition then reports an object's own
 * problems (`params.items.of.prid: ...`) instead of a vague "must be one of" on the parameter.
 */
const scalarParamType = z.string().pipe(z.enum(SCALAR_PARAM_TYPES, { error: TYPE_CHOICES })).meta({ enum: [...SCALAR_PARAM_TYPES] });

/** An array parameter (CONTRACT 10): items whose members have scalar types. */
const arrayParamType = z.strictObject({
  type: z.literal("array"),
  // An item's member holds one scalar value, never an array of its own.
  of: z
    .record(
      z.string().max(64).regex(PARAM_NAME_PATTERN, { error: "a member name is a letter or _, then up to 63 letters, digits or _" }),
      z.enum(SCALAR_PARAM_TYPES, { error: `must be one of ${SCALAR_PARAM_TYPES.join(", ")}` }),
    )
    .refine((of) => Object.keys(of).length >= 1 && Object.keys(of).length <= MAX_ARRAY_MEMBERS, { error: `must define 1 to ${MAX_ARRAY_MEMBERS} members` }),
});

const paramsSchema = z
  .record(z.string().max(64), z.union([scalarParamType, arrayParamType], { error: TYPE_CHOICES }))
  .superRefine((params, ctx) => {
    const names = Object.keys(params);
    if (names.length > MAX_PARAMS_PER_ACTIVITY) ctx.addIssue({ code: "custom", message: `at most ${MAX_PARAMS_PER_ACTIVITY} parameters` });
    for (const name of names) {
      if (!PARAM_NAME_PATTERN.test(name)) {
        ctx.addIssue({ code: "custom", path: [name], message: "a parameter name is a letter or _, then up to 63 letters, digits or _" });
      }
    }
  })
  .default({})
  .meta({ example: { name: "string", prid: "integer", price: "float", prqt: "integer", items: { type: "array", of: { prid: "integer", name: "string", price: "float" } } } });

/** POST /panels/{panel}/activities. */
export const defineActivityBody = z.strictObject({
  name: nameText(MAX_ACTIVITY_NAME_LENGTH).meta({ example: "add_to_cart" }),
  params: paramsSchema,
});

/** PUT /panels/{panel}/attributes/{name}. */
export const defineAttributeBody = z.strictObject({ type: z.enum(ATTRIBUTE_TYPES, { error: `must be one of ${ATTRIBUTE_TYPES.join(", ")}` }) });
