import type { ShardDb } from "../store/shards";
import { contactKeyFrom, type KeyedSchema } from "../domain/contacts";
import { forgetCallers } from "../services/access/api-keys";
import { fromProblems, invalidField, notFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { getContactByKey, listsOfContact } from "../store/contacts";
import { addContact } from "../services/contacts/add";
import { removeContactFromLists } from "../services/contacts/remove";
import { updateContactAttributes } from "../services/contacts/update";
import type { Panel } from "../store/panels";
import { defineOperation, type OperationTable } from "./operation";
import { contactRefParam, jsonObjectParam, listIdsParam } from "../domain/fields";

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

function listsNotFound(missing: readonly number[]) {
  return notFound(`listid: no list with id ${missing.join(", ")} in this panel`, [{ field: "listid", message: `no list with id ${missing.join(", ")}` }]);
}

function contactNotFound(panel: Panel, key: string) {
  return notFound(`No contact with ${panel.primaryKey} "${key}"`, [{ field: "data", message: "no such contact" }]);
}

async function contactOfPanel(db: ShardDb, panel: Panel, key: string) {
  const contact = await getContactByKey(db, panel.id, key);
  if (!contact) throw contactNotFound(panel, key);
  return contact;
}

/** What the contact use cases are given: the panel's shard and schema, and the call's waitUntil for their reactions. */
function writeContext(env: Env, exec: ExecutionContext, db: ShardDb, panel: Panel, now: number, schema: KeyedSchema) {
  return { env, db, panelId: panel.id, now, schema, unknown: panel.unknownAttributes, waitUntil: (work: Promise<unknown>) => exec.waitUntil(work) };
}

const addOperation = defineOperation({
  summary: "Add a contact, or merge the given attributes into the existing one (4.1); listid names one list or several",
  params: z.object({ data: jsonObjectParam, listid: listIdsParam.optional() }),
  async run({ env, exec, panel, schema, now, db }, { data, listid }) {
    const outcome = await addContact(writeContext(env, exec, db, panel, now, schema), data, listid);
    if (outcome.kind === "refused") throw fromProblems(outcome.problems);
    if (outcome.kind === "no-lists") throw listsNotFound(outcome.listIds);
    return { contact: outcome.contact.attributes, ...schemaMembers(outcome) };
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
    const outcome = await updateContactAttributes(writeContext(env, exec, db, panel, now, schema), data);
    if (outcome.kind === "refused") throw fromProblems(outcome.problems);
    if (outcome.kind === "missing") {
      throw notFound(`No contact with ${panel.primaryKey} "${outcome.key}"; use activity=add to create it`, [
        { field: `data.${panel.primaryKey}`, message: "no such contact" },
      ]);
    }
    return { contact: outcome.contact.attributes, ...schemaMembers(outcome) };
  },
});

const deleteOperation = defineOperation({
  summary: "Remove a contact from one or several lists (4.4); the contact itself stays",
  params: z.object({ data: contactRefParam, listid: listIdsParam }),
  async run({ env, exec, panel, schema, now, db }, { data, listid }) {
    const key = keyOrThrow(schema, data);
    const outcome = await removeContactFromLists(writeContext(env, exec, db, panel, now, schema), key, listid);
    if (outcome.kind === "no-lists") throw listsNotFound(outcome.listIds);
    if (outcome.kind === "missing") throw contactNotFound(panel, key);
    return { removed_from: outcome.removedFrom };
  },
});

export const contactOperations: OperationTable = {
  add: addOperation,
  view: viewContact,
  update: updateExistingContact,
  delete: deleteOperation,
};
