import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, apiFor, call, createPanel, panelData, type TestPanel } from "../support/helpers";
import { unsubscribeUris } from "../support/mime";
import { act, cartPanel, messagesOf, startJourney } from "../support/journeys";
import { countedEnv, type D1Use } from "../../bench/worker/d1-count";
import { handlePreferences } from "../../src/api/tracking";

// Consent records (issue 45, item 5): subscribes through an API key and a form, unsubscribes
// through the page, the one-click POST and the preference page, each with how and from where
// and the text shown; in the contact's access export, gone with its erasure, and a CSV per panel.

async function recordsOf(panel: TestPanel) {
  const { results } = await panelData
    .prepare("SELECT kind, list_id, via, via_id, ip, user_agent, text FROM consent_records WHERE panel_id = ? ORDER BY id")
    .bind(panel.id)
    .all<Record<string, unknown>>();
  return results;
}

/** The unsubscribe link (path) of a journey email sent to ada@example.com. */
async function unsubscribeLinkOf(panel: TestPanel): Promise<string> {
  const { cart } = await cartPanel(panel);
  await startJourney(panel, {
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [{ id: "mail", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
  });
  await act(panel, cart, "ada@example.com");
  const [sent] = await messagesOf(panel, "email");
  const raw = await (await env.FILES.get(`outbox/${panel.id}/${sent.msgid}.eml`))!.text();
  return /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]!;
}

describe("consent records", () => {
  it("an API key's add to lists is recorded as such; unsubscribes by page, one-click and preference page are recorded with their text", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "News" })).body.id;
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list })).status).toBe(200);
    // Written with the contact, in its batch: there when the call answers.
    expect(await recordsOf(panel)).toEqual([{ kind: "subscribe", list_id: list, via: "api_key", via_id: panel.userId, ip: null, user_agent: null, text: "" }]);

    const link = await unsubscribeLinkOf(panel);
    const fromPage = await call(link, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-mode": "navigate", "sec-fetch-site": "same-origin", "cf-connecting-ip": "192.0.2.1", "user-agent": "Browser/1" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(fromPage.status).toBe(200);
    const [, unsubscribed] = await recordsOf(panel);
    expect(unsubscribed).toMatchObject({ kind: "unsubscribe", list_id: null, via: "unsubscribe_page", ip: "192.0.2.1", user_agent: "Browser/1" });
    expect(unsubscribed!.text).toMatch(/^Unsubscribing stops all marketing email from /);

    // Subscribing again from the page, then a mail client's one-click POST (no Fetch metadata).
    await call(link, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-mode": "navigate" }, body: "action=resubscribe" });
    await call(link, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    const records = await recordsOf(panel);
    expect(records.slice(2).map((r) => [r.kind, r.via, r.text])).toEqual([
      ["subscribe", "unsubscribe_page", "Subscribe again"],
      ["unsubscribe", "one_click", "List-Unsubscribe=One-Click (the mail client's unsubscribe button, RFC 8058)"],
    ]);

    // The preference page records the channels the post changed, not the ones left as they were.
    await call(link.replace("/t/u/", "/t/p/"), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "action=preferences&shown=email&email=subscribed" });
    const last = (await recordsOf(panel)).slice(4);
    expect(last.map((r) => [r.kind, r.via])).toEqual([["subscribe", "preference_page"]]);
    expect(last[0]!.text).toContain("Keep me subscribed to email, checked");
  });

  it("the preference page's post reads the channels once and writes each change with its consent record", async () => {
    const panel = await createPanel();
    const link = await unsubscribeLinkOf(panel);
    const used: D1Use = { statements: 0, roundTrips: 0 };
    const request = new Request(`http://127.0.0.1:8787${link.replace("/t/u/", "/t/p/")}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "action=preferences&shown=email&email=unsubscribed&shown=push&push=unsubscribed",
    });
    const answer = await handlePreferences(link.slice("/t/u/".length), request, countedEnv(env, used));
    expect(answer.status).toBe(200);
    // There as soon as the page answers: each written in the batch of its change.
    expect((await recordsOf(panel)).map((r) => [r.kind, r.via, r.text])).toEqual([
      ["unsubscribe", "preference_page", expect.stringContaining("email")],
      ["unsubscribe", "preference_page", expect.stringContaining("push")],
    ]);
    // 18 round trips when it read the channels twice and wrote each record on its own; 13 now.
    expect(used.roundTrips).toBeLessThanOrEqual(13);
  });

  it("the panel's setting keeps no address or user agent; the access export has the records and the erasure removes them; a CSV per panel", async () => {
    const panel = await createPanel();
    await admin("PUT", `/panels/${panel.id}/form-settings`, { consent_keeps_client: false });
    const form = (await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], double_opt_in: false, consent_text: 'Sign me up, "please"' })).body;
    const posted = await call(`/f/${form.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": "192.0.2.44", "user-agent": "Browser/2" }, body: "EMAIL=bo%40example.com" });
    expect(posted.status).toBe(200);
    expect(await recordsOf(panel)).toEqual([{ kind: "subscribe", list_id: null, via: "form", via_id: form.id, ip: null, user_agent: null, text: 'Sign me up, "please"' }]);

    const csv = await call(`/admin/v1/panels/${panel.id}/consent.csv`, { headers: { authorization: "Bearer test-admin-token" } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("at,contact,kind,list_id,topic,via,via_id,ip,user_agent,text");
    expect(lines[1]).toMatch(new RegExp(`^\\d{4}-.*,bo@example.com,subscribe,,,form,${form.id},,,"Sign me up, ""please"""$`));

    const exported = await call(`/admin/v1/panels/${panel.id}/contacts/bo@example.com/export`, { headers: { authorization: "Bearer test-admin-token" } });
    const document = (await exported.json()) as any;
    expect(document.consent).toEqual([expect.objectContaining({ kind: "subscribe", via: "form", via_id: form.id, text: 'Sign me up, "please"' })]);
    expect(document.unconfirmed_signups).toEqual([]);

    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/bo@example.com`);
    expect(erased.status, JSON.stringify(erased.body)).toBeLessThan(300);
    await expect.poll(async () => (await recordsOf(panel)).length).toBe(0);
  });
});
