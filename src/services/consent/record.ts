import { findPanelHome } from "../access/shards";
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

/** Records one consent act now. */
export async function recordConsent(db: ShardDb, panelId: string, facts: ConsentFacts, keepsClient?: boolean): Promise<void> {
  const statements = await consentStatements(db, panelId, facts, keepsClient);
  if (statements.length) await db.batch(statements);
}

/** How an email link's unsubscribe or resubscribe came: the page's buttons, a mail client's one-click POST, the preference page. */
export type EmailLinkVia = "unsubscribe_page" | "one_click" | "preference_page";

/**
 * Records a contact's unsubscribe from email (or its way back, `subscribe`) through a message's
 * link, with the text the contact was shown; nothing when the panel is gone.
 */
export async function recordEmailLinkConsent(
  env: Env,
  panelId: string,
  contactId: number,
  kind: "subscribe" | "unsubscribe",
  via: EmailLinkVia,
  client: ConsentClient,
  text: string,
): Promise<void> {
  const home = await findPanelHome(env, panelId);
  if (!home) return;
  await recordConsent(home.db, panelId, { contactId, kind, listIds: [], via, client, text, at: Date.now() });
}
