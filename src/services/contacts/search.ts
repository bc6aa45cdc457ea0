import type { AttributeValue } from "../../domain/attributes";
import { searchContacts, searchContactsByAttribute, searchContactsContaining, type BoundedSearch, type Contact } from "../../store/contacts";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { compareStoredText } from "../../store/sql";
import { mergedContactPage, panelOwningShards, partitionOfContact, type ContactPage } from "../access/partitions";

/**
 * The panel's contact search across its partitions (decision 0038 step 3), in key order as
 * each shard's primary-key index gives it: every shard's page past the cursor, merged. The
 * cursor stays the last key answered, which names one place in the whole panel's key order.
 */

type Placed = Pick<Panel, "id" | "shard" | "partitions">;

const byKey = (a: Contact, b: Contact) => compareStoredText(a.key, b.key);

/** Contacts by primary-key value: `exact` asks the key's partition alone, a prefix every shard. */
export async function searchPanelByKey(env: Env, panel: Placed, home: ShardDb, q: string, match: "prefix" | "exact", after: string | undefined, limit: number): Promise<ContactPage<Contact>> {
  const shards = match === "exact" && panel.partitions.length ? [{ db: partitionOfContact(env, panel, q).db, buckets: null }] : panelOwningShards(env, panel, home);
  return mergedContactPage(panel.id, shards, (db, last) => searchContacts(db, panel.id, q, match, last?.key ?? after, limit), byKey, limit);
}

/** Contacts by another attribute's value, from every shard. */
export async function searchPanelByAttribute(
  env: Env,
  panel: Placed,
  home: ShardDb,
  name: string,
  value: AttributeValue,
  match: "prefix" | "exact",
  after: string | undefined,
  limit: number,
): Promise<ContactPage<Contact>> {
  return mergedContactPage(panel.id, panelOwningShards(env, panel, home), (db, last) => searchContactsByAttribute(db, panel.id, name, value, match, last?.key ?? after, limit), byKey, limit);
}

/**
 * The bounded "contains" scan (decision 0045) over every shard: each looks at its share of
 * `scanRows` contacts (their keys spread evenly over the partitions, so the shares cover about
 * the key range one window would), and the answer holds only what lies within every shard's
 * window: up to the smallest last key of a shard whose window was full, where the next page
 * starts (`lastScanned`, null when every shard was read to its end). `scanned` is the rows all
 * shards looked at. Each shard answers only the contacts of the buckets its map gives it: a
 * split's source still holds copies of the moved ones until cleaning (decision 0047).
 */
export async function searchPanelContaining(
  env: Env,
  panel: Placed,
  home: ShardDb,
  name: string | null,
  text: string,
  after: string | undefined,
  limit: number,
  scanRows: number,
): Promise<BoundedSearch> {
  const shards = panelOwningShards(env, panel, home);
  const window = Math.ceil(scanRows / shards.length);
  const scans = await Promise.all(shards.map(({ db, buckets }) => searchContactsContaining(db, panel.id, name, text, after, limit, window, buckets)));
  let horizon: string | null = null;
  for (const scan of scans) {
    if (scan.scanned === window && scan.lastScanned !== null && (horizon === null || compareStoredText(scan.lastScanned, horizon) < 0)) horizon = scan.lastScanned;
  }
  const within = scans.flatMap((scan) => scan.contacts).filter((c) => horizon === null || compareStoredText(c.key, horizon) <= 0);
  return {
    contacts: scans.length === 1 ? within : within.sort(byKey).slice(0, limit),
    scanned: scans.reduce((sum, scan) => sum + scan.scanned, 0),
    lastScanned: horizon,
  };
}
