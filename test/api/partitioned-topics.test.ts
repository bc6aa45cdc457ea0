import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactBucket } from "../../src/domain/partitions";
import { setPartitionMap } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, panelData, type TestPanel } from "../support/helpers";
import { listCampaign, shard0, textsOn, TWO, unsubscribeLinkOn } from "../support/partitions";

// Decision 0041 extended to topics (issue 45's subscription groups): a panel's topics are
// mirrored on each shard holding one of its partitions, so that a contact there leaves them on
// its own shard, and its export names them.

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A key of this file's own on `shard`. */
function keyOn(panelId: string, shard: number, name: string): string {
  const partition = TWO.find((p) => p.shard === shard)!;
  for (let i = 0; ; i++) {
    const key = `${name}${i}@topics.example`;
    const bucket = contactBucket(panelId, key);
    if (partition.firstBucket <= bucket && bucket <= partition.lastBucket) return key;
  }
}

const topicsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT id || ' ' || name FROM topics WHERE panel_id = ? ORDER BY name", panelId);

const optOutsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT c.pk_value || ' left ' || o.topic_id FROM topic_optouts o JOIN contacts c ON c.id = o.contact_id WHERE o.panel_id = ? ORDER BY o.topic_id", panelId);

const topicConsentOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT kind || ' ' || topic || ' ' || via FROM consent_records WHERE panel_id = ? AND kind LIKE 'topic_%' ORDER BY id", panelId);

const topic = async (panel: TestPanel, name: string) => {
  const made = await admin("POST", `/panels/${panel.id}/topics`, { name });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body as { id: string; name: string };
};

async function exportedTopics(panel: TestPanel, key: string) {
  const answer = await call(`/admin/v1/panels/${panel.id}/contacts/${encodeURIComponent(key)}/export`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { topics_left: Array<{ topic_id: string; name: string }> }).topics_left.map((t) => `${t.topic_id} ${t.name}`);
}

describe("a panel on two partitions: topics", () => {
  it("mirrors topics made before and after the map; a contact on the non-home shard leaves them there, through both pages, and its export names them", async () => {
    const panel = await createPanel({ name: "Fern & Co" });
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    const early = await topic(panel, "Early news");
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    expect(await topicsOn(shard0, panel.id)).toEqual([`${early.id} Early news`]);
    const late = await topic(panel, "Late news");
    expect(await topicsOn(shard0, panel.id)).toEqual([`${early.id} Early news`, `${late.id} Late news`]);
    expect(await topicsOn(shard0, panel.id)).toEqual(await topicsOn(panelData, panel.id));

    const campaign = await listCampaign(panel, list, { topic: late.id });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    const key = keyOn(panel.id, 0, "reader");
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    const unsubscribe = await unsubscribeLinkOn(panel, shard0, campaign.body.id, key);
    const preferences = unsubscribe.replace("/t/u/", "/t/p/");

    const page = await (await call(preferences)).text();
    expect(page).toContain(`name="topic" value="${early.id}" checked`);
    expect(page).toContain(`name="topic" value="${late.id}" checked`);

    // The preference page: leaving "Early news", keeping "Late news".
    const body = `action=preferences&topic=${late.id}&shown_topic=${early.id}&shown_topic=${late.id}`;
    const saved = await call(preferences, { method: "POST", headers: FORM, body });
    expect(saved.status).toBe(200);
    const after = await saved.text();
    expect(after).toContain(`name="topic" value="${early.id}">`);
    expect(after).toContain(`name="topic" value="${late.id}" checked`);
    expect(await optOutsOn(shard0, panel.id)).toEqual([`${key} left ${early.id}`]);
    expect(await topicConsentOn(shard0, panel.id)).toEqual([`topic_leave ${early.id} preference_page`]);
    expect([await optOutsOn(panelData, panel.id), await topicConsentOn(panelData, panel.id)]).toEqual([[], []]);
    expect(await exportedTopics(panel, key)).toEqual([`${early.id} Early news`]);

    // The campaign's unsubscribe page offers leaving its topic alone.
    const offered = await (await call(unsubscribe)).text();
    expect(offered).toContain("Late news");
    expect((await call(unsubscribe, { method: "POST", headers: FORM, body: "action=leave_topic" })).status).toBe(200);
    expect(await optOutsOn(shard0, panel.id)).toEqual([`${key} left ${early.id}`, `${key} left ${late.id}`].sort());
    expect(await optOutsOn(panelData, panel.id)).toEqual([]);
    expect((await exportedTopics(panel, key)).sort()).toEqual([`${early.id} Early news`, `${late.id} Late news`].sort());

    // Renaming reaches the mirror; deleting takes the row and the opt-outs there.
    expect((await admin("PUT", `/panels/${panel.id}/topics/${late.id}`, { name: "Later news" })).status).toBe(200);
    expect(await topicsOn(shard0, panel.id)).toEqual([`${early.id} Early news`, `${late.id} Later news`]);
    expect((await admin("DELETE", `/panels/${panel.id}/topics/${early.id}`)).status).toBe(200);
    expect(await topicsOn(shard0, panel.id)).toEqual([`${late.id} Later news`]);
    expect(await optOutsOn(shard0, panel.id)).toEqual([`${key} left ${late.id}`]);
    expect(await exportedTopics(panel, key)).toEqual([`${late.id} Later news`]);
    expect(await topicsOn(panelData, panel.id)).toEqual([`${late.id} Later news`]);
  });

  it("a map's mirror is dropped with the map; a panel without a map keeps its topics on its home only", async () => {
    const panel = await createPanel();
    const news = await topic(panel, "News");
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    expect(await topicsOn(shard0, panel.id)).toEqual([`${news.id} News`]);
    expect((await setPartitionMap(env, panel.id, [])).ok).toBe(true);
    expect(await topicsOn(shard0, panel.id)).toEqual([]);

    const other = await topic(panel, "Events");
    expect((await admin("PUT", `/panels/${panel.id}/topics/${news.id}`, { name: "Product news" })).status).toBe(200);
    expect((await admin("DELETE", `/panels/${panel.id}/topics/${other.id}`)).status).toBe(200);
    expect(await topicsOn(panelData, panel.id)).toEqual([`${news.id} Product news`]);
    expect(await topicsOn(shard0, panel.id)).toEqual([]);
  });
});
