import { consentStatementsOfKey } from "../services/consent/record";
import type { ShardDb } from "../store/shards";
import { contactKeyFrom, type KeyedSchema } from "../domain/contacts";
import { forgetCallers } from "../services/access/api-keys";
import { invalidField, notFound, problemError } from "../lib/http/errors";
import type { Problem, Result } from "../lib/problems";
import { z } from "../lib/z";
import { parseCallerJson } from "../lib/json";
import type { Params } from "../lib/http/body";
import { getContactByKey, listsOfContact } from "../store/contacts";
import { addContact } from "../services/contacts/add";
import { removeContactFromLists } from "../services/contacts/remove";
import { updateContactAttributes } from "../services/contacts/update";
import type { Panel } from "../store/panels";
import { contactPlace, type ContactPlace } from "../services/access/partitions";
import { defineOperation, type OperationTable } from "./operation";
import { absentWhenEmpty, contactRefParam, jsonObjectParam, listIdsParam } from "../domain/fields";

/**
 * What an add or update answers besides the contact: the unknown attributes it left out or
 * created (CONTRACT 8). Created ones change the panel's schema, which cached callers hold.
 */
function withSchemaMembers(prepared: { ignored: string[]; created: string[] }, members: Record<string, unknown>): Record<string, unknown> {
  if (prepared.created.length) forgetCallers();
  // Set on the answer's own object: the spreads of two more made three objects on every add.
  if (prepared.ignored.length) members.ignored = prepared.ignored;
  if (prepared.created.length) members.created = prepared.created;
  return members;
}

function keyOrThrow(schema: KeyedSchema, data: unknown): string {
  const key = contactKeyFrom(schema, data);
  if (!key.ok) throw invalidField("data", key.message);
  return key.key;
}

function contactNotFound(panel: Panel, key: string) {
  return notFound(`No contact with ${panel.primaryKey} "${key}"`, [{ field: "data", message: "no such contact" }]);
}

/**
 * The contact writes' refusals in the envelope's words (CONTRACT 4.3, 4.4): a missing contact is
 * named by `data` (on an update by the key's field, and the message says how to create it), in
 * the service's sentence, which names the contact by its stored key. Refused attributes and
 * missing lists are answered as the service words them. The one place the envelope words them;
 * the panel's edit words a missing contact its own way (admin/contacts.ts).
 */
function inEnvelopeWords(problem: Problem, asked: { activity: "add" | "update" | "delete"; primaryKey: string }): Problem {
  if (problem.kind !== "not_found" || problem.fields[0]?.field !== "contact") return problem;
  if (asked.activity === "update") {
    return { kind: "not_found", fields: [{ field: `data.${asked.primaryKey}`, message: "no such contact" }], message: `${problem.message}; use activity=add to create it` };
  }
  return { kind: "not_found", fields: [{ field: "data", message: "no such contact" }], message: problem.message };
}

/** The service's value, or its refusal thrown in the envelope's words. */
function unwrapContact<T>(result: Result<T>, panel: Panel, activity: "add" | "update" | "delete"): T {
  if (result.ok) return result.value;
  throw problemError(inEnvelopeWords(result.problem, { activity, primaryKey: panel.primaryKey }));
}

async function contactOfPanel(db: ShardDb, panel: Panel, key: string) {
  const contact = await getContactByKey(db, panel.id, key);
  if (!contact) throw contactNotFound(panel, key);
  return contact;
}

/** What the contact use cases are given: the panel's shard and schema, and the call's waitUntil for their reactions. */
/** An API call is a server's, not the contact's browser: no address or user agent of the contact to keep. */
const NO_CLIENT = { ip: null, userAgent: null };

function writeContext(env: Env, exec: ExecutionContext, place: ContactPlace, panel: Panel, now: number, schema: KeyedSchema) {
  return { env, db: place.db, configElsewhere: place.configElsewhere, panelId: panel.id, now, schema, unknown: panel.unknownAttributes, waitUntil: (work: Promise<unknown>) => exec.waitUntil(work) };
}

/**
 * The partition a call by contact key goes to (decision 0038 step 3): the key's, read from
 * `data` only when the panel has a map, so a panel without one takes its home as before, with
 * no other work. A key that does not read leaves the call on the home, where the service
 * refuses it.
 */
function placeOf(env: Env, panel: Panel, home: ShardDb, schema: KeyedSchema, data: unknown, key?: string): ContactPlace {
  if (panel.partitions.length === 0) return { db: home, configElsewhere: [] };
  if (key !== undefined) return contactPlace(env, panel, home, key);
  const read = contactKeyFrom(schema, data);
  return contactPlace(env, panel, home, read.ok ? read.key : null);
}

/**
 * The common add read without zod: `data` the JSON text of an object with members, and no
 * `listid`; what the schema outputs for it. Anything else is the schema's to read, refusals
 * included. zod's object, union and pipe around the same JSON.parse were about 2% of a contact
 * add's isolate samples (`PROFILE=api npm run bench:profile`); test/api/contact-add-params.test.ts
 * runs both on many inputs.
 */
function fastAddParams(params: Params): { data: Record<string, unknown> } | undefined {
  const { data, listid } = params;
  if (listid !== undefined || typeof data !== "string") return undefined;
  const json = parseCallerJson(data);
  if (!json.ok) return undefined;
  const value = json.value;
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.keys(value).length === 0) return undefined;
  return { data: value as Record<string, unknown> };
}

const addOperation = defineOperation({
  summary: "Add a contact, or merge the given attributes into the existing one (4.1); listid names one list or several",
  params: z.object({ data: jsonObjectParam, listid: absentWhenEmpty(listIdsParam) }),
  fastParams: fastAddParams,
  async run({ env, exec, panel, schema, now, db, user }, { data, listid }) {
    // The proof of how the contact came onto the lists (issue 45), an API key's call, written in
    // the contact's batch (both or neither). A key that does not read is refused by addContact.
    const key = listid?.length ? contactKeyFrom(schema, data) : null;
    const place = placeOf(env, panel, db, schema, data, key?.ok ? key.key : undefined);
    const consent = key?.ok ? await consentStatementsOfKey(place.db, panel.id, key.key, { kind: "subscribe", listIds: listid!, via: "api_key", viaId: user.id, client: NO_CLIENT, text: "", at: now }) : [];
    const outcome = unwrapContact(await addContact(writeContext(env, exec, place, panel, now, schema), data, listid, { alongside: consent }), panel, "add");
    return withSchemaMembers(outcome, { contact: outcome.contact.attributes });
  },
});

const viewContact = defineOperation({
  summary: "View a contact and the lists it belongs to (4.2)",
  params: z.object({ data: contactRefParam }),
  async run({ env, panel, schema, db }, { data }) {
    const key = keyOrThrow(schema, data);
    const { db: partition } = placeOf(env, panel, db, schema, data, key);
    const contact = await contactOfPanel(partition, panel, key);
    const lists = await listsOfContact(partition, panel.id, contact.id);
    return { contact: contact.attributes, lists: lists.map((l) => ({ id: l.id, listname: l.name })) };
  },
});

const updateExistingContact = defineOperation({
  summary: "Update attributes of an existing contact (4.3)",
  params: z.object({ data: jsonObjectParam }),
  async run({ env, exec, panel, schema, now, db }, { data }) {
    const outcome = unwrapContact(await updateContactAttributes(writeContext(env, exec, placeOf(env, panel, db, schema, data), panel, now, schema), data), panel, "update");
    return withSchemaMembers(outcome, { contact: outcome.contact.attributes });
  },
});

const deleteOperation = defineOperation({
  summary: "Remove a contact from one or several lists (4.4); the contact itself stays",
  params: z.object({ data: contactRefParam, listid: listIdsParam }),
  async run({ env, exec, panel, schema, now, db }, { data, listid }) {
    const key = keyOrThrow(schema, data);
    const outcome = unwrapContact(await removeContactFromLists(writeContext(env, exec, placeOf(env, panel, db, schema, data, key), panel, now, schema), key, listid), panel, "delete");
    return { removed_from: outcome.removedFrom };
  },
});

export const contactOperations: OperationTable = {
  add: addOperation,
  view: viewContact,
  update: updateExistingContact,
  delete: deleteOperation,
};
