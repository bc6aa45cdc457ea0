import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelShards, setPartitionMap } from "../../src/services/access/partitions";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { recordSmsReply, sendQueuedSmsBatch, type SmsSendEnv } from "../../src/services/journeys/sms";
import { insertMessageStatement } from "../../src/store/journeys/messages";
import { getPanel } from "../../src/store/panels";
import type { ShardDb } from "../../src/store/shards";
import { eventually } from "../support/activity";
import { outbox, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, call, createPanel, panelData, receiver, TEST_SHARD } from "../support/helpers";
import { keyOn, pagePost, readersPanel, shard0, textsOn, TWO } from "../support/partitions";

// Decision 0038: an SMS stop is kept by number and written on every shard of a partitioned panel
// (TWO: SHARD_0, and SHARD_1, the home), since a send and a segment's `reachable: sms` read their
// own shard's stops alone. Two contacts share a number here, one on each shard.

const SHARED = "+919800000301";

const sorted = (items: readonly string[]) => [...items].sort();

/** The panel's SMS stops on `db`, as "number reason". */
const smsStopsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT phone || ' ' || reason FROM sms_suppressions WHERE panel_id = ? ORDER BY 1", panelId);

describe("a panel on two partitions: a contact's own SMS stop reaches every shard", () => {
  it("an SMS unsubscribe from the preference page of a contact on SHARD_0, or an operator's of a contact on the home, stops the number on both shards, so the other contact of the number shows it; subscribing again lifts it on both", async () => {
    const { panel, reader } = await readersPanel();
    const viaPage = await reader(0, { MOBILE: SHARED });
    const [homeTwin, viaOperator] = [keyOn(panel.id, TEST_SHARD), keyOn(panel.id, TEST_SHARD, 1)];
    for (const [EMAIL, MOBILE] of [[homeTwin, "+91 98000 00301"], [viaOperator, "+919800000302"]]) {
      expect((await apiFor(panel)("contact", "add", { data: { EMAIL, MOBILE } })).status).toBe(200);
    }
    const smsOf = async (key: string) => (await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/preferences`)).body.preferences?.sms;
    expect(await smsOf(homeTwin)).toBe("subscribed");

    // The page's form without the sms box: turned off.
    expect(await (await call(viaPage.preferences, pagePost([["action", "preferences"], ["shown", "sms"]]))).text()).not.toMatch(/name="sms" value="subscribed" checked/);
    const changed = await admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(viaOperator)}/preferences`, { sms: "unsubscribed" });
    expect([changed.status, changed.body.preferences?.sms]).toEqual([200, "unsubscribed"]);

    const both = ["919800000301 stop", "919800000302 stop"];
    expect(await smsStopsOn(shard0, panel.id)).toEqual(both);
    expect(await smsStopsOn(panelData, panel.id)).toEqual(both);
    // The home's contact of the number is stopped too: its sends read the home's stops.
    expect(await smsOf(homeTwin)).toBe("unsubscribed");

    const back = await call(viaPage.preferences, pagePost([["action", "preferences"], ["shown", "sms"], ["sms", "subscribed"]]));
    expect(await back.text()).toMatch(/name="sms" value="subscribed" checked/);
    expect(await smsStopsOn(shard0, panel.id)).toEqual(["919800000302 stop"]);
    expect(await smsStopsOn(panelData, panel.id)).toEqual(["919800000302 stop"]);
    expect(await smsOf(homeTwin)).toBe("subscribed");
  });
});

describe("a panel on two partitions: a segment's reachable-by-SMS condition leaves stopped numbers out", () => {
  it("a contact whose number is stopped (a STOP reply, an operator), however its MOBILE is spelt, is in neither the count, the saved segment nor a campaign's audience of it, on either shard", async () => {
    const { panel, list, reader } = await readersPanel();
    // On SHARD_0: one stopped by its STOP reply, one free; on the home: one an operator stopped, one free, one without a number.
    await reader(0, { MOBILE: "+91 (98000) 00401" });
    const free0 = (await reader(1, { MOBILE: "919800000402" })).key;
    const [stopped, freeHome, noNumber] = [0, 1, 2].map((skip) => keyOn(panel.id, TEST_SHARD, skip)) as [string, string, string];
    for (const [EMAIL, MOBILE] of [[stopped, "+91-98000-00403"], [freeHome, " +919800000404 "], [noNumber, ""]] as const) {
      expect((await apiFor(panel)("contact", "add", { data: { EMAIL, ...(MOBILE ? { MOBILE } : {}) }, listid: String(list) })).status).toBe(200);
    }
    const record = await getPanel(env.DB, panel.id);
    expect(await recordSmsReply(panelShards(env, record!, panelData), panel.id, "+919800000401", "STOP", Date.now())).toBe("stop");
    expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/919800000403`)).status).toBe(200);

    const match = { all: [{ reachable: "sms" }] };
    const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match });
    expect([counted.status, counted.body.count]).toEqual([200, 2]);
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Textable", match });
    expect([saved.status, saved.body.count]).toEqual([201, 2]);
    const listed = await eventually(async () => {
      const page = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}/contacts?limit=100`);
      return page.status === 200 && page.body.contacts.length === 2 ? (page.body.contacts as Array<{ EMAIL: string }>).map((c) => c.EMAIL) : undefined;
    });
    expect(sorted(listed)).toEqual(sorted([free0, freeHome]));

    // A campaign to the segment: each shard publishes only its contacts whose number is not stopped.
    const campaign = await admin("POST", `/panels/${panel.id}/campaigns`, { name: "Texters", subject: "News", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", audience: { segments: [saved.body.id] } });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    await publishDueBroadcasts(env, Date.now());
    expect(await waitForCampaign(panel, campaign.body.id)).toMatchObject({ status: "sent", counters: { recipients: 2, sent: 2, skipped: 0 } });
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(sorted([free0, freeHome]));
  });
});

describe("a panel on two partitions: a provider's refusal of an opted-out number reaches every shard", () => {
  it("a send to a contact on SHARD_0 that Twilio refuses (21610) stops the number on both shards, so the home's contact of the number is not texted", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const twilio = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: `AC${"1".repeat(32)}`, auth_token: "tok-refusal", from: "+15005550006" });
    expect(twilio.status).toBe(200);
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 400, body: '{"code":21610,"message":"Attempt to send to unsubscribed recipient"}' }]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as SmsSendEnv;

    const [onShard0, onHome] = [keyOn(panel.id, 0), keyOn(panel.id, TEST_SHARD)];
    for (const EMAIL of [onShard0, onHome]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL, MOBILE: SHARED } })).status).toBe(200);
    const refused = await waitingSmsOn(shard0, panel.id, onShard0);
    const twin = await waitingSmsOn(panelData, panel.id, onHome);

    const send = (msgid: string, shard: number) => sendQueuedSmsBatch(testEnv, [{ nudge: { kind: "sms", panelId: panel.id, msgids: [msgid], shard }, attempt: 1 }]);
    expect(await send(refused, 0)).toEqual([null]);
    expect(await statusOn(shard0, refused)).toBe("failed");
    for (const db of [shard0, panelData]) expect(await smsStopsOn(db, panel.id)).toEqual(["919800000301 provider"]);

    expect(await send(twin, TEST_SHARD)).toEqual([null]);
    expect(await statusOn(panelData, twin)).toBe("skipped");
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });
});

/** A journey SMS waiting for its nudge to the contact `key` (on `db`), written as a step writes it. */
async function waitingSmsOn(db: ShardDb, panelId: string, key: string): Promise<string> {
  const contact = (await db.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panelId, key).first<{ id: number }>())!;
  const msgid = `jin_${crypto.randomUUID().slice(0, 12)}.sms`;
  const message = { msgid, panelId, journeyId: "jrn_test", instanceId: msgid.split(".")[0]!, stepId: "sms", channel: "sms" as const, contactId: contact.id, recipient: SHARED };
  await insertMessageStatement(db, { ...message, content: { body: "Hello", to: "919800000301" }, status: "sending", createdAt: Date.now() }).run();
  return msgid;
}

const statusOn = (db: ShardDb, msgid: string) => db.prepare("SELECT status FROM journey_messages WHERE msgid = ?").bind(msgid).first<string>("status");
