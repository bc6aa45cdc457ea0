import { z } from "../lib/z";
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
