import { describe, expect, it } from "vitest";
import { admin, apiFor, createPanel, type TestPanel } from "../../support/helpers";
import { fireCron, htmlOf, outbox, rawMessage, scheduled, waitForCampaign } from "../../support/broadcasts";
import { act, cartPanel, messagesOf, startJourney } from "../../support/journeys";

// Issue 43, item 6: one renderer fills every channel's merge tags; message logs and the contact
// page show what was sent, and a sent email's copy can be read. (Push: push.test.ts.)

const page = async (panel: TestPanel, key: string) => (await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}`)).body;
const copyOf = (panel: TestPanel, messageId: string) => admin("GET", `/panels/${panel.id}/messages/${encodeURIComponent(messageId)}/copy`);

describe("campaign email", () => {
  it("fills the subject and body from each contact's attributes or the fallback; the contact page shows the filled subject and the copy", async () => {
    const panel = await createPanel();
    const csv = "EMAIL,NAME,CITY\nada@example.com,Ada & Co,Pune\nbob@example.com,,\n";
    const { id, sendAt } = await scheduled(panel, csv, { subject_line: "You left {{NAME|something}} in your cart" });
    await fireCron(sendAt);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 2 } });
    const sent = await outbox(panel);
    expect(sent.map((m) => [m.to, m.subject]).sort()).toEqual([
      ["ada@example.com", "You left Ada & Co in your cart"],
      ["bob@example.com", "You left something in your cart"],
    ]);
    expect(htmlOf(await rawMessage(panel, sent.find((m) => m.to === "ada@example.com").id))).toContain("Hello Ada &amp; Co, from Pune.");

    const ada = (await page(panel, "ada@example.com")).messages;
    expect(ada).toEqual([expect.objectContaining({ kind: "campaign", source_id: id, subject: "You left Ada & Co in your cart", has_copy: true, message_id: expect.any(String) })]);
    const copy = await copyOf(panel, ada[0].message_id);
    expect(copy.status, JSON.stringify(copy.body)).toBe(200);
    expect(copy.body).toMatchObject({ kind: "campaign", source_id: id, to: "ada@example.com", subject: "You left Ada & Co in your cart", sent_at: expect.any(String) });
    // The body as sent, escaped in HTML, its link where it points: no tracking, no open pixel.
    expect(copy.body.html).toContain("Hello Ada &amp; Co, from Pune.");
    expect(copy.body.html).toContain(`<a href="https://shop.example.com/sale?x=1&amp;y=2">Sale</a>`);
    expect(copy.body.html).not.toContain("/t/");

    // The campaign's recipients list shows each one's subject and the id its copy is read by.
    const recipients = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients?filter=all`)).body.recipients;
    expect(recipients.map((r: any) => [r.address, r.subject, r.message_id])).toEqual([
      ["ada@example.com", "You left Ada & Co in your cart", ada[0].message_id],
      ["bob@example.com", "You left something in your cart", expect.stringMatching(new RegExp(`^${id}\\.\\d+$`))],
    ]);

    const bob = (await page(panel, "bob@example.com")).messages;
    expect(bob).toEqual([expect.objectContaining({ subject: "You left something in your cart", has_copy: true })]);
    expect((await copyOf(panel, bob[0].message_id)).body).toMatchObject({ subject: "You left something in your cart", html: expect.stringContaining("Hello there, from your city.") });

    // Unknown ids and another panel's messages answer alike.
    const other = await createPanel();
    for (const [p, messageId] of [[panel, `${id}.999999`], [panel, "nope"], [other, ada[0].message_id]] as const) {
      const missing = await copyOf(p, messageId);
      expect(missing.status).toBe(404);
      expect(missing.body.errors).toEqual([expect.objectContaining({ field: "message" })]);
    }
  });
});

describe("journey email and SMS", () => {
  it("fill the same tag from the attribute (escaped only in HTML) or its fallback; logs show the filled subject and text; the email's copy is readable", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada & Co", MOBILE: "+919800000001" } });
    await apiFor(panel)("contact", "add", { data: { EMAIL: "bob@example.com", NAME: "", MOBILE: "+919800000002" } });
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "mail", type: "email", subject: "You left {{NAME|something}} in your cart", html: "<p>Still thinking it over, {{NAME|friend}}?</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        { id: "text", type: "sms", after: "mail", text: "Still thinking it over, {{NAME|friend}}?" },
      ],
    });
    await act(panel, cart, "ada@example.com");
    await act(panel, cart, "bob@example.com");

    const sms = await messagesOf(panel, "sms");
    const smsTo = (to: string) => sms.find((m) => m.recipient === to);
    expect(smsTo("+919800000001").content.body).toBe("Still thinking it over, Ada & Co?");
    expect(smsTo("+919800000002").content.body).toBe("Still thinking it over, friend?");

    const sent = await outbox(panel);
    expect(sent.map((m) => [m.to, m.subject]).sort()).toEqual([
      ["ada@example.com", "You left Ada & Co in your cart"],
      ["bob@example.com", "You left something in your cart"],
    ]);
    expect(htmlOf(await rawMessage(panel, sent.find((m) => m.to === "ada@example.com").id))).toMatch(/^<p>Still thinking it over, Ada &amp; Co\?<\/p>/);

    for (const [key, name, subject] of [
      ["ada@example.com", "Ada &amp; Co", "You left Ada & Co in your cart"],
      ["bob@example.com", "friend", "You left something in your cart"],
    ] as const) {
      const messages = (await page(panel, key)).messages;
      const mail = messages.find((m: any) => m.channel === "email");
      expect(mail).toMatchObject({ kind: "journey", step_id: "mail", subject, has_copy: true });
      expect(messages.find((m: any) => m.channel === "sms")).toMatchObject({ subject: `Still thinking it over, ${name.replace("&amp;", "&")}?`, has_copy: false });
      const copy = await copyOf(panel, mail.message_id);
      expect(copy.status, JSON.stringify(copy.body)).toBe(200);
      expect(copy.body).toMatchObject({ kind: "journey", to: key, subject, html: `<p>Still thinking it over, ${name}?</p>` });
      // An SMS has no email copy.
      expect((await copyOf(panel, messages.find((m: any) => m.channel === "sms").message_id)).status).toBe(404);
    }
  });
});
