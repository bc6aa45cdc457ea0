import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { contactBucket, evenPartitions, type Partition } from "../../src/domain/partitions";
import type { ShardDb } from "../../src/store/shards";
import { TrackingSigner } from "../../src/services/channels/email/tracking";
import { setPartitionMap } from "../../src/services/access/partitions";
import { eventually } from "./activity";
import { admin, apiFor, createPanel, panelData, TEST_SHARD, type TestPanel } from "./helpers";

// A panel split over two partitions (decision 0038 step 3): buckets 0–2047 on SHARD_0 and
// 2048–4095 on SHARD_1, the home of createPanel's panels.

export const shard0 = env.SHARD_0 as unknown as ShardDb;
export const TWO: Partition[] = evenPartitions([0, TEST_SHARD]);

/** The `skip`-th key of the panel whose partition (in TWO) is on `shard`. */
export function keyOn(panelId: string, shard: number, skip = 0): string {
  const partition = TWO.find((p) => p.shard === shard)!;
  for (let i = 0, found = 0; ; i++) {
    const key = `user${i}@example.com`;
    const bucket = contactBucket(panelId, key);
    if (partition.firstBucket <= bucket && bucket <= partition.lastBucket && found++ === skip) return key;
  }
}

/**
 * What `db` holds as the tests compare it: the first column of each row `sql` answers (written
 * as "key what" text, its contact joined on the same shard), in the statement's order.
 */
export async function textsOn(db: ShardDb, sql: string, ...values: unknown[]): Promise<string[]> {
  return (await db.prepare(sql).bind(...values).raw<[string]>()).map((row) => row[0]);
}

/** The panel's contact keys on `db`, in order. */
export const keysOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT pk_value FROM contacts WHERE panel_id = ? ORDER BY pk_value", panelId);

/** The panel's journey instances on `db`, as "key: status" (in that text's order). */
export const instancesOn = (db: ShardDb, panelId: string) =>
  textsOn(db, "SELECT c.pk_value || ': ' || i.status FROM journey_instances i JOIN contacts c ON c.id = i.contact_id WHERE i.panel_id = ? ORDER BY 1", panelId);

/** The panel's memberships on `db`, as "key in list". */
export const membersOn = (db: ShardDb, panelId: string) =>
  textsOn(db, "SELECT c.pk_value || ' in ' || m.list_id FROM list_members m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? ORDER BY c.pk_value, m.list_id", panelId);

/**
 * The unsubscribe link of a sent message of campaign `campaignId` to the contact `key`, kept on
 * the contact's shard `db` (as a campaign's publish on that shard, or a split, decision 0047,
 * leaves it), the sent row written straight there so a test needs no send.
 */
export async function unsubscribeLinkOn(panel: TestPanel, db: ShardDb, campaignId: string, key: string): Promise<string> {
  const contact = (await db.prepare("SELECT id, bucket FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<{ id: number; bucket: number }>())!;
  await db
    .prepare("INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, address, sent_at, bucket) VALUES (?, ?, ?, 0, 'sent', ?, ?, ?)")
    .bind(campaignId, contact.id, panel.id, key, Date.now(), contact.bucket)
    .run();
  return `/t/u/${await new TrackingSigner(env.SECRETS_KEY).sign({ kind: "unsubscribe", panelId: panel.id, campaignId, contactId: contact.id })}`;
}

/** Until no event batch of the panel is pending on either shard of TWO. */
export async function settledOnBoth(panelId: string): Promise<void> {
  await eventually(async () => {
    let pending = 0;
    for (const db of [shard0, panelData]) pending += (await db.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ? AND state = 'pending'").bind(panelId).first<number>("n"))!;
    return pending === 0 ? true : undefined;
  });
}

/** An admin campaign "Wave" to the members of `list` (a draft unless `draft: false`, as the API makes it), with `extra` fields. */
export function listCampaign(panel: TestPanel, list: number, extra: Record<string, unknown> = {}) {
  return admin("POST", `/panels/${panel.id}/campaigns`, { name: "Wave", subject: "News", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", audience: { lists: [list] }, ...extra });
}

/** The panel's email stops on `db`, as "address reason". */
export const emailStopsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT address || ' ' || reason FROM email_suppressions WHERE panel_id = ? ORDER BY 1", panelId);

/** A form posted from a message's page in the recipient's browser (a navigation, as the unsubscribe page tells it from a one-click POST). */
export const pagePost = (fields: Array<[string, string]>): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-mode": "navigate", "sec-fetch-site": "same-origin" },
  body: new URLSearchParams(fields).toString(),
});

/**
 * A panel "Fern & Co" on TWO sending campaigns at once, a list "Readers", and `reader(skip,
 * attributes)`: the `skip`-th key on SHARD_0 added to the list with `attributes` beside its EMAIL;
 * its unsubscribe link and preference page (of a draft campaign's message kept on SHARD_0).
 */
export async function readersPanel() {
  const panel = await createPanel({ name: "Fern & Co" });
  expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const list = (await apiFor(panel)("lists", "add", { listname: "Readers" })).body.listid as number;
  const links = (await listCampaign(panel, list, { draft: true })).body.id as string;
  const reader = async (skip: number, attributes: Record<string, string> = {}) => {
    const key = keyOn(panel.id, 0, skip);
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key, ...attributes }, listid: String(list) })).status).toBe(200);
    const unsubscribe = await unsubscribeLinkOn(panel, shard0, links, key);
    return { key, unsubscribe, preferences: unsubscribe.replace("/t/u/", "/t/p/") };
  };
  return { panel, list, reader };
}

/** A panel (no map) with a list `listname` of the contacts `keys` (added through the API). */
export async function panelWithList(listname: string, keys: readonly string[] | ((panelId: string) => readonly string[])): Promise<{ panel: TestPanel; list: number }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname })).body.listid as number;
  for (const key of typeof keys === "function" ? keys(panel.id) : keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
  return { panel, list };
}
