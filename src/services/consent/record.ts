import { uuidV7 } from "../../lib/random";
import { insertConsentOfKeyStatements, insertConsentStatements, type ConsentKind, type ConsentRecord, type ConsentVia } from "../../store/consent";
import type { ShardDb } from "../../store/shards";
import { getFormSettings } from "../../store/signup-forms";

/** Where a consent came from: the visitor's address and browser, kept only where the panel's form settings say. */
export interface ConsentClient {
  ip: string | null;
  userAgent: string | null;
}

export interface ConsentFacts {
  contactId: number;
  kind: ConsentKind;
  /** One record per list (null: none named, e.g. an unsubscribe from everything). */
  listIds: readonly (number | null)[];
  via: ConsentVia;
  viaId?: string | null;
  topic?: string | null;
  client: ConsentClient;
  /** The exact text the contact was shown. */
  text: string;
  at: number;
}

/** The records of one consent act; `keepsClient` is the panel's form setting when the caller has it at hand. */
async function consentRecords(db: ShardDb, panelId: string, facts: Omit<ConsentFacts, "contactId">, keepsClient?: boolean): Promise<Omit<ConsentRecord, "contactId">[]> {
  // The panel's setting matters only when there is an address or browser to keep (not for an API call).
  const hasClient = facts.client.ip !== null || facts.client.userAgent !== null;
  const client = hasClient && (keepsClient ?? (await getFormSettings(db, panelId)).consentKeepsClient) ? facts.client : { ip: null, userAgent: null };
  return (facts.listIds.length ? facts.listIds : [null]).map((listId) => ({
    id: uuidV7(facts.at),
    kind: facts.kind,
    listId,
    topic: facts.topic ?? null,
    via: facts.via,
    viaId: facts.viaId ?? null,
    ip: client.ip,
    userAgent: client.userAgent?.slice(0, 1000) ?? null,
    text: facts.text,
    at: facts.at,
  }));
}

/** The records of one consent act, as statements for the caller's batch (the act and its proof are written together). */
export async function consentStatements(db: ShardDb, panelId: string, facts: ConsentFacts, keepsClient?: boolean): Promise<D1PreparedStatement[]> {
  const records = await consentRecords(db, panelId, facts, keepsClient);
  return insertConsentStatements(db, panelId, records.map((r) => ({ ...r, contactId: facts.contactId })));
}

/**
 * As consentStatements, for the contact of primary-key value `key`: statements for the batch
 * that creates or updates that contact, placed after its upsert. `skipGoneLists`: the lists
 * were not looked at first; records name only those still live (none live: one naming none).
 */
export async function consentStatementsOfKey(
  db: ShardDb,
  panelId: string,
  key: string,
  facts: Omit<ConsentFacts, "contactId">,
  options: { keepsClient?: boolean; skipGoneLists?: boolean } = {},
): Promise<D1PreparedStatement[]> {
  return insertConsentOfKeyStatements(db, panelId, key, await consentRecords(db, panelId, facts, options.keepsClient), options.skipGoneLists);
}

/** How an email link's unsubscribe or resubscribe came: the page's buttons, a mail client's one-click POST, the preference page. */
export type EmailLinkVia = "unsubscribe_page" | "one_click" | "preference_page";

/**
 * The records of a contact's unsubscribe from email (or its way back, `subscribe`, or the
 * channels changed on the preference page) through a message's link, each with the text the
 * contact was shown, as statements for the batch that makes the change.
 */
export async function emailLinkConsentStatements(
  db: ShardDb,
  panelId: string,
  contactId: number,
  via: EmailLinkVia,
  client: ConsentClient,
  acts: ReadonlyArray<{ kind: "subscribe" | "unsubscribe"; text: string }>,
): Promise<D1PreparedStatement[]> {
  if (!acts.length) return [];
  // The panel's setting read once for all the acts.
  const keepsClient = client.ip !== null || client.userAgent !== null ? (await getFormSettings(db, panelId)).consentKeepsClient : false;
  const at = Date.now();
  const statements = await Promise.all(acts.map(({ kind, text }) => consentStatements(db, panelId, { contactId, kind, listIds: [], via, client, text, at }, keepsClient)));
  return statements.flat();
}
