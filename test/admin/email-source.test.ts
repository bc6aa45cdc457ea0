import { describe, expect, it } from "vitest";
import { admin, apiFor, createPanel, type TestPanel } from "../support/helpers";

// The visual editor's source beside the HTML (issue 43, item 4): email templates and campaigns
// keep it, answer it, drop it when hand-written HTML replaces it, and refuse a bad one naming
// the field, writing nothing.

const SOURCE = {
  version: 1,
  width: 600,
  background: "#f4f4f4",
  content_background: "#ffffff",
  font: "sans",
  text_color: "#222222",
  link_color: "#1a73e8",
  blocks: [
    { type: "heading", id: "h1", text: "Hello {{NAME|there}}", level: 1, style: {} },
    { type: "button", id: "b1", label: "Shop", href: "https://shop.example.com/", style: { background: "#ff6600" } },
    { type: "footer", id: "f1", text: "Shop Ltd", unsubscribe_label: "Unsubscribe", preferences_label: "Email preferences", style: {} },
  ],
};
const HTML = `<html><body><h1>Hello {{NAME|there}}</h1><a href="https://shop.example.com/">Shop</a><a href="{{UNSUBSCRIBE}}">Unsubscribe</a></body></html>`;

async function listOf(panel: TestPanel) {
  return (await apiFor(panel)("lists", "add", { listname: `All ${crypto.randomUUID()}` })).body.listid as number;
}

describe("the email editor's source through the admin API", () => {
  it("a template keeps its source beside its HTML; a PUT without one drops it; a bad one is refused by field and changes nothing", async () => {
    const panel = await createPanel();
    const path = `/panels/${panel.id}/email-templates`;
    const created = await admin("POST", path, { name: "Sale", subject: "Sale", body_html: HTML, body_source: SOURCE });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ body_html: HTML, body_source: SOURCE });
    expect((await admin("GET", `${path}/${created.body.id}`)).body.body_source).toEqual(SOURCE);
    expect((await admin("GET", path)).body.templates[0]).not.toHaveProperty("body_source");

    const bad = { ...SOURCE, blocks: [SOURCE.blocks[0], { ...SOURCE.blocks[1], href: "ftp://nope" }] };
    const refused = await admin("PUT", `${path}/${created.body.id}`, { name: "Sale", subject: "Sale", body_html: HTML, body_source: bad });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "body_source.blocks.1.href", message: "must be an http(s) or mailto: link, or a merge tag such as {{UNSUBSCRIBE}}" }]);
    expect((await admin("GET", `${path}/${created.body.id}`)).body.body_source).toEqual(SOURCE);

    const byHand = await admin("PUT", `${path}/${created.body.id}`, { name: "Sale", subject: "Sale", body_html: "<p>By hand</p>" });
    expect(byHand.body).toMatchObject({ body_html: "<p>By hand</p>", body_source: null });
  });

  it("a campaign keeps the source it was created with, answers it with its body, drops it for hand-written HTML and takes a template's with the template", async () => {
    const panel = await createPanel();
    const list = await listOf(panel);
    const base = { name: "Spring", subject: "Hi", sender_name: "Shop", sender_email: "shop@example.com", draft: true, audience: { lists: [list] } };
    const campaigns = `/panels/${panel.id}/campaigns`;

    const alone = await admin("POST", campaigns, { ...base, body_source: SOURCE });
    expect(alone.status).toBe(400);
    expect(alone.body.errors).toContainEqual({ field: "body_source", message: "must come with html, the body rendered from it" });

    const created = await admin("POST", campaigns, { ...base, html: HTML, body_source: SOURCE });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    expect((await admin("GET", `${campaigns}/${id}/body`)).body).toEqual({ id, subject: "Hi", html: HTML, body_source: SOURCE });

    // A clone keeps it.
    const clone = await admin("POST", `${campaigns}/${id}/clone`);
    expect((await admin("GET", `${campaigns}/${clone.body.id}/body`)).body.body_source).toEqual(SOURCE);

    // A bad source is refused by field; the campaign is as it was.
    const bad = await admin("PATCH", `${campaigns}/${id}`, { html: "<p>x</p>", body_source: { ...SOURCE, blocks: [{ ...SOURCE.blocks[0], level: 7 }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("body_source.blocks.0.level");
    expect((await admin("GET", `${campaigns}/${id}/body`)).body).toMatchObject({ html: HTML, body_source: SOURCE });

    // Hand-written HTML drops the source.
    const byHand = await admin("PATCH", `${campaigns}/${id}`, { html: "<p>By hand {{UNSUBSCRIBE}}</p>" });
    expect(byHand.status, JSON.stringify(byHand.body)).toBe(200);
    expect((await admin("GET", `${campaigns}/${id}/body`)).body).toMatchObject({ html: "<p>By hand {{UNSUBSCRIBE}}</p>", body_source: null });

    // A draft's PATCH may name a template: its body, source and subject are copied now.
    const template = await admin("POST", `/panels/${panel.id}/email-templates`, { name: "Sale", subject: "Sale {{NAME|}}", preheader: "Half off", body_html: HTML, body_source: SOURCE });
    const fromTemplate = await admin("PATCH", `${campaigns}/${id}`, { email_template: template.body.id });
    expect(fromTemplate.status, JSON.stringify(fromTemplate.body)).toBe(200);
    expect(fromTemplate.body).toMatchObject({ subject: "Sale {{NAME|}}", email_template: template.body.id });
    const body = (await admin("GET", `${campaigns}/${id}/body`)).body;
    expect(body.body_source).toEqual(SOURCE);
    expect(body.html).toContain("Half off");
    expect(body.html).toContain('<a href="{{UNSUBSCRIBE}}">Unsubscribe</a>');

    const both = await admin("PATCH", `${campaigns}/${id}`, { email_template: template.body.id, html: "<p>x</p>" });
    expect(both.body.errors).toContainEqual({ field: "email_template", message: "must not be combined with html or html_url: the template is the body" });
    const unknown = await admin("PATCH", `${campaigns}/${id}`, { email_template: "etp_nope" });
    expect([unknown.status, unknown.body.errors]).toEqual([400, [{ field: "email_template", message: 'no email template with id "etp_nope" in this panel' }]]);
    // Own HTML again: the template is no longer named.
    const own = await admin("PATCH", `${campaigns}/${id}`, { html: "<p>Own</p>" });
    expect(own.body.email_template).toBeNull();
  });
});
