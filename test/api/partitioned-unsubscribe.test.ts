import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import type { ShardDb } from "../../src/store/shards";
import { admin, apiFor, call, createPanel, panelData, TEST_SHARD } from "../support/helpers";
import { keyOn, listCampaign, shard0, TWO, unsubscribeLinkOn } from "../support/partitions";

// The unsubscribe page's "unsubscribe from everything" and "subscribe again" (decision 0038
// step 3): the address's stop, its consent records and the message's unsubscribe mark are kept
// with the contact, on its partition's shard, as the preference page keeps them.

const PAGE = { "content-type": "application/x-www-form-urlencoded", "sec-fetch-mode": "navigate", "sec-fetch-site": "same-origin" };

/** What `db` holds of the panel's unsubscribes: suppressions, consent records and marked messages. */
async function stopsOn(db: ShardDb, panelId: string) {
  const rows = async (sql: string) => (await db.prepare(sql).bind(panelId).all<{ r: string }>()).results.map((r) => r.r);
  return {
    suppressions: await rows("SELECT address || ' ' || reason AS r FROM email_suppressions WHERE panel_id = ? ORDER BY address"),
    consent: await rows("SELECT kind || ' ' || via AS r FROM consent_records WHERE panel_id = ? AND kind IN ('subscribe', 'unsubscribe') AND via = 'unsubscribe_page' ORDER BY kind DESC"),
    unsubscribedMessages: await rows("SELECT address AS r FROM campaign_messages WHERE panel_id = ? AND unsubscribed_at IS NOT NULL ORDER BY address"),
  };
}

const NOTHING = { suppressions: [], consent: [], unsubscribedMessages: [] };

describe("a panel on two partitions: the unsubscribe page", () => {
  it("unsubscribes a contact from everything and subscribes it again on its own shard, for a contact on each shard", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const campaign = await listCampaign(panel, list);
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    const shards: Record<number, ShardDb> = { 0: shard0, [TEST_SHARD]: panelData };

    // SHARD_0 holds a partition only; SHARD_1 is the panel's home.
    for (const [on, other] of [
      [0, TEST_SHARD],
      [TEST_SHARD, 0],
    ] as const) {
      const key = keyOn(panel.id, on);
      expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
      const link = await unsubscribeLinkOn(panel, shards[on]!, campaign.body.id, key);

      expect(await (await call(link)).text()).toContain("Stop emails from");
      const left = await call(link, { method: "POST", headers: PAGE, body: "List-Unsubscribe=One-Click" });
      expect(left.status).toBe(200);
      expect(await left.text()).toContain(`Done: `);
      expect(await stopsOn(shards[on]!, panel.id)).toEqual({ suppressions: [`${key} unsubscribe`], consent: ["unsubscribe unsubscribe_page"], unsubscribedMessages: [key] });
      // The page reads the stop where it was written.
      expect(await (await call(link)).text()).toContain("This address was already unsubscribed");

      const back = await call(link, { method: "POST", headers: PAGE, body: "action=resubscribe" });
      expect(back.status).toBe(200);
      expect(await back.text()).toContain("You are subscribed again");
      expect(await stopsOn(shards[on]!, panel.id)).toEqual({ suppressions: [], consent: ["unsubscribe unsubscribe_page", "subscribe unsubscribe_page"], unsubscribedMessages: [key] });
      expect(await (await call(link)).text()).toContain("Stop emails from");

      // Nothing changed on the other shard.
      expect(await stopsOn(shards[other]!, panel.id)).toEqual(NOTHING);
      // Clear this contact's rows so that the second round starts from nothing on both shards.
      await shards[on]!.prepare("DELETE FROM consent_records WHERE panel_id = ?").bind(panel.id).run();
      await shards[on]!.prepare("UPDATE campaign_messages SET unsubscribed_at = NULL WHERE panel_id = ?").bind(panel.id).run();
      expect(await stopsOn(shards[on]!, panel.id)).toEqual(NOTHING);
    }
  });
});
