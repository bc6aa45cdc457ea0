import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { outbox, rawMessage, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, call, createPanel, panelData, type TestPanel } from "../support/helpers";
import { unsubscribeUris } from "../support/mime";
import { act, cartPanel, messagesOf, startJourney } from "../support/journeys";

// Topics (issue 45, item 4) as a recipient meets them: boxes on the preference page beside the
// channels, each change saved with its consent record; a campaign naming a topic skips the
// contacts who left it.

const FORM = { "content-type": "application/x-www-form-urlencoded" };

async function sentCampaign(panel: TestPanel, list: number, topic: string | null) {
  const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
    name: `Wave ${Math.random()}`,
    subject: "News",
    html: "<p>Hi</p>",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    audience: { lists: [list] },
    ...(topic ? { topic } : {}),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await publishDueBroadcasts(env, Date.now());
  return waitForCampaign(panel, created.body.id);
}

async function topicRecords(panel: TestPanel) {
  const { results } = await panelData
    .prepare("SELECT kind, topic, via, ip, text FROM consent_records WHERE panel_id = ? AND kind LIKE 'topic_%' ORDER BY id")
    .bind(panel.id)
    .all<Record<string, unknown>>();
  return results;
}

describe("topics on the preference page and in campaigns", () => {
  it("the page shows the topics as boxes; saving leaves and rejoins them with consent records; a topic campaign skips who left it", async () => {
    const panel = await createPanel({ name: "Fern & Co" });
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list });
    await api("contact", "add", { data: { EMAIL: "bob@example.com" }, listid: list });
    const news = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Product news", description: "New <features>" })).body;
    const events = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Events" })).body;

    const first = await sentCampaign(panel, list, null);
    expect(first.topic).toBeNull();
    const ada = (await outbox(panel)).find((m) => m.to === "ada@example.com");
    const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(await rawMessage(panel, ada.id))[0]!)![1]!;
    const preferences = unsubscribe.replace("/t/u/", "/t/p/");

    const page = await (await call(preferences)).text();
    expect(page).toContain("<legend>Topics</legend>");
    expect(page).toContain(`name="topic" value="${news.id}" checked`);
    expect(page).toContain(`name="topic" value="${events.id}" checked`);
    expect(page).toContain("<strong>Product news</strong><small>New &lt;features&gt;</small>");
    expect(await topicRecords(panel)).toEqual([]);

    // Unchecking "Product news" (its box not posted), keeping "Events" and email.
    const body = `action=preferences&shown=email&email=subscribed&topic=${events.id}&shown_topic=${news.id}&shown_topic=${events.id}`;
    const saved = await call(preferences, { method: "POST", headers: { ...FORM, "cf-connecting-ip": "192.0.2.7" }, body });
    expect(saved.status).toBe(200);
    const after = await saved.text();
    expect(after).toContain("Saved.");
    expect(after).toContain(`name="topic" value="${news.id}">`);
    expect(after).toContain(`name="topic" value="${events.id}" checked`);
    expect(await topicRecords(panel)).toEqual([
      { kind: "topic_leave", topic: news.id, via: "preference_page", ip: "192.0.2.7", text: "What Fern & Co may send you: Topics, Product news, unchecked; Save preferences" },
    ]);
    // Email was left as it was: no channel record.
    expect((await panelData.prepare("SELECT COUNT(*) AS n FROM consent_records WHERE panel_id = ? AND kind IN ('subscribe', 'unsubscribe') AND via = 'preference_page'").bind(panel.id).first<{ n: number }>())!.n).toBe(0);

    // A campaign about the topic skips Ada, with the reason; one about the other topic reaches both.
    const about = await sentCampaign(panel, list, news.id);
    expect(about).toMatchObject({ topic: news.id, counters: { sent: 1, skipped: 1 } });
    const skipped = await panelData
      .prepare("SELECT m.status, m.error FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? AND c.pk_value = 'ada@example.com'")
      .bind(about.id)
      .first();
    expect(skipped).toEqual({ status: "skipped", error: "left the campaign's topic" });
    expect((await sentCampaign(panel, list, events.id)).counters).toMatchObject({ sent: 2, skipped: 0 });

    // Checking it again rejoins: a topic_join record, and Ada's opt-out is gone.
    await call(preferences, { method: "POST", headers: FORM, body: `action=preferences&topic=${news.id}&topic=${events.id}&shown_topic=${news.id}&shown_topic=${events.id}` });
    expect((await topicRecords(panel)).map((r) => [r.kind, r.topic])).toEqual([
      ["topic_leave", news.id],
      ["topic_join", news.id],
    ]);
    expect((await panelData.prepare("SELECT COUNT(*) AS n FROM topic_optouts WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n).toBe(0);
  });

  it("a campaign naming a topic the panel lacks is refused under topic, on create and on PATCH of a draft; PATCH sets and clears it", async () => {
    const panel = await createPanel();
    const list = (await apiFor(panel)("lists", "add", { listname: "Readers" })).body.listid as number;
    const base = { name: "Wave", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", audience: { lists: [list] }, draft: true };
    const refused = await admin("POST", `/panels/${panel.id}/campaigns`, { ...base, topic: "tpc_nope" });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "topic", message: 'no topic with id "tpc_nope" in this panel' }]);

    const draft = await admin("POST", `/panels/${panel.id}/campaigns`, base);
    expect(draft.body.topic).toBeNull();
    const topic = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Events" })).body;
    const bad = await admin("PATCH", `/panels/${panel.id}/campaigns/${draft.body.id}`, { topic: "tpc_nope" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "topic", message: 'no topic with id "tpc_nope" in this panel' }]);
    expect((await admin("PATCH", `/panels/${panel.id}/campaigns/${draft.body.id}`, { topic: topic.id })).body.topic).toBe(topic.id);
    expect((await admin("PATCH", `/panels/${panel.id}/campaigns/${draft.body.id}`, { topic: null })).body.topic).toBeNull();
  });
});

describe("the unsubscribe page of a topic's campaign", () => {
  it("offers leaving the topic alone or everything; leaving the topic keeps email and writes a topic_leave record", async () => {
    const panel = await createPanel({ name: "Fern & Co" });
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list });
    const news = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Product news" })).body;
    await sentCampaign(panel, list, news.id);
    const [message] = await outbox(panel);
    const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(await rawMessage(panel, message.id))[0]!)![1]!;

    const page = await (await call(unsubscribe)).text();
    expect(page).toContain('<input type="hidden" name="action" value="leave_topic"><button type="submit">Leave this topic</button>');
    expect(page).toContain("Leave everything</button>");
    expect(page).toContain("Leave this topic: stops Fern &amp; Co&#39;s email about Product news only");

    const left = await call(unsubscribe, { method: "POST", headers: { ...FORM, "sec-fetch-mode": "navigate" }, body: "action=leave_topic" });
    expect(await left.text()).toContain("<h1>You left Product news</h1>");
    expect(await topicRecords(panel)).toEqual([
      { kind: "topic_leave", topic: news.id, via: "unsubscribe_page", ip: null, text: "Leave this topic: stops Fern & Co's email about Product news only; other email keeps coming." },
    ]);
    // Email itself stays on: no suppression, no unsubscribe record.
    expect(await panelData.prepare("SELECT 1 FROM email_suppressions WHERE panel_id = ?").bind(panel.id).first()).toBeNull();
    expect((await panelData.prepare("SELECT COUNT(*) AS n FROM consent_records WHERE panel_id = ? AND kind = 'unsubscribe'").bind(panel.id).first<{ n: number }>())!.n).toBe(0);
  });
});

describe("journey messages about a topic", () => {
  it("email and sms steps naming a topic skip who left it, with the reason; the email's unsubscribe page offers leaving the topic", async () => {
    const panel = await createPanel({ name: "Fern & Co" });
    const { cart } = await cartPanel(panel);
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "ada@example.com", MOBILE: "+919800000001" } });
    await api("contact", "add", { data: { EMAIL: "bob@example.com", MOBILE: "+919800000002" } });
    const news = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Product news" })).body;
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "mail", type: "email", topic: news.id, subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        { id: "text", type: "sms", after: "mail", topic: news.id, text: "Hi" },
      ],
    });
    await act(panel, cart, "ada@example.com");
    const [mail] = await messagesOf(panel, "email");
    expect(mail).toMatchObject({ status: "sent", content: { topic: news.id } });
    const raw = await (await env.FILES.get(`outbox/${panel.id}/${mail.msgid}.eml`))!.text();
    const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]!;

    const page = await (await call(unsubscribe)).text();
    expect(page).toContain('<input type="hidden" name="action" value="leave_topic"><button type="submit">Leave this topic</button>');
    expect(page).toContain("Leave everything</button>");
    const left = await call(unsubscribe, { method: "POST", headers: { ...FORM, "sec-fetch-mode": "navigate" }, body: "action=leave_topic" });
    expect(await left.text()).toContain("<h1>You left Product news</h1>");
    expect((await topicRecords(panel)).map((r) => [r.kind, r.topic, r.via])).toEqual([["topic_leave", news.id, "unsubscribe_page"]]);
    // The contact's access export names the topic left.
    const exported = await admin("GET", `/panels/${panel.id}/contacts/ada@example.com/export`);
    expect(exported.body.topics_left).toEqual([{ topic_id: news.id, name: "Product news", left_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) }]);

    // Ada comes back: both steps skip her with the reason, the journey goes on; Bob gets both.
    await act(panel, cart, "ada@example.com");
    await act(panel, cart, "bob@example.com");
    const outcome = async (channel: string) =>
      (await messagesOf(panel, channel)).map((m: any) => [m.recipient, m.status, m.error ?? null]).sort((a: any[], b: any[]) => `${a}`.localeCompare(`${b}`));
    expect(await outcome("email")).toEqual([
      ["ada@example.com", "sent", null],
      ["ada@example.com", "skipped", "left the step's topic"],
      ["bob@example.com", "sent", null],
    ]);
    expect(await outcome("sms")).toEqual([
      ["+919800000001", "recorded", null],
      ["+919800000001", "skipped", "left the step's topic"],
      ["+919800000002", "recorded", null],
    ]);
  });

  it("a journey step naming a topic the panel lacks is refused under the step's topic", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const refused = await admin("POST", `/panels/${panel.id}/journeys`, {
      name: "Cart",
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "text", type: "sms", topic: "tpc_nope", text: "Hi" }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "steps.0.topic", message: 'no topic with id "tpc_nope" in this panel' }]);
  });
});
