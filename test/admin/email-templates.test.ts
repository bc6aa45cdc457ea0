import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { htmlOf, outbox, rawMessage, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, call, createPanel, panelData, panelSnapshot, type TestPanel } from "../support/helpers";
import { act, cartPanel, messagesOf, startJourney } from "../support/journeys";
import { asOperator, operatorWithRole } from "../support/operators";

// A panel's saved email templates (issue 43, item 3): CRUD, and the copy campaigns and journey
// email steps take of one, which later edits and deletion of the template do not reach.

const WELCOME = {
  name: "Welcome",
  subject: "Welcome, {{NAME|friend}}",
  preheader: "Your first week with us",
  body_html: "<html><body><p>Hello {{NAME|there}}, glad you came.</p></body></html>",
};

const templatesOf = (panel: TestPanel) => `/panels/${panel.id}/email-templates`;

async function saved(panel: TestPanel, body: Record<string, unknown> = WELCOME) {
  const answer = await admin("POST", templatesOf(panel), body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

describe("email templates: the admin routes", () => {
  it("create, list (without bodies), read, replace and delete; another panel sees none of them", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const created = await saved(panel);
    expect(created).toMatchObject({ ...WELCOME, id: expect.stringMatching(/^etp_/), merge_tags: ["NAME"] });

    const list = await admin("GET", templatesOf(panel));
    expect(list.body.templates).toEqual([
      { id: created.id, name: "Welcome", subject: WELCOME.subject, preheader: WELCOME.preheader, body_bytes: WELCOME.body_html.length, created_at: created.created_at, updated_at: created.updated_at },
    ]);
    expect((await admin("GET", `${templatesOf(panel)}/${created.id}`)).body).toEqual(created);

    const replaced = await admin("PUT", `${templatesOf(panel)}/${created.id}`, { name: "Welcome v2", subject: "Hi", body_html: "<p>{{CITY|}}</p>" });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: created.id, name: "Welcome v2", subject: "Hi", preheader: "", body_html: "<p>{{CITY|}}</p>", merge_tags: ["CITY"] });

    expect((await admin("GET", templatesOf(other))).body.templates).toEqual([]);
    expect((await admin("GET", `${templatesOf(other)}/${created.id}`)).status).toBe(404);
    expect((await admin("PUT", `${templatesOf(other)}/${created.id}`, WELCOME)).status).toBe(404);
    expect((await admin("DELETE", `${templatesOf(other)}/${created.id}`)).status).toBe(404);

    expect((await admin("DELETE", `${templatesOf(panel)}/${created.id}`)).body).toEqual({ deleted: true });
    const gone = await admin("GET", `${templatesOf(panel)}/${created.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe(`No email template with id "${created.id}" in this panel`);
    expect((await admin("DELETE", `${templatesOf(panel)}/${created.id}`)).status).toBe(404);
  });

  it("refuses a taken name (409, whatever the case), a missing name or subject and an oversized body, naming the field; writes nothing", async () => {
    const panel = await createPanel();
    const first = await saved(panel);
    const second = await saved(panel, { ...WELCOME, name: "Reminder" });
    const before = await panelSnapshot(panel.id);
    const refused = async (method: string, path: string, body: Record<string, unknown>, status: number, field: string, message: RegExp) => {
      const answer = await admin(method, path, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      expect(answer.body.errors).toContainEqual({ field, message: expect.stringMatching(message) });
    };
    await refused("POST", templatesOf(panel), { ...WELCOME, name: "welcome" }, 409, "name", /already has an email template named "welcome"/);
    await refused("PUT", `${templatesOf(panel)}/${second.id}`, { ...WELCOME, name: "WELCOME" }, 409, "name", /already has an email template named "WELCOME"/);
    await refused("POST", templatesOf(panel), { ...WELCOME, name: " " }, 400, "name", /must not be empty/);
    await refused("POST", templatesOf(panel), { name: "No subject", body_html: "<p>x</p>" }, 400, "subject", /required/);
    await refused("POST", templatesOf(panel), { ...WELCOME, name: "Blank", subject: "  " }, 400, "subject", /must not be empty/);
    await refused("POST", templatesOf(panel), { ...WELCOME, name: "Empty", body_html: " " }, 400, "body_html", /must not be empty/);
    await refused("POST", templatesOf(panel), { ...WELCOME, name: "Huge", body_html: `<p>${"é".repeat(140_000)}</p>` }, 400, "body_html", /at most 256 KiB/);
    await refused("POST", templatesOf(panel), { ...WELCOME, name: "Extra", html: "<p>x</p>" }, 400, "html", /./);
    expect(await panelSnapshot(panel.id)).toBe(before);
    // Keeping its own name is no conflict.
    expect((await admin("PUT", `${templatesOf(panel)}/${first.id}`, { ...WELCOME, subject: "Changed" })).status).toBe(200);
  });

  it("viewers read templates, marketers change them; /openapi.json documents every route with its answer", async () => {
    const panel = await createPanel();
    const template = await saved(panel);
    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "GET", templatesOf(panel))).status).toBe(200);
    expect((await asOperator(viewer, "POST", templatesOf(panel), { ...WELCOME, name: "Mine" })).status).toBe(403);
    expect((await asOperator(viewer, "DELETE", `${templatesOf(panel)}/${template.id}`)).status).toBe(403);
    const marketer = await operatorWithRole(panel.id, "marketer");
    expect((await asOperator(marketer, "POST", templatesOf(panel), { ...WELCOME, name: "Mine" })).status).toBe(201);

    const doc: any = await (await call("/openapi.json")).json();
    const list = doc.paths["/admin/v1/panels/{panel}/email-templates"];
    const one = doc.paths["/admin/v1/panels/{panel}/email-templates/{id}"];
    expect(Object.keys(list).sort()).toEqual(["get", "post"]);
    expect(Object.keys(one).sort()).toEqual(["delete", "get", "put"]);
    expect(JSON.stringify(list.post.requestBody)).toContain("body_html");
    expect(JSON.stringify(list.post.responses["201"])).toContain("merge_tags");
    expect(JSON.stringify(one.get.responses["200"])).toContain("body_html");
  });
});

describe("email templates: campaigns and journey steps copy them", () => {
  it("a campaign copies the template when it is created: editing and deleting the template afterwards changes nothing it sends", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" }, listid: list });
    const template = await saved(panel);
    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Welcome wave",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      email_template: template.id,
      audience: { lists: [list] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ subject: WELCOME.subject, email_template: template.id });

    // The template changes, then goes, before the campaign is sent.
    await admin("PUT", `${templatesOf(panel)}/${template.id}`, { name: "Welcome", subject: "CHANGED", preheader: "CHANGED", body_html: "<p>CHANGED</p>" });
    expect((await admin("DELETE", `${templatesOf(panel)}/${template.id}`)).status).toBe(200);

    await publishDueBroadcasts(env, Date.now());
    expect(await waitForCampaign(panel, created.body.id)).toMatchObject({ status: "sent", email_template: template.id, counters: { sent: 1 } });
    const [message] = await outbox(panel);
    expect(message.subject).toBe("Welcome, Ada");
    const html = htmlOf(await rawMessage(panel, message.id));
    expect(html).toContain("Hello Ada, glad you came.");
    expect(html).toMatch(/<body><div style="display:none[^"]*" aria-hidden="true">Your first week with us<\/div><p>Hello Ada/);
    expect(html).not.toContain("CHANGED");
    expect((await getCampaign(panelData, panel.id, created.body.id))!.emailTemplateId).toBe(template.id);
  });

  it("a campaign's own subject wins over the template's; a template with html, an unknown or another panel's template is refused", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const list = (await apiFor(panel)("lists", "add", { listname: "Readers" })).body.listid as number;
    const template = await saved(panel);
    const theirs = await saved(other);
    const base = { name: "Wave", sender_name: "Shop", sender_email: "shop@example.com", audience: { lists: [list] } };
    const own = await admin("POST", `/panels/${panel.id}/campaigns`, { ...base, subject: "Our own", email_template: template.id });
    expect(own.status).toBe(201);
    expect(own.body.subject).toBe("Our own");

    const before = await panelSnapshot(panel.id);
    const refused = async (body: Record<string, unknown>, field: string, message: RegExp) => {
      const answer = await admin("POST", `/panels/${panel.id}/campaigns`, { ...base, ...body });
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.errors).toContainEqual({ field, message: expect.stringMatching(message) });
    };
    await refused({ email_template: template.id, html: "<p>x</p>" }, "email_template", /must not be combined with html/);
    await refused({ email_template: "etp_nope" }, "email_template", /no email template with id "etp_nope" in this panel/);
    await refused({ email_template: theirs.id }, "email_template", /no email template with id/);
    await refused({ html: "<p>x</p>" }, "subject", /required/);
    await refused({ subject: "x" }, "html", /one of html, html_url and email_template is required/);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("a journey email step naming a template takes a copy when the journey is saved: later edits reach only a journey saved again", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" } });
    const template = await saved(panel);
    const step = { id: "mail", type: "email", email_template: template.id, sender_name: "Shop", sender_email: "shop@example.com" };
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [step] });
    const stored = (await admin("GET", journey.path)).body.steps[0];
    expect(stored).toMatchObject({ email_template: template.id, subject: WELCOME.subject, html: expect.stringContaining("Your first week with us</div><p>Hello {{NAME|there}}") });

    await admin("PUT", `${templatesOf(panel)}/${template.id}`, { name: "Welcome", subject: "CHANGED {{NAME|}}", body_html: "<p>CHANGED</p>" });
    await act(panel, cart, "ada@example.com");
    expect((await messagesOf(panel, "email")).map((m) => m.status)).toEqual(["sent"]);
    const [message] = await outbox(panel);
    expect(message.subject).toBe("Welcome, Ada");
    const html = htmlOf(await rawMessage(panel, message.id));
    expect(html).toContain("Hello Ada, glad you came.");
    expect(html).not.toContain("CHANGED");

    // Saving the step with the template named and no content of its own takes the template as it is now.
    const resaved = await admin("PUT", journey.path, { name: "Cart reminder", trigger: { type: "activity", activity: "add_to_cart" }, steps: [step] });
    expect(resaved.status, JSON.stringify(resaved.body)).toBe(200);
    expect(resaved.body.steps[0]).toMatchObject({ subject: "CHANGED {{NAME|}}", html: "<p>CHANGED</p>" });

    // Deleting the template leaves the journey as saved; a step that names a missing template without content is refused.
    expect((await admin("DELETE", `${templatesOf(panel)}/${template.id}`)).status).toBe(200);
    expect((await admin("GET", journey.path)).body.steps[0].subject).toBe("CHANGED {{NAME|}}");
    const refused = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Again", trigger: { type: "activity", activity: "add_to_cart" }, steps: [step] });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toContainEqual({ field: "steps.0.email_template", message: `no email template with id "${template.id}" in this panel` });
    const bare = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Bare", trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ ...step, email_template: undefined }] });
    expect(bare.status).toBe(400);
    expect(bare.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: "steps.0.subject" }), expect.objectContaining({ field: "steps.0.html" })]));
  });
});
