import type { ShardDb } from "../store/shards";
import type { UnknownAttributeMode } from "../domain/attributes";
import { contactKeyFrom, prepareContact, type KeyedSchema } from "../domain/contacts";
import { forgetCallers } from "../services/access/api-keys";
import { fromProblems, invalidField, notFound, orNotFound } from "../lib/http/errors";
import { journeysAfterContactWrite } from "../services/journeys/contact-triggers";
import { segmentsAfterContactWrite } from "../services/segments/contact-writes";
import { z } from "../lib/z";
import { getContactByKey, listsOfContact, removeFromLists, upsertContact } from "../store/contacts";
import { updateContactAttributes } from "../services/contacts/update";
import { existingListIds } from "../store/lists";
import type { Panel } from "../store/panels";
import { defineOperation, type OperationTable } from "./operation";
import { contactRefParam, jsonObjectParam, listIdsParam } from "../domain/fields";

function prepareOrThrow(schema: KeyedSchema, data: Record<string, unknown>, unknown: UnknownAttributeMode) {
  const prepared = prepareContact(schema, data, unknown);
  if (!prepared.ok) throw fromProblems(prepared.problems);
  return prepared;
}

/**
 * What an add or update answers besides the contact: the unknown attributes it left out or
 * created (CONTRACT 8). Created ones change the panel's schema, which cached callers hold.
 */
function schemaMembers(prepared: { ignored: string[]; created: string[] }): Record<string, unknown> {
  if (prepared.created.length) forgetCallers();
  return { ...(prepared.ignored.length ? { ignored: prepared.ignored } : {}), ...(prepared.created.length ? { created: prepared.created } : {}) };
}

function keyOrThrow(schema: KeyedSchema, data: unknown): string {
  const key = contactKeyFrom(schema, data);
  if (!key.ok) throw invalidField("data", key.message);
  return key.key;
}

export async function requireLists(db: ShardDb, panel: Panel, listIds: readonly number[]): Promise<void> {
  const found = await existingListIds(db, panel.id, listIds);
  const missing = listIds.filter((id) => !found.has(id));
  if (missing.length) {
    throw notFound(`listid: no list with id ${missing.join(", ")} in this panel`, [
      { field: "listid", message: `no list with id ${missing.join(", ")}` },
    ]);
  }
}

function contactOfPanel(db: ShardDb, panel: Panel, key: string) {
  return orNotFound(getContactByKey(db, panel.id, key), `No contact with ${panel.primaryKey} "${key}"`, [{ field: "data", message: "no such contact" }]);
}

const addContact = defineOperation({
  summary: "Add a contact, or merge the given attributes into the existing one (4.1); listid names one list or several",
  params: z.object({ data: jsonObjectParam, listid: listIdsParam.optional() }),
  async run({ env, exec, panel, schema, now, db }, { data, listid }) {
    const prepared = prepareOrThrow(schema, data, panel.unknownAttributes);
    if (listid !== undefined) await requireLists(db, panel, listid);
    const contact = await upsertContact(db, panel.id, prepared.key, prepared.values, now, { listIds: listid, newAttributes: prepared.created });
    exec.waitUntil(
      segmentsAfterContactWrite(env, panel.id, contact.id, ["attributes", "lists"], now).then((entered) =>
        journeysAfterContactWrite(env, panel.id, contact, contact.joinedList || entered, now),
      ),
    );
    return { contact: contact.attributes, ...schemaMembers(prepared) };
  },
});

const viewContact = defineOperation({
  summary: "View a contact and the lists it belongs to (4.2)",
  params: z.object({ data: contactRefParam }),
  async run({ env, panel, schema, db }, { data }) {
    const key = keyOrThrow(schema, data);
    const contact = await contactOfPanel(db, panel, key);
    const lists = await listsOfContact(db, panel.id, contact.id);
    return { contact: contact.attributes, lists: lists.map((l) => ({ id: l.id, listname: l.name })) };
  },
});

const updateExistingContact = defineOperation({
  summary: "Update attributes of an existing contact (4.3)",
  params: z.object({ data: jsonObjectParam }),
  async run({ env, exec, panel, schema, now, db }, { data }) {
    const outcome = await updateContactAttributes({ env, db, panelId: panel.id, schema, unknown: panel.unknownAttributes, now, waitUntil: (work) => exec.waitUntil(work) }, data);
    if (outcome.kind === "refused") throw fromProblems(outcome.problems);
    if (outcome.kind === "missing") {
      throw notFound(`No contact with ${panel.primaryKey} "${outcome.key}"; use activity=add to create it`, [
        { field: `data.${panel.primaryKey}`, message: "no such contact" },
      ]);
    }
    return { contact: outcome.contact.attributes, ...schemaMembers(outcome) };
  },
});

const removeContactFromLists = defineOperation({
  summary: "Remove a contact from one or several lists (4.4); the contact itself stays",
  params: z.object({ data: contactRefParam, listid: listIdsParam }),
  async run({ env, exec, panel, schema, now, db }, { data, listid }) {
    const key = keyOrThrow(schema, data);
    await requireLists(db, panel, listid);
    const contact = await contactOfPanel(db, panel, key);
    const removed = await removeFromLists(db, panel.id, contact.id, listid);
    exec.waitUntil(
      segmentsAfterContactWrite(env, panel.id, contact.id, ["lists"], now).then((entered) => journeysAfterContactWrite(env, panel.id, contact, entered, now)),
    );
    return { removed_from: removed };
  },
});

export const contactOperations: OperationTable = {
  add: addContact,
  view: viewContact,
  update: updateExistingContact,
  delete: removeContactFromLists,
};
