import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PUSH_TURNED_OFF } from "../../../src/services/journeys/push";
import { phoneSuppression } from "../../../src/store/sms";
import { isAddressSuppressed, suppressAddress } from "../../../src/store/suppressions";
import { htmlOf } from "../../support/broadcasts";
import { unsubscribeUris } from "../../support/mime";
import { pipelineSettled } from "../../support/activity";
import { admin, apiFor, call, countRows, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { act, cartPanel, messagesOf, startJourney } from "../../support/journeys";
import { asOperator, operatorWithRole } from "../../support/operators";

const ADA = "ada@example.com";
const path = (panel: TestPanel, key = ADA) => `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/preferences`;

/** A journey: cart activity -> email, then app push; returns the email's preference path (from its footer) and the messages. */
async function journeyWithEmailAndPush(panel: TestPanel) {
  const { cart, buy } = await cartPanel(panel);
  await startJourney(panel, {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      { id: "mail", type: "email", subject: "You left something", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      { id: "push", type: "apn", after: "mail", text: "Your cart misses you", title: "Cart" },
    ],
  });
  await act(panel, cart, ADA);
  const [sent] = await messagesOf(panel, "email");
  const raw = await (await env.FILES.get(`outbox/${panel.id}/${sent.msgid}.eml`))!.text();
  const preferences = /http:\/\/127\.0\.0\.1:8787(\/t\/p\/[^"]+)"[^>]*>choose what you receive/.exec(htmlOf(raw))?.[1];
  return { buy, preferences: preferences!, unsubscribe: /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]!, push: await messagesOf(panel, "apn") };
}

function form(fields: Array<[string, string]>) {
  return { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() };
}

describe("per-channel preferences", () => {
  it("are read and changed through the admin API as the contact's suppressions and push opt-out, refusing what cannot change", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: ADA, MOBILE: "+919800000001" } });
    await api("contact", "add", { data: { EMAIL: "bob@example.com" } });
    expect((await admin("GET", path(panel))).body.preferences).toEqual({ email: "subscribed", sms: "subscribed", push: "subscribed" });
    expect((await admin("GET", path(panel, "bob@example.com"))).body.preferences).toEqual({ email: "subscribed", sms: "unreachable", push: "subscribed" });

    const off = await admin("PUT", path(panel), { email: "unsubscribed", sms: "unsubscribed", push: "unsubscribed" });
    expect(off.body.preferences).toEqual({ email: "unsubscribed", sms: "unsubscribed", push: "unsubscribed" });
    expect(await isAddressSuppressed(panelData, panel.id, ADA)).toBe(true);
    expect(await phoneSuppression(panelData, panel.id, "919800000001")).toBe("stop");
    const on = await admin("PUT", path(panel), { email: "subscribed", sms: "subscribed" });
    expect(on.body.preferences).toEqual({ email: "subscribed", sms: "subscribed", push: "unsubscribed" });
    expect(await isAddressSuppressed(panelData, panel.id, ADA)).toBe(false);

    // Refusals name the field and change nothing.
    const noNumber = await admin("PUT", path(panel, "bob@example.com"), { sms: "subscribed", push: "unsubscribed" });
    expect([noNumber.status, noNumber.body.errors[0]]).toEqual([400, { field: "sms", message: "the contact has no valid MOBILE" }]);
    expect((await admin("GET", path(panel, "bob@example.com"))).body.preferences.push).toBe("subscribed");
    await suppressAddress(panelData, panel.id, "bob@example.com", "hard_bounce", null, Date.now());
    // A state the service holds is a conflict, not a bad input.
    const bounced = await admin("PUT", path(panel, "bob@example.com"), { email: "subscribed" });
    expect([bounced.status, bounced.body.errors[0]]).toEqual([409, { field: "email", message: "the address hard-bounced; mail to it stays stopped" }]);
    expect((await admin("PUT", path(panel), {})).status).toBe(400);
    expect((await admin("PUT", path(panel), { email: "maybe" })).body.errors[0].field).toBe("email");
    expect((await admin("PUT", path(panel), { fax: "unsubscribed" })).status).toBe(400);
    expect((await admin("GET", path(panel, "nobody@example.com"))).status).toBe(404);
    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "GET", path(panel))).status).toBe(200);
    expect((await asOperator(viewer, "PUT", path(panel), { push: "subscribed" })).status).toBe(403);
  });

  it("has a hosted page linked from every email, whose boxes set each channel; a push step skips a contact who turned push off", async () => {
    const panel = await createPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: ADA, NAME: "Ada", MOBILE: "+919800000001" } });
    const first = await journeyWithEmailAndPush(panel);
    expect(first.push.map((m: any) => m.status)).toEqual(["recorded"]);

    // The unsubscribe page links to the preference page too.
    expect(await (await call(first.unsubscribe)).text()).toContain(`href="${first.preferences}"`);
    const page = await call(first.preferences);
    expect(page.status).toBe(200);
    const html = await page.text();
    for (const channel of ["email", "sms", "push"]) expect(html).toMatch(new RegExp(`name="${channel}" value="subscribed" checked`));
    // A GET (a link scanner) changes nothing.
    expect((await admin("GET", path(panel))).body.preferences).toEqual({ email: "subscribed", sms: "subscribed", push: "subscribed" });

    // Keep email, leave SMS and push.
    const saved = await call(first.preferences, form([["action", "preferences"], ["shown", "email"], ["email", "subscribed"], ["shown", "sms"], ["shown", "push"]]));
    expect(saved.status).toBe(200);
    const after = await saved.text();
    expect(after).toContain('role="status"');
    expect(after).toMatch(/name="email" value="subscribed" checked/);
    expect(after).not.toMatch(/name="sms" value="subscribed" checked/);
    expect((await admin("GET", path(panel))).body.preferences).toEqual({ email: "subscribed", sms: "unsubscribed", push: "unsubscribed" });
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'unsubscribe'", panel.id)).toBe(0);

    // Leaving email here is the message's unsubscribe, as the link's: an email unsubscribe event, once.
    await call(first.preferences, form([["action", "preferences"], ["shown", "email"], ["shown", "sms"], ["shown", "push"]]));
    await call(first.preferences, form([["action", "preferences"], ["shown", "email"], ["shown", "sms"], ["shown", "push"]]));
    expect((await admin("GET", path(panel))).body.preferences.email).toBe("unsubscribed");
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'unsubscribe'", panel.id)).toBe(1);

    // The next push step of a journey records the message as skipped.
    await startJourney(panel, { name: "Push only", trigger: { type: "activity", activity: "purchase" }, steps: [{ id: "push", type: "bpn", text: "Back in stock", title: "Shop" }] });
    await act(panel, first.buy, ADA);
    const [push] = await messagesOf(panel, "bpn");
    expect(push).toMatchObject({ status: "skipped", error: PUSH_TURNED_OFF });

    // A forged or unknown token shows no one's preferences.
    expect((await call(`/t/p/${first.preferences.split("/").pop()!.slice(0, -2)}xx`)).status).toBe(404);
  });
});
