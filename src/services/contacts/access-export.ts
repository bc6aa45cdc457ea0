import { EMAIL_ATTRIBUTE } from "../../domain/email";
import { phoneDigits } from "../../domain/sms";
import { contactHistory, type ContactHistory } from "../../store/contact-page";
import { getContactByKey, listsOfContact, type Contact, type Membership } from "../../store/contacts";
import { uniqueidsOfContact } from "../../store/erasure";
import type { EventCursor, EventOwner } from "../../store/events";
import { segmentsOfContact, type ContactSegment } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { phoneSuppression, type PhoneSuppressionReason } from "../../store/sms";
import { eventHistoryPage, type HistoryEvent } from "../retention/history";
import { consentOfContact, type ConsentRecord } from "../../store/consent";
import { formSignupsOfContact, type FormSignup } from "../../store/signup-forms";
import { topicOptOutsOfContact } from "../../store/topics";

/** Everything the panel holds about one contact (right of access), for the admin route to render. */
export interface ContactAccessExport {
  contact: Contact;
  lists: Membership[];
  segments: ContactSegment[];
  history: ContactHistory;
  smsSuppression: PhoneSuppressionReason | null;
  /** Anonymous ids linked to the contact, with their events from before the link. */
  anonymous: Array<{ uniqueid: string; events: HistoryEvent[] }>;
  /** Its events, newest first, from the shard and the archive. */
  events: HistoryEvent[];
  /** Its consent records (subscribes, confirmations, unsubscribes), oldest first. */
  consent: ConsentRecord[];
  /** Signups of forms with double opt-in it has not confirmed yet: its unconfirmed memberships. */
  unconfirmed: FormSignup[];
  /** The panel's topics it left (issue 45, item 4), with when. */
  topicsLeft: Array<{ topicId: string; name: string; leftAt: number }>;
}

/** Messages, journeys and events: all of them, however many (the export is not a page). */
const EVERYTHING = 1_000_000;
const EVENTS_PER_READ = 1000;

async function allEvents(bucket: R2Bucket, db: ShardDb, panelId: string, owner: EventOwner): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let cursor: EventCursor | undefined;
  for (;;) {
    const page = await eventHistoryPage(bucket, db, panelId, owner, EVENTS_PER_READ, cursor);
    events.push(...page);
    const last = page.at(-1);
    if (page.length < EVENTS_PER_READ || !last) return events;
    cursor = { occurredAt: last.occurredAt, id: last.id };
  }
}

/**
 * A uniqueid's events newest first: those on the contact's shard `db` (joined, or recorded with
 * its identity) and, when its own partition is on another shard, the anonymous ones recorded
 * there before the link, which stay there unjoined (decision 0038 step 3).
 */
async function eventsOfUniqueid(bucket: R2Bucket, db: ShardDb, own: ShardDb, panelId: string, uniqueid: string): Promise<HistoryEvent[]> {
  if (own === db) return allEvents(bucket, db, panelId, { uniqueid });
  const [here, there] = await Promise.all([allEvents(bucket, db, panelId, { uniqueid }), allEvents(bucket, own, panelId, { uniqueid })]);
  return [...here, ...there].sort((a, b) => b.occurredAt - a.occurredAt || b.id - a.id);
}

/**
 * `home`: the panel's home when `db` is the key's partition on another shard (its campaigns are
 * there); `uniqueidDb`: the database of a uniqueid's own partition (contactDb), `db` by default.
 */
export async function contactAccessExport(
  env: Env,
  db: ShardDb,
  panelId: string,
  key: string,
  home?: ShardDb,
  uniqueidDb: (uniqueid: string) => ShardDb = () => db,
): Promise<ContactAccessExport | null> {
  const contact = await getContactByKey(db, panelId, key);
  if (!contact) return null;
  const address = typeof contact.attributes[EMAIL_ATTRIBUTE] === "string" ? (contact.attributes[EMAIL_ATTRIBUTE] as string) : null;
  const phone = phoneDigits(typeof contact.attributes.MOBILE === "string" ? contact.attributes.MOBILE : null);
  const [lists, segments, history, smsSuppression, uniqueids, events, consent, unconfirmed, topicsLeft] = await Promise.all([
    listsOfContact(db, panelId, contact.id),
    segmentsOfContact(db, panelId, contact.id),
    contactHistory(db, panelId, contact.id, address, EVERYTHING, home),
    phone ? phoneSuppression(db, panelId, phone) : null,
    uniqueidsOfContact(db, panelId, contact.id),
    allEvents(env.FILES, db, panelId, { contactId: contact.id }),
    consentOfContact(db, panelId, contact.id),
    formSignupsOfContact(db, panelId, contact.id),
    topicOptOutsOfContact(db, panelId, contact.id),
  ]);
  const anonymous = await Promise.all(uniqueids.map(async (uniqueid) => ({ uniqueid, events: await eventsOfUniqueid(env.FILES, db, uniqueidDb(uniqueid), panelId, uniqueid) })));
  return { contact, lists, segments, history, smsSuppression, anonymous, events, consent, unconfirmed, topicsLeft };
}
