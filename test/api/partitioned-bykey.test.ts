import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { erasedIdentifier } from "../../src/domain/erasure";
import { contactBucket } from "../../src/domain/partitions";
import { setPartitionMap } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { placesNaming } from "../support/erasure";
import { admin, ADMIN_TOKEN, apiFor, BASE, call, createPanel, fetchWith, keptMail, panelData, type TestPanel } from "../support/helpers";
import { keysOn, membersOn, shard0, textsOn, TWO } from "../support/partitions";

// Decision 0038 step 3: the by-key paths routed last (erasure, access export, signup forms) on a
// panel split over two partitions, buckets 0–2047 on SHARD_0 and 2048–4095 on SHARD_1 (its home).

/** A key of this file's own (so that searching every table for it finds no other test's rows) on `shard`. */
function keyOn(panelId: string, shard: number, name: string): string {
  const partition = TWO.find((p) => p.shard === shard)!;
  for (let i = 0; ; i++) {
    const key = `${name}${i}@bykey.example`;
    const bucket = contactBucket(panelId, key);
    if (partition.firstBucket <= bucket && bucket <= partition.lastBucket) return key;
  }
}

const consentOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT c.pk_value || ' ' || r.kind || ' ' || r.list_id FROM consent_records r JOIN contacts c ON c.id = r.contact_id WHERE r.panel_id = ? ORDER BY r.id", panelId);

async function splitPanel(): Promise<{ panel: TestPanel; list: number }> {
  const panel = await createPanel();
  const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  return { panel, list };
}

let ipCount = 0;
const post = (path: string, body: string, mailer?: ReturnType<typeof keptMail>) =>
  fetchWith(mailer ? { MAILER: mailer.MAILER } : {}, new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": `198.51.100.${++ipCount}` }, body, redirect: "manual" }));

describe("a panel on two partitions: erasure and access export by key", () => {
  it("erases a contact on the non-home shard, leaving nothing of it on any shard; its erasure is readable", async () => {
    const { panel, list } = await splitPanel();
    const api = apiFor(panel);
    const gone = keyOn(panel.id, 0, "erase");
    const mobile = "919811122233";
    const kept = keyOn(panel.id, 1, "keep");
    expect((await api("contact", "add", { data: { EMAIL: gone, MOBILE: mobile }, listid: String(list) })).status).toBe(200);
    expect((await api("contact", "add", { data: { EMAIL: kept }, listid: String(list) })).status).toBe(200);
    expect(await keysOn(shard0, panel.id)).toEqual([gone]);
    expect(await consentOn(shard0, panel.id)).toEqual([`${gone} subscribe ${list}`]);

    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(gone)}`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body).toMatchObject({ state: "done" });
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body).toMatchObject({ erasure_id: erased.body.erasure_id, state: "done" });

    const search = await placesNaming((text) => text.toLowerCase().includes(gone) || text.replace(/\D/g, "").includes(mobile));
    expect(search.found).toEqual([]);
    // The other contact, on the home, is untouched; the list counts the one left.
    expect(await keysOn(panelData, panel.id)).toEqual([kept]);
    expect(await membersOn(panelData, panel.id)).toEqual([`${kept} in ${list}`]);
    expect(((await api("lists", "getall")).body.lists as Array<{ count: number }>)[0]!.count).toBe(1);
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(gone)}`)).status).toBe(404);
  });

  it("exports a contact on the non-home shard with its lists and consent", async () => {
    const { panel, list } = await splitPanel();
    const key = keyOn(panel.id, 0, "export");
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    const answer = await call(`/admin/v1/panels/${panel.id}/contacts/${encodeURIComponent(key)}/export`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(answer.status).toBe(200);
    const document = (await answer.json()) as { contact: { key: string }; lists: Array<{ id: number }>; consent: Array<{ kind: string }> };
    expect(document.contact).toMatchObject({ key });
    expect(document.lists.map((l) => l.id)).toEqual([list]);
    expect(document.consent.map((c) => c.kind)).toEqual(["subscribe"]);
  });
});

describe("a panel on two partitions: signup forms", () => {
  it("a single opt-in submission for a key on the non-home shard lands there, and nowhere else", async () => {
    const { panel, list } = await splitPanel();
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [list], double_opt_in: false })).body;
    const key = keyOn(panel.id, 0, "single");
    expect((await post(`/f/${form.id}`, `EMAIL=${encodeURIComponent(key)}`)).status).toBe(200);
    expect(await keysOn(shard0, panel.id)).toEqual([key]);
    expect(await membersOn(shard0, panel.id)).toEqual([`${key} in ${list}`]);
    expect(await consentOn(shard0, panel.id)).toEqual([`${key} subscribe ${list}`]);
    expect([await keysOn(panelData, panel.id), await consentOn(panelData, panel.id)]).toEqual([[], []]);
    expect(((await apiFor(panel)("lists", "getall")).body.lists as Array<{ count: number }>)[0]!.count).toBe(1);
  });

  it("double opt-in: the submission waits on the key's shard and the link joins the list there", async () => {
    const { panel, list } = await splitPanel();
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [list] })).body;
    const key = keyOn(panel.id, 0, "double");
    const mailer = keptMail();
    expect((await post(`/f/${form.id}`, `EMAIL=${encodeURIComponent(key)}`, mailer)).status).toBe(200);
    expect(await keysOn(shard0, panel.id)).toEqual([key]);
    expect(await membersOn(shard0, panel.id)).toEqual([]);
    const pending = (db: ShardDb) => db.prepare("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?").bind(panel.id).first<number>("n");
    expect([await pending(shard0), await pending(panelData)]).toEqual([1, 0]);

    const path = new URL(/https?:\/\/\S+\/f\/frm_\w+\/confirm\/[\w-]+/.exec(mailer.mails[0]!.text)![0]).pathname;
    expect((await post(path, "")).status).toBe(200);
    expect(await membersOn(shard0, panel.id)).toEqual([`${key} in ${list}`]);
    expect(await consentOn(shard0, panel.id)).toEqual([`${key} subscribe ${list}`, `${key} confirm ${list}`]);
    expect([await pending(shard0), await keysOn(panelData, panel.id)]).toEqual([0, []]);
    // The link works once.
    expect((await post(path, "")).status).toBe(404);
  });

  it("a waiting signup on the non-home shard forgets its client with the settings, and goes with its form", async () => {
    const { panel, list } = await splitPanel();
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [list] })).body;
    expect((await post(`/f/${form.id}`, `EMAIL=${encodeURIComponent(keyOn(panel.id, 0, "waiting"))}`, keptMail())).status).toBe(200);
    const clients = () => shard0.prepare("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ? AND ip IS NOT NULL").bind(panel.id).first<number>("n");
    expect(await clients()).toBe(1);
    expect((await admin("PUT", `/panels/${panel.id}/form-settings`, { consent_keeps_client: false })).status).toBe(200);
    expect(await clients()).toBe(0);
    expect((await admin("DELETE", `/panels/${panel.id}/forms/${form.id}`)).status).toBeLessThan(300);
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?").bind(panel.id).first<number>("n")).toBe(0);
  });

  it("the limits are counted on the key's shard, naming no address or IP; the erasure leaves nothing naming either", async () => {
    const { panel, list } = await splitPanel();
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [list], double_opt_in: false })).body;
    const key = keyOn(panel.id, 0, "limited");
    const ip = "192.0.2.145";
    const submit = (email: string) =>
      fetchWith({}, new Request(`${BASE}/f/${form.id}.json`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip }, body: `EMAIL=${encodeURIComponent(email)}` }));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await submit(key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    // The address's count and the IP's (the IP's per shard: its panel is none) on shard 0, none on the home.
    const counts = (db: ShardDb) =>
      db.prepare("SELECT panel_id, subject, attempts FROM form_attempts WHERE panel_id IN (?, '') AND subject IN (?, ?) ORDER BY panel_id").bind(panel.id, keyHash, ipHash).all().then((r) => r.results);
    const [keyHash, ipHash] = [await erasedIdentifier(panel.id, key), await erasedIdentifier("", ip)];
    expect(await counts(shard0)).toEqual([
      { panel_id: "", subject: ipHash, attempts: 5 },
      { panel_id: panel.id, subject: keyHash, attempts: 5 },
    ]);
    expect(await counts(panelData)).toEqual([]);

    // The access export is the contact's, as ever: the counts name no contact.
    const exported = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/export`);
    expect(exported.status).toBe(200);
    expect(exported.body.contact).toMatchObject({ key });
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}`)).status).toBe(200);
    expect((await placesNaming((text) => text.toLowerCase().includes(key) || text.includes(ip))).found).toEqual([]);

    // A key on the home is counted there, the IP's count there starting at one.
    expect((await submit(keyOn(panel.id, 1, "limited"))).status).toBe(200);
    expect(await counts(panelData)).toEqual([{ panel_id: "", subject: ipHash, attempts: 1 }]);
  });

  it("a panel without a map keeps its signups on its home", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [list] })).body;
    const key = keyOn(panel.id, 0, "whole");
    const mailer = keptMail();
    expect((await post(`/f/${form.id}`, `EMAIL=${encodeURIComponent(key)}`, mailer)).status).toBe(200);
    const path = new URL(/https?:\/\/\S+\/f\/frm_\w+\/confirm\/[\w-]+/.exec(mailer.mails[0]!.text)![0]).pathname;
    expect((await post(path, "")).status).toBe(200);
    expect(await membersOn(panelData, panel.id)).toEqual([`${key} in ${list}`]);
    expect(await keysOn(shard0, panel.id)).toEqual([]);
  });
});
