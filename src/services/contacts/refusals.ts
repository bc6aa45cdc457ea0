import { refused, type Result } from "../../lib/problems";

/**
 * The contact writes' refusals, in their own words: lists by the envelope's `listid` (the API's
 * and the bulk upload's one name for them), a contact by its stored, normalised key, which only
 * the service knows for an update. The envelope and the panel reword a missing contact as CONTRACT
 * has each (api/contacts.ts, admin/contacts.ts).
 */
export function noSuchLists(missing: readonly number[]): Result<never> {
  const ids = missing.join(", ");
  return refused("not_found", [{ field: "listid", message: `no list with id ${ids}` }], `listid: no list with id ${ids} in this panel`);
}

export function noSuchContact(primaryKey: string, key: string): Result<never> {
  return refused("not_found", [{ field: "contact", message: "no such contact" }], `No contact with ${primaryKey} "${key}"`);
}

export function contactExists(field: string, primaryKey: string, key: string): Result<never> {
  return refused("conflict", [{ field, message: `a contact with ${primaryKey} "${key}" exists already: edit it from its page` }], `A contact with ${primaryKey} "${key}" exists already`);
}
