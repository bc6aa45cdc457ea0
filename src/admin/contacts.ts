import { contactAnswer, contactPageAnswer, contactSearchAnswer, erasureAnswer, preferencesAnswer } from "../domain/answers/contacts";
import { NEEDS } from "../domain/permissions";
import { canonicalAttributeName } from "../domain/attributes";
import { preferencesBody } from "../domain/preferences";
import { addContactBody, attributeSearchValue, CONTAINS_SCAN_ROWS, contactSearchQuery, editContactBody } from "../domain/panel-screens";
import { normalisePrimaryKey } from "../domain/primary-key";
import { fromProblems, invalidField, notFound, problemError, unwrap } from "../lib/http/errors";
import type { Problem } from "../lib/problems";
import { hasRenderedCopy } from "../services/broadcasts/message-copies";
import { contactAccessExport } from "../services/contacts/access-export";
import { eraseContact } from "../services/contacts/erase";
import { actorOf } from "../services/audit/record";
import { changeContactPreferences, contactPreferences } from "../services/channels/preferences";
import { addContact } from "../services/contacts/add";
import { updateContactAttributes } from "../services/contacts/update";
import { getErasure, type ContactErasure } from "../store/erasure";
import { loadAttributeSchema } from "../store/attributes";
import { contactHistory, type ContactHistory } from "../store/contact-page";
import { getContactByKey, listsOfContact, type Contact } from "../store/contacts";
import { searchPanelByAttribute, searchPanelByKey, searchPanelContaining } from "../services/contacts/search";
import type { Panel } from "../store/panels";
import type { ShardDb } from "../store/shards";
import { contactKeyFrom } from "../domain/contacts";
import { contactDb, contactOwningPlace, contactPlace, firstOnShards, panelShards, shownContactPage, type ContactPage } from "../services/access/partitions";
import { isoTime } from "../store/sql";
import { audited, auditorOf } from "./audit";
import { eventView } from "./events";
import { definePanelRoute } from "./route";
import { consentView } from "./consent";

function contactView(contact: Contact) {
  return { key: contact.key, attributes: contact.attributes, created_at: isoTime(contact.createdAt), updated_at: isoTime(contact.updatedAt) };
}

/** How many messages and journeys the contact page shows, newest first. */
const HISTORY_LIMIT = 50;

function historyView(history: ContactHistory) {
  return {
    messages: history.messages.map((m) => ({
      kind: m.kind,
      message_id: m.messageId,
      has_copy: hasRenderedCopy(m),
      source_id: m.sourceId,
      source_name: m.sourceName,
      step_id: m.stepId,
      channel: m.channel,
      subject: m.subject,
      status: m.status,
      error: m.error,
      at: isoTime(m.at),
      opens: m.opens,
      clicks: m.clicks,
      bounced: m.bounced,
      unsubscribed: m.unsubscribed,
    })),
    journeys: history.journeys.map((j) => ({
      journey_id: j.journeyId,
      name: j.name,
      journey_status: j.journeyStatus,
      status: j.status,
      entered_at: isoTime(j.enteredAt),
      ended_at: j.endedAt === null ? null : isoTime(j.endedAt),
    })),
    suppression: history.suppression && {
      address: history.suppression.address,
      reason: history.suppression.reason,
      campaign_id: history.suppression.campaignId,
      since: isoTime(history.suppression.at),
    },
  };
}

/** The admin API's sentence for a contact the panel does not have, named by the key as the path gives it. */
const noContactSentence = (panel: Panel, key: string) => `No contact with ${panel.primaryKey} "${key}" in this panel`;

async function requireContact(db: ShardDb, panel: Panel, key: string): Promise<Contact> {
  const contact = await getContactByKey(db, panel.id, key);
  if (!contact) throw notFound(noContactSentence(panel, key));
  return contact;
}

/**
 * The contact edit's refusals in the admin API's words: a missing contact (gone since the handler
 * found it) as every contact route says it, without fields; refused attributes as the service
 * words them. The envelope words the same refusals its own way (api/contacts.ts).
 */
function inPanelWords(problem: Problem, panel: Panel, pathKey: string): Problem {
  if (problem.kind === "not_found") return { kind: "not_found", fields: [], message: noContactSentence(panel, pathKey) };
  return problem;
}

const searchPanelContacts = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts",
  role: NEEDS.read,
  response: contactSearchAnswer,
  summary:
    `Contacts by primary-key value, exact or by prefix (an empty prefix pages through all), or by one other attribute's value (\`attribute\`; text also by prefix, without ASCII case), in key order; next_cursor pages on. \`match=contains\` finds text anywhere in the key or a text attribute, looking at ${CONTAINS_SCAN_ROWS} contacts a page at most: \`scan\` says how many it looked at and whether it stopped there`,
  query: contactSearchQuery,
  async handle({ env, db, query, panel }) {
    let q = query.q;
    const attribute = query.attribute === undefined || query.attribute === "" ? panel.primaryKey : canonicalAttributeName(query.attribute);
    const schema = q !== "" || attribute !== panel.primaryKey ? await loadAttributeSchema(db, panel.id) : new Map();
    if (query.match === "contains") {
      const type = schema.get(attribute);
      if (attribute !== panel.primaryKey && !type) throw invalidField("attribute", `no attribute named ${attribute} in this panel`);
      const value = attributeSearchValue(type ?? "string", q, "contains");
      if (!value.ok) throw invalidField(value.field, value.reason);
      const text = attribute === panel.primaryKey && panel.primaryKey === "EMAIL" ? q.toLowerCase() : q;
      const scan = await searchPanelContaining(env, panel, db, attribute === panel.primaryKey ? null : attribute, text, query.after, query.limit + 1, CONTAINS_SCAN_ROWS);
      const page = scan.contacts.slice(0, query.limit);
      const more = scan.contacts.length > query.limit;
      // Fewer matches than a page and a window that stopped short: the rest of the panel was not looked at.
      const bounded = !more && scan.lastScanned !== null;
      return {
        primary_key: panel.primaryKey,
        attribute,
        contacts: page.map(contactView),
        next_cursor: more ? page.at(-1)!.key : bounded ? scan.lastScanned : null,
        scan: { contacts: scan.scanned, bounded },
      };
    }
    let found: ContactPage<Contact>;
    if (attribute !== panel.primaryKey) {
      const type = schema.get(attribute);
      if (!type) throw invalidField("attribute", `no attribute named ${attribute} in this panel`);
      const value = attributeSearchValue(type, q, query.match);
      if (!value.ok) throw invalidField(value.field, value.reason);
      found = await searchPanelByAttribute(env, panel, db, attribute, value.value, query.match, query.after, query.limit + 1);
    } else {
      if (q !== "") {
        // The key as contacts store it (an email lower-cased, say), so the search finds what the API wrote.
        const normalised = normalisePrimaryKey(panel.primaryKey, schema.get(panel.primaryKey) ?? "string", q);
        if (normalised.ok) q = normalised.value;
        else if (query.match === "exact") throw invalidField("q", normalised.reason);
        // A prefix is rarely a whole valid key ("ada@" is no email); emails are stored lower-case.
        else if (panel.primaryKey === "EMAIL") q = q.toLowerCase();
      }
      found = await searchPanelByKey(env, panel, db, q, query.match, query.after, query.limit + 1);
    }
    const { shown: page, nextAfter } = shownContactPage(found, query.limit);
    return {
      primary_key: panel.primaryKey,
      attribute,
      contacts: page.map(contactView),
      next_cursor: nextAfter && nextAfter.key,
    };
  },
});

const readContact = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key",
  role: NEEDS.read,
  response: contactPageAnswer,
  summary: `One contact by primary-key value: attributes, lists, the ${HISTORY_LIMIT} newest messages sent to it with opens and clicks, the journeys it entered, and whether its EMAIL is suppressed (its events: /contacts/{key}/events)`,
  async handle({ env, db: home, path, panel }) {
    const db = contactDb(env, panel, home, path.key);
    const contact = await requireContact(db, panel, path.key);
    const address = typeof contact.attributes.EMAIL === "string" ? contact.attributes.EMAIL : null;
    const [lists, history] = await Promise.all([listsOfContact(db, panel.id, contact.id), contactHistory(db, panel.id, contact.id, address, HISTORY_LIMIT, home)]);
    return { ...contactView(contact), primary_key: panel.primaryKey, lists, ...historyView(history) };
  },
});

const editContact = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/contacts/:key",
  role: NEEDS.audience,
  response: contactAnswer,
  summary:
    "Change a contact's attributes under the rules of the API's update (4.3): each value checked against its type, null removes one; the primary key names the contact and is not changed here, and unknown attributes are refused",
  body: editContactBody,
  async handle({ env, db: home, exec, caller, path, body, panel }) {
    const place = contactPlace(env, panel, home, path.key);
    const db = place.db;
    const contact = await requireContact(db, panel, path.key);
    const keyProblems = Object.keys(body.attributes)
      .filter((name) => canonicalAttributeName(name) === panel.primaryKey)
      .map((name) => ({ field: `attributes.${name}`, message: "is the primary key: it names the contact and cannot be changed here" }));
    if (keyProblems.length) throw fromProblems(keyProblems);
    const schema = { primaryKey: panel.primaryKey, attributes: await loadAttributeSchema(home, panel.id) };
    const outcome = await updateContactAttributes(
      { env, db, configElsewhere: place.configElsewhere, panelId: panel.id, schema, unknown: "reject", now: Date.now(), waitUntil: (work) => exec.waitUntil(work) },
      { ...body.attributes, [panel.primaryKey]: contact.key },
      "attributes",
      { by: auditorOf(caller), before: contact.attributes, log: home },
    );
    if (!outcome.ok) throw problemError(inPanelWords(outcome.problem, panel, path.key));
    return contactView(outcome.value.contact);
  },
});

const addPanelContact = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/contacts",
  role: NEEDS.audience,
  response: contactAnswer,
  status: 201,
  summary:
    "Add a contact from the panel's form under the rules of the API's add (4.1): the primary key and each value checked against its type, unknown attributes refused, each refusal named by `attributes.NAME`; a contact with that key already is a conflict (409), not merged; `lists` joins lists of the panel",
  body: addContactBody,
  async handle({ env, caller, db: home, exec, body, panel }) {
    const schema = { primaryKey: panel.primaryKey, attributes: await loadAttributeSchema(home, panel.id) };
    const key = panel.partitions.length ? contactKeyFrom(schema, body.attributes) : null;
    const place = contactPlace(env, panel, home, key?.ok ? key.key : null);
    const outcome = await addContact(
      { env, db: place.db, configElsewhere: place.configElsewhere, panelId: panel.id, schema, unknown: "reject", now: Date.now(), waitUntil: (work) => exec.waitUntil(work) },
      body.attributes,
      body.lists,
      { fieldPrefix: "attributes", onlyNew: true },
    );
    // The service names lists by the envelope's `listid`; the form sends `lists`.
    if (!outcome.ok && outcome.problem.kind === "not_found") throw problemError({ ...outcome.problem, fields: outcome.problem.fields.map((f) => ({ ...f, field: "lists" })) });
    const { contact } = unwrap(outcome);
    // A hand add, as a hand edit: in the log where the contact's hand edits are (an erasure blanks its detail).
    await audited({ db: home, caller, panel }, "contact.added", String(contact.id), { key: contact.key, lists: body.lists ?? [] });
    return contactView(contact);
  },
});

function erasureView(erasure: ContactErasure) {
  return {
    erasure_id: erasure.id,
    // One under way (`pending`) is never read here (getErasure), and still to finish anyway.
    state: erasure.state === "done" ? ("done" as const) : ("archive" as const),
    archive_parts_rewritten: erasure.partsDone,
    created_at: isoTime(erasure.createdAt),
    finished_at: erasure.finishedAt === null ? null : isoTime(erasure.finishedAt),
  };
}

const eraseOneContact = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/contacts/:key",
  role: NEEDS.erasure,
  response: erasureAnswer,
  summary:
    "Erase a contact (right to erasure): the contact, its list and segment memberships, events, messages and their outbox copies, journey instances, journey simulations' samples of it and waiting webhook events; suppressions stay under a hash of the address. Archived days are rewritten without its events in the background: state `archive` until done (GET /erasures/{id})",
  async handle({ env, caller, path, panel, db }) {
    const place = contactOwningPlace(env, panel, db, path.key);
    // The erasure writes its audit entry itself, as its record's requester: a retry after a request
    // that died once the contact was gone finds nothing, and the cron may be the one to complete it.
    const by = { requester: actorOf(auditorOf(caller)), finisher: "request" as const };
    const erasure = await eraseContact(env, { db: place.db, home: db, others: place.elsewhere }, panel.id, path.key, Date.now(), by);
    if (!erasure) throw notFound(noContactSentence(panel, path.key));
    return erasureView(erasure);
  },
});

const readErasure = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/erasures/:erasure",
  role: NEEDS.erasure,
  response: erasureAnswer,
  summary: "An erasure's progress: `archive` while archived days are rewritten, then `done`",
  async handle({ env, path, panel, db }) {
    // An erasure is recorded on its contact's partition shard (decision 0038): the home first, then the mirrors.
    const erasure = (await firstOnShards(panelShards(env, panel, db), (shard) => getErasure(shard, panel.id, path.erasure)))?.found;
    if (!erasure) throw notFound(`No erasure with id "${path.erasure}" in this panel`);
    return erasureView(erasure);
  },
});

const exportOneContact = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key/export",
  role: NEEDS.erasure,
  raw: { contentType: "application/json", description: "Everything held about the contact, as a JSON file (attachment)" },
  summary:
    "Everything held about a contact as one JSON document (right of access): attributes, lists, segments, every message and journey, suppressions, and all its events, archived days included",
  async handle({ env, path, panel, db }) {
    const held = await contactAccessExport(env, contactDb(env, panel, db, path.key), panel.id, path.key, db, (uniqueid) => contactDb(env, panel, db, uniqueid));
    if (!held) throw notFound(noContactSentence(panel, path.key));
    const document = {
      exported_at: isoTime(Date.now()),
      panel_id: panel.id,
      primary_key: panel.primaryKey,
      contact: contactView(held.contact),
      lists: held.lists,
      segments: held.segments.map((s) => ({ id: s.id, name: s.name, entered_at: isoTime(s.enteredAt) })),
      ...historyView(held.history),
      sms_suppression: held.smsSuppression,
      events: held.events.map((e) => eventView(e, panel.timezone)),
      anonymous_ids: held.anonymous.map((a) => ({ uniqueid: a.uniqueid, events: a.events.map((e) => eventView(e, panel.timezone)) })),
      consent: held.consent.map(consentView),
      unconfirmed_signups: held.unconfirmed.map((s) => ({
        form_id: s.formId,
        lists: s.listIds,
        values: s.attributes,
        consent_text: s.consentText,
        ip: s.ip,
        user_agent: s.userAgent,
        submitted_at: isoTime(s.createdAt),
        expires_at: isoTime(s.expiresAt),
      })),
      topics_left: held.topicsLeft.map((t) => ({ topic_id: t.topicId, name: t.name, left_at: isoTime(t.leftAt) })),
    };
    return new Response(JSON.stringify(document, null, 2), {
      headers: { "content-type": "application/json; charset=utf-8", "content-disposition": `attachment; filename="contact-${held.contact.id}.json"` },
    });
  },
});

const readPreferences = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key/preferences",
  role: NEEDS.read,
  response: preferencesAnswer,
  summary:
    "A contact's subscription per channel: email, sms and push, each subscribed, unsubscribed (its own choice), complained (email marked as spam; only the contact may subscribe again), bounced or stopped (held by the service) or unreachable (no address or number)",
  async handle({ env, path, panel, db: home }) {
    const db = contactDb(env, panel, home, path.key);
    return { preferences: await contactPreferences(db, home, panel.id, await requireContact(db, panel, path.key)) };
  },
});

const changePreferences = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/contacts/:key/preferences",
  role: NEEDS.audience,
  response: preferencesAnswer,
  summary:
    "Change a contact's subscriptions (email, sms, push: subscribed or unsubscribed), as its preference page does; an unreachable channel is refused (400), a bounced or stopped one, or subscribing a complained email, is a conflict (409), and nothing changes",
  body: preferencesBody,
  async handle({ env, caller, path, body, panel, db: home }) {
    const db = contactDb(env, panel, home, path.key);
    const contact = await requireContact(db, panel, path.key);
    return { preferences: unwrap(await changeContactPreferences(db, panelShards(env, panel, home), panel.id, contact, body, Date.now(), "operator", { by: auditorOf(caller), log: home })) };
  },
});

export const contactRoutes = [searchPanelContacts, addPanelContact, readContact, editContact, eraseOneContact, readErasure, exportOneContact, readPreferences, changePreferences];
