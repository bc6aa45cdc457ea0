import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelShards } from "../../src/services/access/partitions";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { recordSmsReply } from "../../src/services/journeys/sms";
import { getPanel } from "../../src/store/panels";
import type { ShardDb } from "../../src/store/shards";
import { suppressAddress, type SuppressionReason } from "../../src/store/suppressions";
import { outbox, waitForCampaign } from "../support/broadcasts";
import { admin, call, panelData, type TestPanel } from "../support/helpers";
import { emailStopsOn, listCampaign, pagePost, readersPanel, shard0, textsOn } from "../support/partitions";

// Decision 0047 (Stops, 2026-11-30): a stop is keyed by address and may be held on more than one
// shard of a partitioned panel (a split's source keeps the stops it copies to the target; a STOP
// reply is written on every shard), and a campaign's part reads the home's stops beside its own.
// A contact's lift (preference page, unsubscribe page, an operator) so reaches every shard of
// the panel, by the same rule of who may lift which reason. Every contact here is on SHARD_0, the
// home being SHARD_1 (TWO).

/** The panel's SMS stops on `db`, as "number reason". */
const smsStopsOn = (db: ShardDb, panelId: string) => textsOn(db, "SELECT phone || ' ' || reason FROM sms_suppressions WHERE panel_id = ? ORDER BY 1", panelId);

const sorted = (items: readonly string[]) => [...items].sort();

/** Stops `address` on both shards with `reason`, as two messages' outcomes would (one kept on each shard). */
async function stopOnBoth(panelId: string, address: string, reason: SuppressionReason): Promise<void> {
  for (const db of [shard0, panelData]) await suppressAddress(db, panelId, address, reason, null, Date.now());
}

/** Sends a new campaign to the list now; the finished campaign. */
async function sentCampaign(panel: TestPanel, list: number) {
  const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
  const scheduled = await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true });
  expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
  await publishDueBroadcasts(env, Date.now());
  return waitForCampaign(panel, id);
}

describe("a panel on two partitions: a stop lifted on every shard", () => {
  it("a contact on the non-home shard, its address stopped on the home and on its own shard, subscribing again through the preference page, the unsubscribe page or an operator, gets the next campaign", async () => {
    const { panel, list, reader } = await readersPanel();
    const [viaPage, viaLink, viaOperator, stays] = [await reader(0), await reader(1), await reader(2), await reader(3)];
    for (const { key, unsubscribe } of [viaPage, viaLink, viaOperator, stays]) {
      // The contact's own unsubscribe, kept on its shard; and the stop a split from the home left there (copyStops: the source keeps its own).
      expect(await (await call(unsubscribe, pagePost([["List-Unsubscribe", "One-Click"]]))).text()).toContain("Done: ");
      await suppressAddress(panelData, panel.id, key, "unsubscribe", null, Date.now());
    }
    const everyone = sorted([viaPage, viaLink, viaOperator, stays].map((r) => `${r.key} unsubscribe`));
    expect(await emailStopsOn(shard0, panel.id)).toEqual(everyone);
    expect(await emailStopsOn(panelData, panel.id)).toEqual(everyone);

    const page = await call(viaPage.preferences, pagePost([["action", "preferences"], ["shown", "email"], ["email", "subscribed"]]));
    expect(await page.text()).toMatch(/name="email" value="subscribed" checked/);
    expect(await (await call(viaLink.unsubscribe, pagePost([["action", "resubscribe"]]))).text()).toContain("You are subscribed again");
    const operator = await admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(viaOperator.key)}/preferences`, { email: "subscribed" });
    expect([operator.status, operator.body.preferences?.email]).toEqual([200, "subscribed"]);

    // No stop of theirs is left on either shard; the fourth contact's stays on both.
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${stays.key} unsubscribe`]);
    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${stays.key} unsubscribe`]);
    // The next campaign reaches the three: SHARD_0 publishes the members it holds no stop for
    // (not the fourth), and its sends read the home's stops too, which skipped them before.
    expect(await sentCampaign(panel, list)).toMatchObject({ status: "sent", counters: { recipients: 3, sent: 3, skipped: 0 } });
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(sorted([viaPage.key, viaLink.key, viaOperator.key]));
  });

  it("an SMS STOP, recorded on every shard, taken back through the preference page is gone from every shard and from the stops list; an operator's stop replaces a contact's own and stays", async () => {
    const { panel, reader } = await readersPanel();
    const texter = await reader(0, { MOBILE: "+919800000101" });
    const held = await reader(1, { MOBILE: "+919800000102" });
    const record = await getPanel(env.DB, panel.id);
    // A STOP reply stops the number on each shard of the panel (services/journeys/sms.ts).
    expect(await recordSmsReply(panelShards(env, record!, panelData), panel.id, "+919800000101", "STOP", Date.now())).toBe("stop");
    // The other contact's own stop from its page, then an operator's stop of its number (each on every shard).
    await call(held.preferences, pagePost([["action", "preferences"], ["shown", "sms"]]));
    expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/919800000102`)).status).toBe(200);
    // The operator's stop replaces the contact's own where both are held.
    expect(await smsStopsOn(shard0, panel.id)).toEqual(["919800000101 stop", "919800000102 operator"]);
    expect(await smsStopsOn(panelData, panel.id)).toEqual(["919800000101 stop", "919800000102 operator"]);

    const resubscribe = async (preferences: string) => (await call(preferences, pagePost([["action", "preferences"], ["shown", "sms"], ["sms", "subscribed"]]))).text();
    expect(await resubscribe(texter.preferences)).toMatch(/name="sms" value="subscribed" checked/);
    expect(await resubscribe(held.preferences)).not.toMatch(/name="sms" value="subscribed" checked/);
    // The contact's own STOP is gone everywhere; the operator's stop is not the contact's to lift.
    expect(await smsStopsOn(shard0, panel.id)).toEqual(["919800000102 operator"]);
    expect(await smsStopsOn(panelData, panel.id)).toEqual(["919800000102 operator"]);
    const listed = await admin("GET", `/panels/${panel.id}/sms/suppressions`);
    expect(listed.body.suppressions.map((s: { phone: string; reason: string }) => `${s.phone} ${s.reason}`)).toEqual(["919800000102 operator"]);
  });

  it("lifts on every shard only what the one asking may lift: a recipient's complaint goes everywhere, an operator's lift is refused while the home holds a complaint, a hard bounce stays everywhere", async () => {
    const { panel, list, reader } = await readersPanel();
    const [complained, mixed, bounced] = [await reader(0), await reader(1), await reader(2)];
    await stopOnBoth(panel.id, complained.key, "complaint");
    await stopOnBoth(panel.id, bounced.key, "hard_bounce");
    // Its own unsubscribe on its shard; a complaint recorded on the home.
    expect(await (await call(mixed.unsubscribe, pagePost([["List-Unsubscribe", "One-Click"]]))).text()).toContain("Done: ");
    await suppressAddress(panelData, panel.id, mixed.key, "complaint", null, Date.now());

    // The recipient takes back their complaint.
    expect(await (await call(complained.preferences, pagePost([["action", "preferences"], ["shown", "email"], ["email", "subscribed"]]))).text()).toMatch(/name="email" value="subscribed" checked/);
    // An operator never lifts a complaint: the home's holds over the unsubscribe its shard keeps, so nothing is lifted.
    const operator = await admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(mixed.key)}/preferences`, { email: "subscribed" });
    expect(operator.status).toBe(409);
    // A hard bounce is refused: the page shows it held.
    expect(await (await call(bounced.preferences, pagePost([["action", "preferences"], ["shown", "email"], ["email", "subscribed"]]))).text()).not.toMatch(/name="email" value="subscribed"/);

    expect(await emailStopsOn(shard0, panel.id)).toEqual(sorted([`${bounced.key} hard_bounce`, `${mixed.key} unsubscribe`]));
    expect(await emailStopsOn(panelData, panel.id)).toEqual(sorted([`${bounced.key} hard_bounce`, `${mixed.key} complaint`]));
    // Only the recipient who asked is mailed: SHARD_0 does not publish the addresses it stops.
    expect(await sentCampaign(panel, list)).toMatchObject({ status: "sent", counters: { recipients: 1, sent: 1, skipped: 0 } });
    expect((await outbox(panel)).map((m) => m.to)).toEqual([complained.key]);
  });
});
