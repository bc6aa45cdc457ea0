import { describe, expect, it } from "vitest";
import { admin, apiFor, createPanel, receiver, type TestPanel } from "../support/helpers";
import { outbox } from "../support/broadcasts";
import { asOperator, operatorWithRole } from "../support/operators";

async function draft(panel: TestPanel, html: string, subject = "Hello {{NAME|friend}}") {
  const list = (await apiFor(panel)("lists", "add", { listname: `All ${crypto.randomUUID()}` })).body.listid as number;
  const created = await admin("POST", `/panels/${panel.id}/campaigns`, { name: "Spring", subject, sender_name: "Shop", sender_email: "shop@example.com", html, draft: true, audience: { lists: [list] } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

describe("a campaign's body, preview and checks", () => {
  it("previews as a chosen contact: every tag from its attributes, the fallback where empty; the body as written", async () => {
    const panel = await createPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada <3", CITY: "" } });
    const html = `<p>Hi {{NAME|there}} from {{ city | somewhere }}</p><a href="{{UNSUBSCRIBE}}">Leave</a>`;
    const id = await draft(panel, html);

    const body = await admin("GET", `/panels/${panel.id}/campaigns/${id}/body`);
    expect(body.body).toEqual({ id, subject: "Hello {{NAME|friend}}", html, body_source: null });

    const viewer = await operatorWithRole(panel.id, "viewer");
    const asAda = await asOperator(viewer, "GET", `/panels/${panel.id}/campaigns/${id}/preview?contact=${encodeURIComponent(" Ada@Example.com ")}`);
    expect(asAda.status, JSON.stringify(asAda.body)).toBe(200);
    expect(asAda.body).toEqual({ subject: "Hello Ada <3", html: `<p>Hi Ada &lt;3 from somewhere</p><a href="#">Leave</a>`, contact: "ada@example.com" });
    const stranger = await admin("GET", `/panels/${panel.id}/campaigns/${id}/preview`);
    expect(stranger.body).toMatchObject({ subject: "Hello friend", html: `<p>Hi there from somewhere</p><a href="#">Leave</a>`, contact: null });

    const unknown = await admin("GET", `/panels/${panel.id}/campaigns/${id}/preview?contact=nobody@example.com`);
    expect([unknown.status, unknown.body.errors[0].field]).toEqual([400, "contact"]);
    expect(unknown.body.errors[0].message).toContain("no contact");
    const notEmail = await admin("GET", `/panels/${panel.id}/campaigns/${id}/preview?contact=not-an-address`);
    expect([notEmail.status, notEmail.body.errors[0].field]).toEqual([400, "contact"]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/nope/preview`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/nope/body`)).status).toBe(404);
  });

  it("warns about unknown merge tags, a missing unsubscribe link, images without alt text and links that do not answer", async () => {
    const panel = await createPanel();
    const ok = receiver.bucket("ok");
    const headRefused = receiver.bucket("head");
    const broken = receiver.bucket("broken");
    await receiver.script(headRefused, [{ status: 405 }, { status: 200 }]);
    await receiver.script(broken, [{ status: 404 }]);
    const html = [
      `<p>Hi {{NAME|there}}, size {{SHOE_SIZE|?}}</p>`,
      `<img src="https://cdn.example.com/logo.png" width="10"><img src="https://cdn.example.com/spacer.gif" alt="">`,
      `<a href="${receiver.hookUrl(ok)}/a">ok</a> <a href="${receiver.hookUrl(headRefused)}/b">b</a> <a href='${receiver.hookUrl(broken)}/c'>c</a>`,
      `<a href="${receiver.hookUrl(ok)}/a">again</a> <a href="mailto:help@example.com">mail</a>`,
    ].join("");
    const id = await draft(panel, html, "{{COUPON}} for {{NAME|you}}");

    const marketer = await operatorWithRole(panel.id, "marketer");
    const checks = await asOperator(marketer, "POST", `/panels/${panel.id}/campaigns/${id}/checks`);
    expect(checks.status, JSON.stringify(checks.body)).toBe(200);
    expect(checks.body.warnings.map((w: any) => [w.kind, w.subject])).toEqual([
      ["merge_tag", "COUPON"],
      ["merge_tag", "SHOE_SIZE"],
      ["unsubscribe", null],
      ["image_alt", "https://cdn.example.com/logo.png"],
      ["link", `${receiver.hookUrl(broken)}/c`],
    ]);
    expect(checks.body.warnings.at(-1).message).toContain("404");
    // HEAD first; GET only where HEAD was refused; each link once.
    expect((await receiver.requests(ok)).map((r) => r.method)).toEqual(["HEAD"]);
    expect((await receiver.requests(headRefused)).map((r) => r.method)).toEqual(["HEAD", "GET"]);
    expect((await receiver.requests(broken)).map((r) => r.method)).toEqual(["HEAD", "GET"]);

    const clean = await draft(panel, `<p>Hi {{NAME|there}}</p><img src="a.png" alt="A"><a href="{{UNSUBSCRIBE}}">Leave</a>`);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${clean}/checks`)).body).toEqual({ warnings: [] });
    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "POST", `/panels/${panel.id}/campaigns/${clean}/checks`)).status).toBe(403);
  });

  it("sends test copies to several addresses, checking every address before the first goes", async () => {
    const panel = await createPanel();
    const id = await draft(panel, "<p>Hi {{NAME|there}}</p>");
    const sent = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { emails: ["a@example.com", " B@example.com "] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.message_ids).toHaveLength(2);
    expect(sent.body.message_id).toBe(sent.body.message_ids[0]);
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["a@example.com", "b@example.com"]);

    const bad = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { emails: ["c@example.com", "not an address"] });
    expect([bad.status, bad.body.errors[0].field]).toEqual([400, "emails.1"]);
    const many = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { emails: Array.from({ length: 11 }, (_, i) => `t${i}@example.com`) });
    expect([many.status, many.body.errors[0].field]).toEqual([400, "emails"]);
    const both = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: "d@example.com", emails: ["e@example.com"] });
    expect([both.status, both.body.errors[0].field]).toEqual([400, "emails"]);
    expect((await outbox(panel)).length).toBe(2);
  });
});
