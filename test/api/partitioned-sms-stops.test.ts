import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelShards } from "../../src/services/access/partitions";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { recordSmsReply } from "../../src/services/journeys/sms";
import { getPanel } from "../../src/store/panels";
import type { ShardDb } from "../../src/store/shards";
import { eventually } from "../support/activity";
import { outbox, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, call, panelData, TEST_SHARD } from "../support/helpers";
import { keyOn, pagePost, readersPanel, shard0, textsOn } from "../support/partitions";

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
