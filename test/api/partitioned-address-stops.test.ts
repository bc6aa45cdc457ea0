import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelOwningShards, setPartitionMap } from "../../src/services/access/partitions";
import { estimateAudience } from "../../src/services/broadcasts/audience-estimate";
import { recordBounce, recordComplaint } from "../../src/services/broadcasts/engagement";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { suppressSms } from "../../src/services/channels/sms/suppressions";
import { recordJourneyComplaint } from "../../src/services/journeys/engagement";
import type { ShardDb } from "../../src/store/shards";
import { suppressAddress, type SuppressionReason } from "../../src/store/suppressions";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { outbox, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, call, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { messagesOf, startJourney } from "../support/journeys";
import { emailStopsOn, keyOn, keysOn, listCampaign, pagePost, readersPanel, settledOnBoth, shard0, textsOn, TWO, unsubscribeLinkOn } from "../support/partitions";

// Decision 0038: email stops are kept by address. On a panel over two partitions (TWO: SHARD_0,
// and SHARD_1, the home) a contact's own unsubscribes and bounces are on its shard, stops by
// address written elsewhere (a report naming another message's address, a split's source, an
// erased address) on the home. Every send, the contact page, the preference and unsubscribe
// pages and an operator's preferences read the contact's shard and the home, the stricter
// holding; a lift reaches both. A segment's `reachable: email` reads its own shard alone: a stop
// the home records is written on the other shard too, and a new map copies the home's.

const sorted = (items: readonly string[]) => [...items].sort();

/** The panel's consent records on `db` of a recipient's choice on its message's pages, as "kind via". */
const consentOn = (db: ShardDb, panelId: string) =>
  textsOn(db, "SELECT kind || ' ' || via FROM consent_records WHERE panel_id = ? AND via IN ('preference_page', 'unsubscribe_page', 'one_click') ORDER BY 1", panelId);

/** readersPanel's `reader`, each reader's address stopped with `stop` on the home alone (none: no stop). */
const homeStopped = (panelId: string, reader: Awaited<ReturnType<typeof readersPanel>>["reader"]) => async (skip: number, stop?: SuppressionReason) => {
  const added = await reader(skip);
  if (stop) await suppressAddress(panelData, panelId, added.key, stop, null, Date.now());
  return added;
};

/** Sends a new campaign to the list now; the finished campaign. */
async function sentCampaign(panel: TestPanel, list: number) {
  const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
  const scheduled = await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true });
  expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
  await publishDueBroadcasts(env, Date.now());
  return { id, done: await waitForCampaign(panel, id) };
}

/** The provider's id of the campaign's message to `key`, kept on `db`. */
const providerIdOf = async (db: ShardDb, campaignId: string, key: string) =>
  (await db
    .prepare("SELECT m.provider_msg_id FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? AND c.pk_value = ?")
    .bind(campaignId, key)
    .first<string>("provider_msg_id"))!;

describe("a panel on two partitions: stops by address kept on the home", () => {
  it("a journey email to a contact on the non-home shard whose address the home holds a stop for is skipped, as a suppressed send is on one shard", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Your cart", html: "<p>Still there?</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    const [stopped, free] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1)];
    // A hard bounce of the address kept on the home only (a report naming it on a message of a contact there).
    await suppressAddress(panelData, panel.id, stopped, "hard_bounce", null, Date.now());
    expect(await emailStopsOn(shard0, panel.id)).toEqual([]);

    for (const identity of [stopped, free]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    const settled = await eventually(async () => {
      const messages = await messagesOf(panel, "email");
      return messages.length === 2 && messages.every((m) => m.status !== "sending" && m.status !== "queued") ? messages : undefined;
    });
    expect(sorted(settled.map((m) => `${m.recipient} ${m.status} ${m.error ?? ""}`.trim()))).toEqual(
      sorted([`${stopped} skipped the address is suppressed (hard bounce)`, `${free} sent`]),
    );
    expect((await outbox(panel)).map((m) => m.to)).toEqual([free]);
  });

  it("the contact page and the access export of a contact on the non-home shard show a stop the home holds, the stricter of its shard's and the home's", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [onlyHome, homeStricter, ownStricter, none] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 0, 2), keyOn(panel.id, 0, 3)];
    for (const EMAIL of [onlyHome, homeStricter, ownStricter, none]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL } })).status).toBe(200);
    await suppressAddress(panelData, panel.id, onlyHome, "complaint", null, Date.now());
    // A one-click unsubscribe of its own must not hide the complaint the home holds.
    await suppressAddress(panelData, panel.id, homeStricter, "complaint", null, Date.now());
    await suppressAddress(shard0, panel.id, homeStricter, "unsubscribe", null, Date.now());
    await suppressAddress(panelData, panel.id, ownStricter, "unsubscribe", null, Date.now());
    await suppressAddress(shard0, panel.id, ownStricter, "hard_bounce", null, Date.now());

    const shown = async (key: string) => {
      const page = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      const exported = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/export`);
      expect(exported.status).toBe(200);
      const reasonOf = (s: { address: string; reason: string } | null) => s && `${s.address} ${s.reason}`;
      return { page: reasonOf(page.body.suppression), exported: reasonOf(exported.body.suppression) };
    };
    expect(await shown(onlyHome)).toEqual({ page: `${onlyHome} complaint`, exported: `${onlyHome} complaint` });
    expect(await shown(homeStricter)).toEqual({ page: `${homeStricter} complaint`, exported: `${homeStricter} complaint` });
    expect(await shown(ownStricter)).toEqual({ page: `${ownStricter} hard_bounce`, exported: `${ownStricter} hard_bounce` });
    expect(await shown(none)).toEqual({ page: null, exported: null });
  });

  it("a one-click unsubscribe of an address the home holds a bounce for leaves it bounced: its pages say so, subscribing again is refused and records nothing, the next campaign skips it", async () => {
    const { panel, list, reader: added } = await readersPanel();
    const bounced = await homeStopped(panel.id, added)(0, "hard_bounce");
    const free = await added(1);
    // A mailbox provider's one-click POST answers 200 whatever the address's state (RFC 8058).
    expect((await call(bounced.unsubscribe, pagePost([["List-Unsubscribe", "One-Click"]]))).status).toBe(200);
    expect(await (await call(bounced.unsubscribe)).text()).toContain("No email goes to this address");

    const back = await (await call(bounced.unsubscribe, pagePost([["action", "resubscribe"]]))).text();
    expect(back).not.toContain("You are subscribed again");
    const page = await (await call(bounced.preferences, pagePost([["action", "preferences"], ["shown", "email"], ["email", "subscribed"]]))).text();
    expect(page).not.toMatch(/name="email" value="subscribed" checked/);
    expect(await consentOn(shard0, panel.id)).toEqual([]);
    const operator = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(bounced.key)}/preferences`);
    expect(operator.body.preferences?.email).toBe("bounced");

    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${bounced.key} hard_bounce`]);
    expect(await (await sentCampaign(panel, list)).done).toMatchObject({ status: "sent", counters: { recipients: 2, sent: 1, skipped: 1 } });
    expect((await outbox(panel)).map((m) => m.to)).toEqual([free.key]);
  });

  it("a bounce or complaint of a message on the non-home shard naming another address stops that address on every shard, so the next campaign skips its contact there", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const api = apiFor(panel);
    const [bouncer, complainer, journeyReader] = [0, 1, 2].map((skip) => keyOn(panel.id, 0, skip)) as [string, string, string];
    const homeKeys = [0, 1, 2, 3].map((skip) => keyOn(panel.id, TEST_SHARD, skip));
    const [named1, named2, named3, free] = homeKeys as [string, string, string, string];
    const first = (await api("lists", "add", { listname: "First" })).body.listid as number;
    const second = (await api("lists", "add", { listname: "Second" })).body.listid as number;
    for (const EMAIL of [bouncer, complainer]) expect((await api("contact", "add", { data: { EMAIL }, listid: String(first) })).status).toBe(200);
    for (const EMAIL of homeKeys) expect((await api("contact", "add", { data: { EMAIL }, listid: String(second) })).status).toBe(200);

    // A campaign to the two on SHARD_0: its bounce and its complaint each name an address of a contact on the home too.
    const { id } = await sentCampaign(panel, first);
    const now = Date.now();
    expect(await recordBounce(env, { providerMessageId: await providerIdOf(shard0, id, bouncer), permanent: true, addresses: [bouncer, named1.toUpperCase()], detail: {} }, now)).toBe(true);
    expect(await recordComplaint(env, { providerMessageId: await providerIdOf(shard0, id, complainer), addresses: [named2], detail: {} }, now)).toBe(true);

    // A journey email to a third contact on SHARD_0, whose complaint names another home contact.
    const cart = await defineActivity(panel, "add_to_cart");
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Your cart", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    expect((await postActivity(panel.clientId, { activityid: cart, identity: journeyReader })).status).toBe(200);
    await settledOnBoth(panel.id);
    const mail = await eventually(async () => (await messagesOf(panel, "email")).find((m) => m.status === "sent"));
    const providerId = (await shard0.prepare("SELECT provider_msg_id FROM journey_messages WHERE msgid = ?").bind(mail.msgid).first<string>("provider_msg_id"))!;
    expect(await recordJourneyComplaint(env, { providerMessageId: providerId, addresses: [journeyReader, named3], detail: {} }, Date.now())).toBe(true);

    // The messages' own addresses stay on their shard; the others are on both.
    expect(await emailStopsOn(shard0, panel.id)).toEqual(
      sorted([`${bouncer} hard_bounce`, `${named1} hard_bounce`, `${complainer} complaint`, `${named2} complaint`, `${journeyReader} complaint`, `${named3} complaint`]),
    );
    expect(await emailStopsOn(panelData, panel.id)).toEqual(sorted([`${named1} hard_bounce`, `${named2} complaint`, `${named3} complaint`]));

    // The next campaign, to the home's contacts, reaches only the one no report named.
    const { done } = await sentCampaign(panel, second);
    expect(done.status).toBe("sent");
    expect((await outbox(panel)).map((m) => m.to).filter((to) => homeKeys.includes(to))).toEqual([free]);
  });

  it("a bounce of a message on the home stops its address and another it names on the other shard too, so a segment's reachable-by-email condition leaves that contact out", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const api = apiFor(panel);
    const [reader, named, free] = [keyOn(panel.id, TEST_SHARD), keyOn(panel.id, 0), keyOn(panel.id, 0, 1)];
    const list = (await api("lists", "add", { listname: "Home" })).body.listid as number;
    expect((await api("contact", "add", { data: { EMAIL: reader }, listid: String(list) })).status).toBe(200);
    for (const EMAIL of [named, free]) expect((await api("contact", "add", { data: { EMAIL } })).status).toBe(200);

    const { id } = await sentCampaign(panel, list);
    expect(await recordBounce(env, { providerMessageId: await providerIdOf(panelData, id, reader), permanent: true, addresses: [reader, named], detail: {} }, Date.now())).toBe(true);

    expect(await emailStopsOn(panelData, panel.id)).toEqual(sorted([`${reader} hard_bounce`, `${named} hard_bounce`]));
    // The message's own address too: a stop the home holds is read by every shard's sends, so it is on every shard.
    expect(await emailStopsOn(shard0, panel.id)).toEqual(sorted([`${reader} hard_bounce`, `${named} hard_bounce`]));
    const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ reachable: "email" }] } });
    expect(counted.status, JSON.stringify(counted.body)).toBe(200);
    expect(counted.body).toMatchObject({ count: 1, count_estimated: false });
  });

  it("the preference page and an operator's preferences of a contact on the non-home shard show a stop the home holds; subscribing again, where the one asking may, lifts it there and the next campaign mails the contact", async () => {
    const { panel, list, reader: added } = await readersPanel();
    const reader = homeStopped(panel.id, added);
    const [viaPage, viaOperator, complained, bounced, free] = [await reader(0, "unsubscribe"), await reader(1, "unsubscribe"), await reader(2, "complaint"), await reader(3, "hard_bounce"), await reader(4)];
    expect(await emailStopsOn(shard0, panel.id)).toEqual([]);

    // The page shows the home's stop: email off, a bounce held (no box).
    const page = await (await call(viaPage.preferences)).text();
    expect(page).toContain("You turned these off.");
    expect(page).not.toMatch(/name="email" value="subscribed" checked/);
    expect(await (await call(bounced.preferences)).text()).toContain("Stopped: earlier emails could not be delivered to this address.");
    expect(await (await call(free.preferences)).text()).toMatch(/name="email" value="subscribed" checked/);
    const operatorSees = async (key: string) => (await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/preferences`)).body.preferences?.email;
    expect([await operatorSees(viaOperator.key), await operatorSees(complained.key), await operatorSees(bounced.key), await operatorSees(free.key)]).toEqual(["unsubscribed", "complained", "bounced", "subscribed"]);

    // The contact subscribes again from its page; an operator lifts an unsubscribe, not a complaint or a bounce.
    const saved = await call(viaPage.preferences, pagePost([["action", "preferences"], ["shown", "email"], ["email", "subscribed"]]));
    expect(await saved.text()).toMatch(/name="email" value="subscribed" checked/);
    const operator = (key: string) => admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/preferences`, { email: "subscribed" });
    const lifted = await operator(viaOperator.key);
    expect([lifted.status, lifted.body.preferences?.email]).toEqual([200, "subscribed"]);
    expect((await operator(complained.key)).status).toBe(409);
    expect((await operator(bounced.key)).status).toBe(409);

    // The lifts reached the home; the page's is recorded, with the contact, on its shard.
    expect(await emailStopsOn(panelData, panel.id)).toEqual(sorted([`${complained.key} complaint`, `${bounced.key} hard_bounce`]));
    expect(await emailStopsOn(shard0, panel.id)).toEqual([]);
    expect(await consentOn(shard0, panel.id)).toEqual(["subscribe preference_page"]);
    // SHARD_0 publishes the five (it holds no stop); its sends skip the two the home still stops.
    expect(await (await sentCampaign(panel, list)).done).toMatchObject({ status: "sent", counters: { recipients: 5, sent: 3, skipped: 2 } });
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(sorted([viaPage.key, viaOperator.key, free.key]));
  });

  it("the unsubscribe page of a contact on the non-home shard shows a stop the home holds, the stricter of its shard's and the home's, and subscribing again lifts the home's with its consent record", async () => {
    const { panel, reader: added } = await readersPanel();
    const reader = homeStopped(panel.id, added);
    const [complained, bounced, ownToo] = [await reader(0, "complaint"), await reader(1, "hard_bounce"), await reader(2, "hard_bounce")];
    // Its own unsubscribe, kept on its shard, does not hide the home's bounce.
    await suppressAddress(shard0, panel.id, ownToo.key, "unsubscribe", null, Date.now());

    expect(await (await call(complained.unsubscribe)).text()).toContain("This address was already unsubscribed");
    expect(await (await call(bounced.unsubscribe)).text()).toContain("No email goes to this address");
    expect(await (await call(ownToo.unsubscribe)).text()).toContain("No email goes to this address");
    // A one-click unsubscribe of a stopped address is no new choice: no consent record.
    expect(await (await call(complained.unsubscribe, pagePost([["List-Unsubscribe", "One-Click"]]))).text()).toContain("This address was already unsubscribed");
    expect(await consentOn(shard0, panel.id)).toEqual([]);

    const back = await call(complained.unsubscribe, pagePost([["action", "resubscribe"]]));
    expect(await back.text()).toContain("You are subscribed again");
    expect(await (await call(complained.unsubscribe)).text()).toContain(`Stop emails from`);
    expect(await emailStopsOn(panelData, panel.id)).toEqual(sorted([`${bounced.key} hard_bounce`, `${ownToo.key} hard_bounce`]));
    expect(await consentOn(shard0, panel.id)).toEqual(["subscribe unsubscribe_page"]);
  });
});

describe("a panel on two partitions: a segment's reachable-by-email condition and stops the home holds", () => {
  /** The panel's contacts a saved segment of `match` lists (once built on both shards) and its count, by EMAIL, and the count of the same filter unsaved. */
  async function reachable(panel: TestPanel) {
    const match = { all: [{ reachable: "email" }] };
    const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match });
    expect(counted.status, JSON.stringify(counted.body)).toBe(200);
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Reachable", match });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const listed = await eventually(async () => {
      const page = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}/contacts?limit=100`);
      return page.status === 200 && page.body.contacts.length === saved.body.count ? (page.body.contacts as Array<{ EMAIL: string }>).map((c) => c.EMAIL) : undefined;
    });
    return { count: counted.body.count as number, saved: saved.body.count as number, listed: sorted(listed) };
  }

  it("an operator's unsubscribe of a contact on the home stops its address on the other shard too, so another contact there with that address leaves the segment", async () => {
    const panel = await createPanel({ primary_key: "CUSTOMER_ID" });
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const api = apiFor(panel);
    const [shared, free] = ["shared@example.com", "free@example.com"];
    // Keyed by customer: two contacts share an address, one on each shard.
    const [onHome, onShard0, freeOn0] = [keyOn(panel.id, TEST_SHARD), keyOn(panel.id, 0), keyOn(panel.id, 0, 1)];
    for (const [CUSTOMER_ID, EMAIL] of [[onHome, shared], [onShard0, shared], [freeOn0, free]]) {
      const added = await api("contact", "add", { data: { CUSTOMER_ID, EMAIL } });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
    }
    expect(await keysOn(shard0, panel.id)).toEqual(sorted([onShard0, freeOn0]));

    const changed = await admin("PUT", `/panels/${panel.id}/contacts/${encodeURIComponent(onHome)}/preferences`, { email: "unsubscribed" });
    expect([changed.status, changed.body.preferences?.email]).toEqual([200, "unsubscribed"]);
    expect(await reachable(panel)).toEqual({ count: 1, saved: 1, listed: [free] });
    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${shared} unsubscribe`]);
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${shared} unsubscribe`]);
  });

  it("a one-click unsubscribe from a campaign message of a contact on the home stops the address on the other shard too", async () => {
    const { panel, list } = await readersPanel();
    const key = keyOn(panel.id, TEST_SHARD);
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    const campaign = (await listCampaign(panel, list, { draft: true })).body.id as string;
    const link = await unsubscribeLinkOn(panel, panelData, campaign, key);
    expect((await call(link, pagePost([["List-Unsubscribe", "One-Click"]]))).status).toBe(200);
    expect(await emailStopsOn(panelData, panel.id)).toEqual([`${key} unsubscribe`]);
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${key} unsubscribe`]);
  });

  it("a stop the home held before the panel had a map reaches the new shard with the map, so a contact added there later with that address is not in the segment", async () => {
    const panel = await createPanel();
    const [stopped, free] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1)];
    // Stops outlive their contacts: the panel holds none when its map is set.
    await suppressAddress(panelData, panel.id, stopped, "complaint", null, Date.now());
    await suppressSms([panelData], panel.id, "14155550100", "operator", Date.now());
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);

    for (const EMAIL of [stopped, free]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL } })).status).toBe(200);
    expect(await reachable(panel)).toEqual({ count: 1, saved: 1, listed: [free] });
    // SMS sends read their own shard's stops alone: the number's is there too.
    expect(await emailStopsOn(shard0, panel.id)).toEqual([`${stopped} complaint`]);
    expect(await textsOn(shard0, "SELECT phone || ' ' || reason FROM sms_suppressions WHERE panel_id = ?", panel.id)).toEqual(["14155550100 operator"]);
  });
});

describe("a panel on two partitions: a campaign's audience estimate past its exact cap", () => {
  it("subtracts an address stopped on both shards once; past the compared bound, the overlap of the first addresses compared is extrapolated", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Everyone" })).body.listid as number;
    const keys = [0, 1, 2].flatMap((skip) => [keyOn(panel.id, 0, skip), keyOn(panel.id, TEST_SHARD, skip)]);
    for (const EMAIL of keys) expect((await api("contact", "add", { data: { EMAIL }, listid: String(list) })).status).toBe(200);
    // Three addresses stopped: one on both shards, one on each alone.
    const now = Date.now();
    for (const [db, address] of [[panelData, "a-both@example.net"], [shard0, "a-both@example.net"], [shard0, "b-shard0@example.net"], [panelData, "c-home@example.net"]] as const) {
      await suppressAddress(db, panel.id, address, "unsubscribe", null, now);
    }
    const audience = { lists: [list], segments: [], exclude_lists: [], exclude_segments: [] };
    const estimate = (suppressionsComparedUpTo: number) =>
      estimateAudience(panelOwningShards(env, { shard: TEST_SHARD, partitions: TWO }, panelData), panel.id, audience, now, { exactUpTo: 1, readMembersUpTo: 1000, suppressionsUpTo: 1000, suppressionsComparedUpTo });
    // Six members less three addresses.
    expect(await estimate(1000)).toMatchObject({ ok: true, value: { count: 3, exact: false } });
    // SHARD_0 compares only its first address, held on the home: none of its two is taken as new.
    expect(await estimate(1)).toMatchObject({ ok: true, value: { count: 4, exact: false } });
  });
});
