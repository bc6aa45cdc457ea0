import { z } from "../lib/z";
import { ACTIVITY_PARAM_TYPES, MAX_ACTIVITY_NAME_LENGTH, MAX_PARAMS_PER_ACTIVITY, PARAM_NAME_PATTERN } from "./activity";
import { ATTRIBUTE_TYPES } from "./attributes";
import { nameText } from "./fields";
import { MAX_LIST_DESCRIPTION_LENGTH, MAX_LIST_NAME_LENGTH } from "./lists";

/** GET /panels/{panel}/contacts: primary-key search, exact or by prefix, paged by key. */
export const contactSearchQuery = z
  .object({
    q: z.string().trim().max(500).default(""),
    match: z.enum(["prefix", "exact"], { error: "must be prefix or exact" }).default("prefix"),
    after: z.string().max(500).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(25),
  })
  .strict();

const listName = z.string().trim().min(1, { error: "must not be empty" }).max(MAX_LIST_NAME_LENGTH);

/** POST /panels/{panel}/lists. */
export const createListBody = z
  .object({ name: listName, description: z.string().trim().max(MAX_LIST_DESCRIPTION_LENGTH).optional() })
  .strict();

/** PATCH /panels/{panel}/lists/{list}. */
export const renameListBody = z
  .object({ name: listName, description: z.string().trim().max(MAX_LIST_DESCRIPTION_LENGTH).optional() })
  .strict();

/** The largest CSV file the panel uploads in one request. */
export const MAX_PANEL_UPLOAD_BYTES = 100 * 1024 * 1024;

const paramsSchema = z
  .record(z.string().max(64), z.enum(ACTIVITY_PARAM_TYPES, { error: `must be one of ${ACTIVITY_PARAM_TYPES.join(", ")}` }))
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
  .meta({ example: { name: "string", prid: "integer", price: "float", prqt: "integer" } });

/** POST /panels/{panel}/activities. */
export const defineActivityBody = z.strictObject({
  name: nameText(MAX_ACTIVITY_NAME_LENGTH).meta({ example: "add_to_cart" }),
  params: paramsSchema,
});

/** PUT /panels/{panel}/attributes/{name}. */
export const defineAttributeBody = z.strictObject({ type: z.enum(ATTRIBUTE_TYPES, { error: `must be one of ${ATTRIBUTE_TYPES.join(", ")}` }) });
