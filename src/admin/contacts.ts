import { contactSearchQuery } from "../domain/panel-screens";
import { normalisePrimaryKey } from "../domain/primary-key";
import { invalidField, notFound } from "../lib/http/errors";
import { loadAttributeSchema } from "../store/attributes";
import { getContactByKey, listsOfContact, searchContacts, type Contact } from "../store/contacts";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

function contactView(contact: Contact) {
  return { key: contact.key, attributes: contact.attributes, created_at: isoTime(contact.createdAt), updated_at: isoTime(contact.updatedAt) };
}

const searchPanelContacts = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts",
  role: "viewer",
  summary: "Contacts by primary-key value, exact or by prefix (an empty prefix pages through all), in key order; next_cursor pages on",
  query: contactSearchQuery,
  async handle({ env, path, query, panel, db }) {
    let q = query.q;
    if (q !== "") {
      // The key as contacts store it (an email lower-cased, say), so the search finds what the API wrote.
      const schema = await loadAttributeSchema(db, panel.id);
      const normalised = normalisePrimaryKey(panel.primaryKey, schema.get(panel.primaryKey) ?? "string", q);
      if (normalised.ok) q = normalised.value;
      else if (query.match === "exact") throw invalidField("q", normalised.reason);
      // A prefix is rarely a whole valid key ("ada@" is no email); emails are stored lower-case.
      else if (panel.primaryKey === "EMAIL") q = q.toLowerCase();
    }
    const found = await searchContacts(db, panel.id, q, query.match, query.after, query.limit + 1);
    const page = found.slice(0, query.limit);
    return {
      primary_key: panel.primaryKey,
      contacts: page.map(contactView),
      next_cursor: found.length > query.limit ? page.at(-1)!.key : null,
    };
  },
});

const readContact = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key",
  role: "viewer",
  summary: "One contact by primary-key value: attributes and lists (its events: /contacts/{key}/events)",
  async handle({ env, path, panel, db }) {
    const contact = await getContactByKey(db, panel.id, path.key!);
    if (!contact) throw notFound(`No contact with ${panel.primaryKey} "${path.key}" in this panel`);
    return { ...contactView(contact), primary_key: panel.primaryKey, lists: await listsOfContact(db, panel.id, contact.id) };
  },
});

export const contactRoutes = [searchPanelContacts, readContact];
