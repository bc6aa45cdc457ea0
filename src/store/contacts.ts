/**
 * The panel's contacts. This is the one module that writes rows of `contacts` (the API's add
 * and update, an import's chunks, the pipeline's new identities): scripts/check-writers.ts
 * fails the build if INSERT INTO contacts or UPDATE contacts appears anywhere else.
 */
import type { ShardDb } from "./shards";
import type { AttributeValue } from "../domain/attributes";
import type { JsonEach } from "./json-each";
import { contactBucket, type BucketRanges } from "../domain/partitions";
import { clearedMembershipsStatement } from "./lists";
import { inBucketRanges } from "./sql";

export interface Contact {
  id: number;
  key: string;
  attributes: Record<string, AttributeValue>;
  createdAt: number;
  updatedAt: number;
}

interface ContactRow {
  id: number;
  pk_value: string;
  attrs: string;
  created_at: number;
  updated_at: number;
}

const CONTACT_COLUMNS = "id, pk_value, attrs, created_at, updated_at";

function contactFromRow(row: ContactRow): Contact {
  return {
    id: row.id,
    key: row.pk_value,
    attributes: JSON.parse(row.attrs) as Record<string, AttributeValue>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Attribute changes: a value sets the attribute, null removes it (JSON merge patch, RFC 7396). */
export type AttributeChanges = Record<string, AttributeValue | null>;

/** What a contact write does besides the contact itself, in the same batch. */
export interface ContactWriteExtras {
  /** Lists the contact becomes a member of (they are known to exist in the panel). */
  listIds?: readonly number[];
  /** Attributes created as strings with this write (the panel's `unknown_attributes` is `create`). */
  newAttributes?: readonly string[];
  /** Statements that belong with this write (its proof of consent), run after it in its batch. */
  alongside?: readonly D1PreparedStatement[];
  /** Statements run first in its batch (a form's rate limits): one that fails writes nothing of it. */
  first?: readonly D1PreparedStatement[];
}

/** Creates the string attributes `names`; with `existingKey`, only if that contact exists. */
function newAttributeStatements(db: ShardDb, panelId: string, names: readonly string[], now: number, existingKey?: string): D1PreparedStatement[] {
  if (names.length === 0) return [];
  return [
    db
      .prepare(
        `INSERT INTO attributes (panel_id, name, type, created_at) SELECT ?1, n.value, 'string', ?2 FROM json_each(?3) n
         WHERE ?4 IS NULL OR EXISTS (SELECT 1 FROM contacts WHERE panel_id = ?1 AND pk_value = ?4)
         ON CONFLICT (panel_id, name) DO NOTHING`,
      )
      .bind(panelId, now, JSON.stringify(names), existingKey ?? null),
  ];
}

/**
 * Creates the contact or merges the changes into it (CONTRACT 2.2 `add`), with the lists it
 * joins and the attributes it creates, all in one batch so nothing is half-written.
 */
export async function upsertContact(
  db: ShardDb,
  panelId: string,
  key: string,
  changes: AttributeChanges,
  now: number,
  extras: ContactWriteExtras = {},
): Promise<Contact & { joinedList: boolean }> {
  const listIds = extras.listIds ?? [];
  const upsert = db
    .prepare(
      `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at, bucket)
       VALUES (?1, ?2, json_patch('{}', ?3), ?4, ?4, ?5)
       ON CONFLICT (panel_id, pk_value) DO UPDATE SET attrs = json_patch(contacts.attrs, ?3), updated_at = ?4
       RETURNING ${CONTACT_COLUMNS}`,
    )
    .bind(panelId, key, JSON.stringify(changes), now, contactBucket(panelId, key));
  // The common add (no list, no new attribute, nothing alongside) is the one statement, run
  // without a batch or the arrays around one: this runs on every contact add.
  if (!listIds.length && !extras.first?.length && !extras.newAttributes?.length && !extras.alongside?.length) {
    return withJoinedList((await upsert.first<ContactRow>())!, false);
  }
  const statements = [...(extras.first ?? []), ...newAttributeStatements(db, panelId, extras.newAttributes ?? [], now), upsert];
  const upsertAt = statements.length - 1;
  if (listIds.length) {
    statements.push(
      clearedMembershipsStatement(db, panelId, JSON.stringify(listIds), JSON.stringify([key])),
      db
        .prepare(
          `INSERT OR IGNORE INTO list_members (list_id, contact_id, panel_id, added_at, bucket)
           SELECT l.id, c.id, c.panel_id, ?4, c.bucket FROM contacts c JOIN lists l ON l.panel_id = c.panel_id
           WHERE c.panel_id = ?1 AND c.pk_value = ?2 AND l.id IN (SELECT value FROM json_each(?3)) AND l.deleted_at IS NULL RETURNING list_id`,
        )
        .bind(panelId, key, JSON.stringify(listIds), now),
    );
  }
  const membershipAt = statements.length - 1;
  statements.push(...(extras.alongside ?? []));
  const results = await db.batch<ContactRow>(statements);
  // joinedList: some membership is new (list triggers of journeys fire on it).
  return withJoinedList(results[upsertAt]!.results[0]!, listIds.length > 0 && results[membershipAt]!.results.length > 0);
}

/** The contact of `row` with its flag, set on contactFromRow's object (a spread made a second one). */
function withJoinedList(row: ContactRow, joinedList: boolean): Contact & { joinedList: boolean } {
  const contact = contactFromRow(row) as Contact & { joinedList: boolean };
  contact.joinedList = joinedList;
  return contact;
}

/** Merges changes into an existing contact (creating `newAttributes` with it); null when there is no such contact. */
export async function updateContact(
  db: ShardDb,
  panelId: string,
  key: string,
  changes: AttributeChanges,
  now: number,
  newAttributes: readonly string[] = [],
): Promise<Contact | null> {
  const update = db
    .prepare(
      `UPDATE contacts SET attrs = json_patch(attrs, ?), updated_at = ?
       WHERE panel_id = ? AND pk_value = ? RETURNING ${CONTACT_COLUMNS}`,
    )
    .bind(JSON.stringify(changes), now, panelId, key);
  if (newAttributes.length === 0) {
    const row = await update.first<ContactRow>();
    return row ? contactFromRow(row) : null;
  }
  // The attributes are created only when the contact exists: a 404 writes nothing.
  const results = await db.batch<ContactRow>([...newAttributeStatements(db, panelId, newAttributes, now, key), update]);
  const row = results.at(-1)!.results[0];
  return row ? contactFromRow(row) : null;
}

export async function getContactByKey(db: ShardDb, panelId: string, key: string): Promise<Contact | null> {
  const row = await db
    .prepare(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE panel_id = ? AND pk_value = ?`)
    .bind(panelId, key)
    .first<ContactRow>();
  return row ? contactFromRow(row) : null;
}

/** Whether the panel has any contact on this shard (one probe of the key's index). */
export async function hasContacts(db: ShardDb, panelId: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM contacts WHERE panel_id = ? LIMIT 1").bind(panelId).first()) !== null;
}

export interface Membership {
  id: number;
  name: string;
}

export async function listsOfContact(db: ShardDb, panelId: string, contactId: number): Promise<Membership[]> {
  const { results } = await db
    .prepare(
      `SELECT l.id, l.name FROM list_members m JOIN lists l ON l.panel_id = m.panel_id AND l.id = m.list_id
       WHERE m.panel_id = ? AND m.contact_id = ? AND l.deleted_at IS NULL ORDER BY l.id`,
    )
    .bind(panelId, contactId)
    .all<Membership>();
  return results;
}

/** Removes the contact from those of `listIds` it belongs to; returns the lists it left. Any number of ids fit (one JSON parameter). */
export async function removeFromLists(db: ShardDb, panelId: string, contactId: number, listIds: readonly number[]): Promise<number[]> {
  const { results } = await db
    .prepare(
      `DELETE FROM list_members WHERE panel_id = ? AND contact_id = ? AND list_id IN (SELECT value FROM json_each(?))
       RETURNING list_id`,
    )
    .bind(panelId, contactId, JSON.stringify(listIds))
    .all<{ list_id: number }>();
  return results.map((r) => r.list_id).sort((a, b) => a - b);
}

/**
 * An import chunk's contacts (a JSON array of [key, attrs, bucket] under `each`), upserted in one
 * statement: rows go in array order, so a later row with the same key updates the contact the
 * earlier one wrote and wins, as it does across statements. `value -> 1` is the attributes'
 * JSON text as sent. One JSON parameter carries any number of rows within D1's 100 bound
 * parameters; the caller sizes the array to the statement limit.
 */
export function importedContactsStatement(db: ShardDb, each: JsonEach, panelId: string, now: number, rowsJson: string): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at, bucket)
  SELECT ?1, r.value ->> 0, r.value -> 1, ?2, ?2, r.value ->> 2 FROM ${each}(?3) AS r WHERE true
  ON CONFLICT (panel_id, pk_value) DO UPDATE SET attrs = json_patch(contacts.attrs, excluded.attrs), updated_at = excluded.updated_at`,
    )
    .bind(panelId, now, rowsJson);
}

/**
 * SQL that creates the contacts of the identities `key` (a SQL expression) read from `source`
 * (a FROM clause ending in a WHERE), holding only their primary key, in the bucket `bucket`
 * (a SQL expression: contactBucket of the key, computed when the event was recorded) and created at `at`; the
 * caller binds ?1 to the panel and ?4 to the primary key's name. Most identities have their
 * contact already: one probe of the key each, and no attributes made for a row the conflict
 * would drop (a repeat within the statement is dropped by the conflict). It answers the
 * contacts it created (identityContactsCreated), for the contact reactions: none, most passes.
 */
export function identityContactsSql(source: string, key: string, bucket: string, at: string): string {
  return `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at, bucket)
         SELECT ?1, ${key}, json_object(?4, ${key}), ${at}, ${at}, ${bucket}
         FROM ${source} AND ${key} IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.panel_id = ?1 AND c.pk_value = ${key})
         ON CONFLICT (panel_id, pk_value) DO NOTHING
         RETURNING id, pk_value, attrs`;
}

/** A contact as the journey engine reads it: no timestamps. */
export type KeyedContact = Pick<Contact, "id" | "key" | "attributes">;

function keyedContactFromRow(r: Pick<ContactRow, "id" | "pk_value" | "attrs">): KeyedContact {
  return { id: r.id, key: r.pk_value, attributes: JSON.parse(r.attrs) as Record<string, AttributeValue> };
}

/** The contacts an identityContactsSql statement created, from its result. */
export function identityContactsCreated(result: D1Result | undefined): KeyedContact[] {
  return ((result?.results ?? []) as Array<Pick<ContactRow, "id" | "pk_value" | "attrs">>).map(keyedContactFromRow);
}

export async function contactsByIds(db: ShardDb, panelId: string, ids: readonly number[]): Promise<Map<number, KeyedContact>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify([...new Set(ids)]))
    .all<Pick<ContactRow, "id" | "pk_value" | "attrs">>();
  return new Map(results.map((r) => [r.id, keyedContactFromRow(r)]));
}

/** A page of the panel's contacts after `afterId`, by id. */
export async function contactsPage(db: ShardDb, panelId: string, afterId: number, limit: number, down = false): Promise<KeyedContact[]> {
  // `down`: the `limit` highest ids up to `afterId` (included), highest first: a page walked down.
  const { results } = await db
    .prepare(`SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND ${down ? "id <= ? ORDER BY id DESC" : "id > ? ORDER BY id"} LIMIT ?`)
    .bind(panelId, afterId, limit)
    .all<Pick<ContactRow, "id" | "pk_value" | "attrs">>();
  return results.map(keyedContactFromRow);
}

/**
 * The panel's contacts last written from `from` (exclusive) to `to`, with that time, a page
 * after contact id `afterId` in id order: a journey simulation's candidates for a segment
 * filter of the journey's own (their attributes are as they are since that write).
 */
export async function contactsWrittenBetween(db: ShardDb, panelId: string, range: { from: number; to: number }, afterId: number, limit: number): Promise<Array<KeyedContact & { writtenAt: number }>> {
  const { results } = await db
    .prepare("SELECT id, pk_value, attrs, updated_at FROM contacts WHERE panel_id = ? AND id > ? AND updated_at > ? AND updated_at <= ? ORDER BY id LIMIT ?")
    .bind(panelId, afterId, range.from, range.to, limit)
    .all<Pick<ContactRow, "id" | "pk_value" | "attrs" | "updated_at">>();
  return results.map((r) => ({ ...keyedContactFromRow(r), writtenAt: r.updated_at }));
}

/**
 * Contacts whose primary-key value equals `q` or starts with it, in key order after `after`.
 * A range on the (panel_id, pk_value) unique index, never a scan: LIKE would not use it.
 */
export async function searchContacts(
  db: ShardDb,
  panelId: string,
  q: string,
  match: "prefix" | "exact",
  after: string | undefined,
  limit: number,
): Promise<Contact[]> {
  if (match === "exact") {
    const contact = after === undefined ? await getContactByKey(db, panelId, q) : null;
    return contact ? [contact] : [];
  }
  const from = after ?? q;
  const upper = q === "" ? null : q.slice(0, -1) + String.fromCodePoint(q.codePointAt(q.length - 1)! + 1);
  const { results } = await db
    .prepare(
      `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE panel_id = ? AND pk_value ${after === undefined ? ">=" : ">"} ?
       ${upper === null ? "" : "AND pk_value < ?"} ORDER BY pk_value LIMIT ?`,
    )
    .bind(...[panelId, from, ...(upper === null ? [] : [upper]), limit])
    .all<ContactRow>();
  return results.map(contactFromRow);
}

export interface BoundedSearch {
  contacts: Contact[];
  /** Rows of the window the scan looked at (at most the bound). */
  scanned: number;
  /** The window's last key: where a further scan starts when the bound was reached. */
  lastScanned: string | null;
}

/**
 * Contacts whose primary key (`name` null) or text attribute `name` contains `text` (without
 * ASCII case), in key order after `after`. No index serves a substring, so the scan is bounded:
 * it looks at the next `scanRows` contacts of the panel in key order (the primary-key index)
 * and no further, and says how many it looked at, so the caller can tell "none in the first N"
 * from "none". An attribute is first looked for in the contact's JSON text as stored, which costs
 * no JSON parse, and only the rows holding it anywhere are parsed (decision 0045).
 */
export async function searchContactsContaining(
  db: ShardDb,
  panelId: string,
  name: string | null,
  text: string,
  after: string | undefined,
  limit: number,
  scanRows: number,
  buckets: BucketRanges | null = null,
): Promise<BoundedSearch> {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  // The window: the next `scanRows` keys of the panel, walked in the primary-key index.
  const window = (columns: string) =>
    `SELECT ${columns} FROM contacts WHERE panel_id = ?1 ${after === undefined ? "" : "AND pk_value > ?3"} ORDER BY pk_value LIMIT ?2`;
  const windowBinds = [panelId, scanRows, ...(after === undefined ? [] : [after])];
  const like = `?${windowBinds.length + 1}`;
  let where = `pk_value LIKE ${like} ESCAPE '\\'`;
  if (name !== null) {
    where = `json_extract(attrs, ?${windowBinds.length + 2}) LIKE ${like} ESCAPE '\\'`;
    // A value is in the stored JSON as its text unless JSON escapes one of its characters (a quote,
    // a backslash, a control character): only then would the raw test miss it, so it is skipped.
    if (JSON.stringify(text) === `"${text}"`) where = `attrs LIKE ${like} ESCAPE '\\' AND ${where}`;
  }
  // With `buckets`, the window still looks at every row (its bound), but answers only those in
  // them: a split's source keeps copies of the moved contacts until cleaning (decision 0047).
  const matchBinds = [pattern, ...(name === null ? [] : [`$.${name}`]), limit];
  if (buckets) where = `${where} AND ${inBucketRanges("bucket", `?${windowBinds.length + matchBinds.length + 1}`)}`;
  const [found, extent] = await db.batch([
    db
      .prepare(`SELECT ${CONTACT_COLUMNS} FROM (${window(buckets ? `${CONTACT_COLUMNS}, bucket` : CONTACT_COLUMNS)}) WHERE ${where} ORDER BY pk_value LIMIT ?${windowBinds.length + (name === null ? 2 : 3)}`)
      .bind(...windowBinds, ...matchBinds, ...(buckets ? [JSON.stringify(buckets)] : [])),
    db.prepare(`SELECT count(*) AS scanned, max(pk_value) AS last FROM (${window("pk_value")})`).bind(...windowBinds),
  ]);
  const span = (extent!.results as Array<{ scanned: number; last: string | null }>)[0];
  return { contacts: (found!.results as ContactRow[]).map(contactFromRow), scanned: span?.scanned ?? 0, lastScanned: span?.last ?? null };
}

/**
 * Contacts whose attribute `name` holds `value` (text also by prefix; text compares without
 * ASCII case), in key order after `after`. Attributes live in the contact's JSON, which no index
 * covers: the read walks the panel's contacts in key order and stops once `limit` match.
 */
export async function searchContactsByAttribute(
  db: ShardDb,
  panelId: string,
  name: string,
  value: AttributeValue,
  match: "prefix" | "exact",
  after: string | undefined,
  limit: number,
): Promise<Contact[]> {
  const text = typeof value === "string";
  const pattern = text ? value.replace(/[\\%_]/g, (c) => `\\${c}`) + (match === "prefix" ? "%" : "") : null;
  const condition = text ? "json_extract(attrs, ?2) LIKE ?3 ESCAPE '\\'" : "json_extract(attrs, ?2) = ?3";
  const { results } = await db
    .prepare(
      `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE panel_id = ?1 AND ${condition}
       ${after === undefined ? "" : "AND pk_value > ?5"} ORDER BY pk_value LIMIT ?4`,
    )
    .bind(panelId, `$.${name}`, text ? pattern : typeof value === "boolean" ? Number(value) : value, limit, ...(after === undefined ? [] : [after]))
    .all<ContactRow>();
  return results.map(contactFromRow);
}

/**
 * Sets contacts' buckets from a JSON array of [id, bucket] (the back-fill of rows made before
 * buckets, decision 0038; a bucket is contactBucket of the contact's key, so setting it twice
 * changes nothing).
 */
export function contactBucketsStatement(db: ShardDb, idsAndBuckets: string): D1PreparedStatement {
  return db
    .prepare("UPDATE contacts SET bucket = v.value ->> 1 FROM json_each(?1) v WHERE contacts.id = v.value ->> 0 AND contacts.bucket IS NOT v.value ->> 1")
    .bind(idsAndBuckets);
}
