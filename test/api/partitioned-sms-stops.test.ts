import { describe, expect, it } from "vitest";
import type { ShardDb } from "../../src/store/shards";
import { admin, apiFor, call, panelData, TEST_SHARD } from "../support/helpers";
import { keyOn, pagePost, readersPanel, shard0, textsOn } from "../support/partitions";

// Decision 0038: an SMS stop is kept by number and written on every shard of a partitioned panel
// (TWO: SHARD_0, and SHARD_1, the home), since a send and a segment's `reachable: sms` read their
// own shard's stops alone. Two contacts share a number here, one on each shard.

const SHARED = "+919800000301";

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
