import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { housekeeping } from "../../src/services/retention/housekeeping";
import { countersOf, startJourney } from "../support/journeys";
import { admin, BASE, call, countRows, createPanel, fetchWith, keptMail, panelData, panelSnapshot, receiver, type KeptMail, type TestPanel } from "../support/helpers";

// Signup forms (issue 45, items 1 to 3): the admin routes, the hosted page without script, the
// snippet's plain POST, JSON with CORS, the honeypot, rate limits, Turnstile checked at its
// (stand-in) siteverify URL, and double opt-in with its single-use link.

let ipCount = 0;
/** A visitor address of its own per test, so the per-IP limit of one test never reaches another. */
const newIp = () => `198.51.100.${++ipCount}`;

async function listOf(panel: TestPanel, name: string): Promise<number> {
  const answer = await admin("POST", `/panels/${panel.id}/lists`, { name });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.id;
}

async function formOf(panel: TestPanel, body: Record<string, unknown>) {
  const answer = await admin("POST", `/panels/${panel.id}/forms`, body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

async function nameAttribute(panel: TestPanel) {
  expect((await admin("PUT", `/panels/${panel.id}/attributes/NAME`, { type: "string" })).status).toBeLessThan(300);
}

function post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return call(path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": newIp(), ...headers }, body: new URLSearchParams(fields).toString(), redirect: "manual" });
}

async function membersOf(panel: TestPanel, listId: number): Promise<string[]> {
  const { results } = await panelData
    .prepare("SELECT c.pk_value FROM list_members m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? AND m.list_id = ? ORDER BY c.pk_value")
    .bind(panel.id, listId)
    .all<{ pk_value: string }>();
  return results.map((r) => r.pk_value);
}

async function consentOf(panel: TestPanel) {
  const { results } = await panelData
    .prepare("SELECT r.kind, r.list_id, r.via, r.via_id, r.ip, r.text, c.pk_value FROM consent_records r JOIN contacts c ON c.id = r.contact_id WHERE r.panel_id = ? ORDER BY r.id")
    .bind(panel.id)
    .all();
  return results;
}

describe("signup forms: the admin routes", () => {
  it("create, list, read with the snippet, replace and delete; refusals name the field", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const news = await listOf(panel, "News");
    const form = await formOf(panel, { name: "Newsletter", title: "Get the news", fields: [{ attribute: "email" }, { attribute: "NAME", label: "Your name" }], lists: [news] });
    expect(form).toMatchObject({
      id: expect.stringMatching(/^frm_[A-Za-z0-9]{16}$/),
      name: "Newsletter",
      fields: [{ attribute: "EMAIL", required: true }, { attribute: "NAME", label: "Your name", required: false }],
      lists: [news],
      double_opt_in: true,
      turnstile_site_key: null,
      hosted_url: expect.stringMatching(new RegExp(`/f/${form.id}$`)),
      json_url: expect.stringMatching(new RegExp(`/f/${form.id}\\.json$`)),
    });
    // The snippet is a plain form posting to the hosted URL, with the honeypot.
    expect(form.snippet).toContain(`<form method="post" action="${form.hosted_url}"`);
    expect(form.snippet).toContain('name="hp_website"');
    expect(form.snippet).not.toContain("<script");

    expect((await admin("GET", `/panels/${panel.id}/forms`)).body.forms.map((f: any) => f.id)).toEqual([form.id]);
    expect((await admin("GET", `/panels/${panel.id}/forms/${form.id}`)).body).toEqual(form);
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/forms/${form.id}`)).status).toBe(404);

    const replaced = await admin("PUT", `/panels/${panel.id}/forms/${form.id}`, { name: "Newsletter", fields: [{ attribute: "EMAIL" }], double_opt_in: false, turnstile_site_key: "0x4AAAAAAAtest" });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body).toMatchObject({ id: form.id, lists: [], double_opt_in: false, turnstile_site_key: "0x4AAAAAAAtest" });
    expect(replaced.body.snippet).toContain('<script src="https://challenges.cloudflare.com/turnstile/v0/api.js"');
    expect(replaced.body.snippet).toContain('data-sitekey="0x4AAAAAAAtest"');

    expect((await admin("POST", `/panels/${panel.id}/forms`, { name: "newsletter", fields: [{ attribute: "EMAIL" }] })).status).toBe(409);
    const refused = await admin("POST", `/panels/${panel.id}/forms`, { name: "Bad", fields: [{ attribute: "PLAN" }], lists: [9999] });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual(
      expect.arrayContaining([
        { field: "fields.0.attribute", message: "no attribute named PLAN in this panel" },
        expect.objectContaining({ field: "fields" }),
        expect.objectContaining({ field: "double_opt_in" }),
        { field: "lists.0", message: "no list with id 9999 in this panel" },
      ]),
    );
    const badBody = await admin("POST", `/panels/${panel.id}/forms`, { name: "Bad", fields: [{ attribute: "EMAIL" }], redirect_url: "javascript:alert(1)", allowed_origins: ["https://a.example/path"] });
    expect(badBody.status).toBe(400);
    expect(badBody.body.errors.map((e: any) => e.field).sort()).toEqual(["allowed_origins.0", "redirect_url"]);

    expect((await admin("DELETE", `/panels/${panel.id}/forms/${form.id}`)).body).toEqual({ deleted: true });
    expect((await call(`/f/${form.id}`)).status).toBe(404);
  });

  it("form settings keep the Turnstile secret encrypted and never show it", async () => {
    const panel = await createPanel();
    expect((await admin("GET", `/panels/${panel.id}/form-settings`)).body).toEqual({ turnstile_secret_set: false, consent_keeps_client: true });
    const saved = await admin("PUT", `/panels/${panel.id}/form-settings`, { turnstile_secret: "0x4AAAAAAA-secret-value", consent_keeps_client: false });
    expect(saved.body).toEqual({ turnstile_secret_set: true, consent_keeps_client: false });
    const stored = await panelData.prepare("SELECT turnstile_secret_enc FROM form_settings WHERE panel_id = ?").bind(panel.id).first<{ turnstile_secret_enc: string }>();
    expect(stored!.turnstile_secret_enc).not.toContain("secret-value");
    expect((await admin("PUT", `/panels/${panel.id}/form-settings`, { consent_keeps_client: true })).body).toEqual({ turnstile_secret_set: true, consent_keeps_client: true });
  });
});

describe("signup forms: the hosted page and its posts", () => {
  it("serves a page that works without script, with the form pages' security headers", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    const b = await listOf(panel, "Stories");
    const form = await formOf(panel, { name: "Join", title: "Join us <now>", fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }], lists: [a, b], consent_text: "I agree to get email.", redirect_url: "https://shop.example/thanks" });
    const page = await call(`/f/${form.id}`, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://shop.example; base-uri 'none'; frame-ancestors 'none'");
    const text = await page.text();
    expect(text).toContain("<h1>Join us &lt;now&gt;</h1>");
    expect(text).toContain('type="email"');
    expect(text).toContain('name="list_' + a + '"');
    expect(text).toContain("I agree to get email.");
    expect(text).not.toContain("<script");
  });

  it("a plain form post without double opt-in adds the contact to the ticked lists, records consent and redirects", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    const b = await listOf(panel, "Stories");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }], lists: [a, b], double_opt_in: false, consent_text: "Yes, email me.", redirect_url: "https://shop.example/thanks" });
    const ip = newIp();
    const answer = await post(`/f/${form.id}`, { EMAIL: "Ada@Example.com", NAME: "Ada", [`list_${b}`]: "1", PLAN: "ignored" }, { "cf-connecting-ip": ip, "user-agent": "TestBrowser/1" });
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe("https://shop.example/thanks");
    expect(await membersOf(panel, a)).toEqual([]);
    expect(await membersOf(panel, b)).toEqual(["ada@example.com"]);
    expect(await consentOf(panel)).toEqual([{ kind: "subscribe", list_id: b, via: "form", via_id: form.id, ip, text: "Yes, email me.", pk_value: "ada@example.com" }]);
  });

  it("skips lists deleted since the form was saved (consent names none when all are gone); a changed form is seen at once", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const b = await listOf(panel, "Stories");
    const both = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a, b], double_opt_in: false, consent_text: "Email me." });
    const onlyB = await formOf(panel, { name: "Stories", fields: [{ attribute: "EMAIL" }], lists: [b], double_opt_in: false, consent_text: "Stories, please." });
    // A first submission: the form is now in this isolate's cache.
    expect((await post(`/f/${both.id}.json`, { EMAIL: "a@example.com", [`list_${a}`]: "1", [`list_${b}`]: "1" })).status).toBe(200);
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${b}`)).status).toBeLessThan(300);
    expect((await post(`/f/${both.id}.json`, { EMAIL: "b@example.com", [`list_${a}`]: "1", [`list_${b}`]: "1" })).status).toBe(200);
    expect((await post(`/f/${onlyB.id}.json`, { EMAIL: "c@example.com" })).status).toBe(200);
    expect(await membersOf(panel, a)).toEqual(["a@example.com", "b@example.com"]);
    const replaced = await admin("PUT", `/panels/${panel.id}/forms/${both.id}`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a], double_opt_in: false, consent_text: "Email me, please." });
    expect(replaced.status, JSON.stringify(replaced.body)).toBeLessThan(300);
    expect((await post(`/f/${both.id}.json`, { EMAIL: "d@example.com" })).status).toBe(200);
    // One act's records share their millisecond, so their id order is not theirs: sorted by address and list.
    const records = (await consentOf(panel)).map((r: any) => [r.pk_value, r.list_id, r.text]);
    records.sort((x, y) => String(x[0]).localeCompare(String(y[0])) || Number(x[1]) - Number(y[1]));
    expect(records).toEqual([
      ["a@example.com", a, "Email me."],
      ["a@example.com", b, "Email me."],
      ["b@example.com", a, "Email me."],
      ["c@example.com", null, "Stories, please."],
      ["d@example.com", a, "Email me, please."],
    ]);
  });

  it("refuses a missing or bad value with the page again, the value kept and nothing written", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }, { attribute: "NAME", required: true }], lists: [a], double_opt_in: false });
    const before = await panelSnapshot(panel.id);
    const answer = await post(`/f/${form.id}`, { EMAIL: "not-an-address", NAME: "" });
    expect(answer.status).toBe(400);
    const text = await answer.text();
    expect(text).toContain('value="not-an-address"');
    expect(text).toContain('aria-invalid="true"');
    expect(text).toMatch(/id="[^"]+-name-error">is required</);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("a body of the wrong type, too large, not JSON, or with values of the wrong kind is a 4xx naming the field, and writes nothing", async () => {
    const panel = await createPanel();
    expect((await admin("PUT", `/panels/${panel.id}/attributes/AGE`, { type: "integer" })).status).toBeLessThan(300);
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }, { attribute: "AGE" }], lists: [a], double_opt_in: false });
    const before = await panelSnapshot(panel.id);
    const send = async (body: string, contentType: string) => {
      const answer = await call(`/f/${form.id}.json`, { method: "POST", headers: { "content-type": contentType, "cf-connecting-ip": newIp() }, body });
      const errors: Array<{ field: string }> = ((await answer.json()) as any).errors;
      return { status: answer.status, fields: [...new Set(errors.map((e) => e.field))].sort() };
    };
    expect(await send("hello", "text/plain")).toEqual({ status: 400, fields: ["EMAIL"] });
    expect(await send('{"EMAIL":', "application/json")).toEqual({ status: 400, fields: ["body"] });
    expect(await send('["a@example.com"]', "application/json")).toEqual({ status: 400, fields: ["body"] });
    expect(await send(`EMAIL=${"a".repeat(70_000)}`, "application/x-www-form-urlencoded")).toEqual({ status: 413, fields: ["body"] });
    expect(await send(JSON.stringify({ EMAIL: { address: "a@example.com" } }), "application/json")).toEqual({ status: 400, fields: ["EMAIL"] });
    expect(await send(JSON.stringify({ EMAIL: "a@example.com", AGE: ["7"], PLAN: { gold: true } }), "application/json")).toEqual({ status: 400, fields: ["AGE"] });
    // The hosted page's plain post: the page says why, with the same status.
    expect((await post(`/f/${form.id}`, { EMAIL: "a".repeat(70_000) })).status).toBe(413);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("a filled honeypot is answered as a success and stores nothing", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a], double_opt_in: false });
    const before = await panelSnapshot(panel.id);
    const answer = await post(`/f/${form.id}`, { EMAIL: "bot@example.com", hp_website: "http://spam.example" });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain("You are subscribed");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("JSON: CORS by the form's allowed origins, a preflight too; another origin is refused", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a], double_opt_in: false, allowed_origins: ["https://shop.example"], thank_you_text: "Welcome aboard." });
    const preflight = await call(`/f/${form.id}.json`, { method: "OPTIONS", headers: { origin: "https://shop.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://shop.example");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect((await call(`/f/${form.id}.json`, { method: "OPTIONS", headers: { origin: "https://evil.example" } })).status).toBe(403);

    const json = (origin: string, body: unknown) =>
      call(`/f/${form.id}.json`, { method: "POST", headers: { origin, "content-type": "application/json", "cf-connecting-ip": newIp() }, body: JSON.stringify(body) });
    const ok = await json("https://shop.example", { email: "bo@example.com" });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://shop.example");
    expect(await ok.json()).toEqual({ status: "subscribed", message: "Welcome aboard.", redirect_url: null });
    expect(await membersOf(panel, a)).toEqual(["bo@example.com"]);

    const bad = await json("https://shop.example", { email: "nope" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).errors).toEqual([{ field: "EMAIL", message: expect.any(String) }]);

    const evil = await json("https://evil.example", { email: "eve@example.com" });
    expect(evil.status).toBe(403);
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    expect(await membersOf(panel, a)).toEqual(["bo@example.com"]);
    // A plain form post from a page of another site is refused too; the hosted page's own origin may.
    expect((await post(`/f/${form.id}`, { EMAIL: "eve@example.com" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await post(`/f/${form.id}`, { EMAIL: "cy@example.com" }, { origin: new URL(BASE).origin })).status).toBe(200);
  });

  it("limits submissions per address and per IP; a refused one writes nothing", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }], lists: [a], double_opt_in: false });
    const answers: Response[] = [];
    for (let i = 0; i < 6; i++) answers.push(await post(`/f/${form.id}.json`, { EMAIL: "same@example.com", NAME: `Name ${i}` }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(((await answers[5]!.json()) as any).error).toContain("Too many signups for this address");
    // The refused sixth changed no value and recorded no consent.
    const row = await panelData.prepare("SELECT attrs FROM contacts WHERE panel_id = ? AND pk_value = 'same@example.com'").bind(panel.id).first<{ attrs: string }>();
    expect(JSON.parse(row!.attrs).NAME).toBe("Name 4");
    expect((await consentOf(panel)).length).toBe(5);

    const ip = newIp();
    const fromOneIp: number[] = [];
    for (let i = 0; i < 31; i++) fromOneIp.push((await post(`/f/${form.id}.json`, { EMAIL: `visitor${i}@example.com` }, { "cf-connecting-ip": ip })).status);
    expect(fromOneIp.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(fromOneIp[30]).toBe(429);
    // The refused visitor is no contact, no member, and has no consent record.
    expect(await countRows("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ? AND pk_value = 'visitor30@example.com'", panel.id)).toBe(0);
    expect(await membersOf(panel, a)).toHaveLength(31);
    expect((await consentOf(panel)).some((r: any) => r.pk_value === "visitor30@example.com")).toBe(false);
    // A submission refused by its IP's limit does not count against its address: it still has its five.
    for (let i = 0; i < 5; i++) {
      const refused = await post(`/f/${form.id}.json`, { EMAIL: "fresh@example.com" }, { "cf-connecting-ip": ip });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as any).error).toContain("Too many signups from this address");
    }
    const fresh = await post(`/f/${form.id}.json`, { EMAIL: "fresh@example.com" });
    expect(fresh.status, await fresh.clone().text()).toBe(200);

    // Housekeeping drops the counts once their window has ended (they limit nothing any more).
    const counts = () => countRows("SELECT COUNT(*) AS n FROM form_attempts WHERE panel_id = ?", panel.id);
    await housekeeping.run(env, Date.now());
    expect(await counts()).toBe(32);
    await housekeeping.run(env, Date.now() + 11 * 60_000);
    expect(await counts()).toBe(0);
  });

  it("submissions arriving together are limited as if they came one after another", async () => {
    const panel = await createPanel();
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], double_opt_in: false });
    // Each one's count and write are one transaction on the contact's shard.
    const together = await Promise.all(Array.from({ length: 8 }, () => post(`/f/${form.id}.json`, { EMAIL: "crowd@example.com" })));
    const statuses = together.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    const others = await Promise.all(Array.from({ length: 4 }, (_, i) => post(`/f/${form.id}.json`, { EMAIL: `crowd${i}@example.com` })));
    expect(others.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const { results } = await panelData.prepare("SELECT pk_value FROM contacts WHERE panel_id = ? ORDER BY pk_value").bind(panel.id).all<{ pk_value: string }>();
    expect(results.map((r) => r.pk_value)).toEqual(["crowd0@example.com", "crowd1@example.com", "crowd2@example.com", "crowd3@example.com", "crowd@example.com"]);
  });
});

describe("signup forms: Turnstile", () => {
  it("checks the answer at the siteverify URL with the panel's secret; a refused or missing answer subscribes no one and uses up no signup", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a], double_opt_in: false, turnstile_site_key: "0x4AAAAAAAsite" });
    await admin("PUT", `/panels/${panel.id}/form-settings`, { turnstile_secret: "turnstile-secret-1" });
    const page = await call(`/f/${form.id}`);
    expect(page.headers.get("content-security-policy")).toContain("script-src https://challenges.cloudflare.com; frame-src https://challenges.cloudflare.com");
    expect(await page.text()).toContain('class="cf-turnstile" data-sitekey="0x4AAAAAAAsite"');

    const bucket = receiver.bucket("turnstile");
    const overrides = { TURNSTILE_SITEVERIFY_URL: receiver.hookUrl(bucket) };
    const submit = (fields: Record<string, string>) =>
      fetchWith(overrides, new Request(`${BASE}/f/${form.id}.json`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": "203.0.113.9" }, body: new URLSearchParams(fields).toString() }));

    const missing = await submit({ EMAIL: "t1@example.com" });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).errors[0].field).toBe("cf-turnstile-response");

    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ success: false, "error-codes": ["invalid-input-response"] }) }]);
    const refused = await submit({ EMAIL: "t1@example.com", "cf-turnstile-response": "bad-answer" });
    expect(refused.status).toBe(400);
    expect(await membersOf(panel, a)).toEqual([]);
    // A challenge that could not be checked is the upstream's failure, and subscribes no one either.
    await receiver.script(bucket, [{ status: 503, body: "down" }]);
    const unavailable = await submit({ EMAIL: "t1@example.com", "cf-turnstile-response": "any-answer" });
    expect(unavailable.status).toBe(502);

    // Neither used up any of the address's five signups (its limits are counted only with a
    // passed challenge's write): five pass, the sixth is refused and writes nothing.
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ success: true }) }]);
    for (let i = 0; i < 5; i++) {
      const passed = await submit({ EMAIL: "t1@example.com", "cf-turnstile-response": `good-answer-${i}` });
      expect(passed.status, await passed.clone().text()).toBe(200);
    }
    expect(await membersOf(panel, a)).toEqual(["t1@example.com"]);
    const sixth = await submit({ EMAIL: "t1@example.com", "cf-turnstile-response": "good-answer-5" });
    expect(sixth.status).toBe(429);
    expect(((await sixth.json()) as any).error).toContain("Too many signups for this address");
    expect((await consentOf(panel)).map((r: any) => r.pk_value)).toEqual(Array(5).fill("t1@example.com"));

    const asked = await receiver.requests(bucket);
    expect(asked).toHaveLength(8);
    expect(Object.fromEntries(new URLSearchParams(asked[2]!.body))).toEqual({ secret: "turnstile-secret-1", response: "good-answer-0", remoteip: "203.0.113.9" });
  });
});

describe("signup forms: double opt-in", () => {
  it("joins the lists only when the single-use link is followed; a resubmission resends at most once per 10 minutes", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", title: "Deals weekly", fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }], lists: [a], consent_text: "Email me deals.", confirmation_text: "Check your inbox, please." });
    const mailer = keptMail();
    const submit = () =>
      fetchWith(
        { MAILER: mailer.MAILER },
        new Request(`${BASE}/f/${form.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": newIp() }, body: new URLSearchParams({ EMAIL: "dee@example.com", NAME: "Dee" }).toString() }),
      );
    const first = await submit();
    expect(first.status).toBe(200);
    expect(await first.text()).toContain("Check your inbox, please.");
    expect(mailer.mails).toHaveLength(1);
    const mail: KeptMail = mailer.mails[0]!;
    expect(mail.to).toBe("dee@example.com");
    expect(mail.subject).toBe("Confirm your subscription: Deals weekly");
    expect(mail.text).toContain("48 hours");
    const link = /https?:\/\/\S+\/f\/frm_\w+\/confirm\/[\w-]+/.exec(mail.text)![0];

    // Unconfirmed: the contact exists, but is no member of the list.
    expect(await countRows("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ? AND pk_value = 'dee@example.com'", panel.id)).toBe(1);
    expect(await membersOf(panel, a)).toEqual([]);
    expect(await countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id)).toBe(1);

    expect((await submit()).status).toBe(200);
    expect(mailer.mails).toHaveLength(1);

    const path = new URL(link).pathname;
    const page = await call(path);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Confirm my subscription");
    expect(await membersOf(panel, a)).toEqual([]); // opening the link (a mail scanner) confirms nothing
    // The token posted at another form's address (a mangled link, or a guess) confirms nothing and leaves the link working.
    const other = await formOf(panel, { name: "Other", fields: [{ attribute: "EMAIL" }], lists: [a] });
    expect((await call(path.replace(form.id, other.id), { method: "POST" })).status).toBe(404);
    expect(await countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id)).toBe(1);

    const confirmed = await call(path, { method: "POST", headers: { "cf-connecting-ip": "192.0.2.77" } });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain("Subscription confirmed");
    expect(await membersOf(panel, a)).toEqual(["dee@example.com"]);
    expect((await consentOf(panel)).map((r: any) => [r.kind, r.list_id, r.text])).toEqual([
      ["subscribe", a, "Email me deals."],
      ["confirm", a, "Email me deals."],
    ]);
    expect((await call(path, { method: "POST" })).status).toBe(404);
    expect(await countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id)).toBe(0);
  });

  it("is limited per address and per IP too; a refused submission creates no contact, signup or consent and sends no mail", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    expect((await admin("POST", `/panels/${panel.id}/contacts`, { attributes: { EMAIL: "known@example.com" } })).status).toBe(201);
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a] });
    const mailer = keptMail();
    const submit = (email: string, ip = newIp()) =>
      fetchWith({ MAILER: mailer.MAILER }, new Request(`${BASE}/f/${form.id}.json`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip }, body: new URLSearchParams({ EMAIL: email }).toString() }));
    const signups = () => countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id);

    const ip = newIp();
    for (let i = 0; i < 30; i++) expect((await submit(`doi${i}@example.com`, ip)).status).toBe(200);
    expect(await signups()).toBe(30);
    // Past the IP's limit: a new address (its contact would be created first) and a known one
    // (only its signup would be written) are both refused whole.
    for (const email of ["new@example.com", "known@example.com"]) {
      const refused = await submit(email, ip);
      expect(refused.status, email).toBe(429);
      expect(((await refused.json()) as any).error).toContain("Too many signups from this address");
    }
    expect(await countRows("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ? AND pk_value = 'new@example.com'", panel.id)).toBe(0);
    expect(await signups()).toBe(30);
    expect((await consentOf(panel)).filter((r: any) => r.pk_value === "new@example.com" || r.pk_value === "known@example.com")).toEqual([]);
    await expect.poll(() => mailer.mails.length).toBe(30);

    // A resubmission while the link was just sent writes nothing, yet counts: the address's
    // fifth is the last answered.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await submit("doi0@example.com")).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(mailer.mails.length).toBe(30);
  });

  it("a pending signup keeps no IP address or user agent while the panel's setting is off; turning it off forgets those already kept; housekeeping sweeps expired ones", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a] });
    const mailer = keptMail();
    const submit = (email: string) =>
      fetchWith(
        { MAILER: mailer.MAILER },
        new Request(`${BASE}/f/${form.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": newIp(), "user-agent": "Browser/3" }, body: new URLSearchParams({ EMAIL: email }).toString() }),
      );
    const pending = async (email: string) => (await admin("GET", `/panels/${panel.id}/contacts/${email}/export`)).body.unconfirmed_signups;

    expect((await submit("kept@example.com")).status).toBe(200);
    expect(await pending("kept@example.com")).toEqual([expect.objectContaining({ ip: expect.stringMatching(/^198\.51\.100\./), user_agent: "Browser/3" })]);
    // Off: what was kept is forgotten, and a new signup keeps nothing.
    expect((await admin("PUT", `/panels/${panel.id}/form-settings`, { consent_keeps_client: false })).status).toBe(200);
    expect(await pending("kept@example.com")).toEqual([expect.objectContaining({ ip: null, user_agent: null })]);
    expect((await submit("bare@example.com")).status).toBe(200);
    expect(await pending("bare@example.com")).toEqual([expect.objectContaining({ form_id: form.id, lists: [a], ip: null, user_agent: null })]);

    // Housekeeping leaves the links while they work and removes them once expired (48 hours).
    await housekeeping.run(env, Date.now());
    expect(await countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id)).toBe(2);
    await housekeeping.run(env, Date.now() + 49 * 3_600_000);
    expect(await countRows("SELECT COUNT(*) AS n FROM form_signups WHERE panel_id = ?", panel.id)).toBe(0);
    expect(await pending("bare@example.com")).toEqual([]);
  });

  it("a journey triggered by the list starts at the confirmation, not at the submission", async () => {
    const panel = await createPanel();
    const a = await listOf(panel, "Deals");
    const journey = await startJourney(panel, { name: "Welcome", trigger: { type: "list", listid: a }, steps: [{ id: "hi", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }] });
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [a] });
    const mailer = keptMail();
    const submitted = await fetchWith(
      { MAILER: mailer.MAILER },
      new Request(`${BASE}/f/${form.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": newIp() }, body: "EMAIL=jo%40example.com" }),
    );
    expect(submitted.status).toBe(200);
    const entered = async () => (await countersOf(journey)).entered;
    expect(await entered()).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM journey_list_entries WHERE panel_id = ?", panel.id)).toBe(0);
    const path = new URL(/https?:\/\/\S+\/f\/frm_\w+\/confirm\/[\w-]+/.exec(mailer.mails[0]!.text)![0]).pathname;
    const confirmed = await fetchWith({}, new Request(`${BASE}${path}`, { method: "POST" }));
    expect(confirmed.status).toBe(200);
    await expect.poll(entered, { timeout: 20_000 }).toBe(1);
  });

  it("an unconfirmed submission never changes an existing contact's values", async () => {
    const panel = await createPanel();
    await nameAttribute(panel);
    const a = await listOf(panel, "Deals");
    expect((await admin("POST", `/panels/${panel.id}/contacts`, { attributes: { EMAIL: "old@example.com", NAME: "Original" } })).status).toBe(201);
    const form = await formOf(panel, { name: "Join", fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }], lists: [a] });
    const mailer = keptMail();
    const answer = await fetchWith(
      { MAILER: mailer.MAILER },
      new Request(`${BASE}/f/${form.id}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "EMAIL=old%40example.com&NAME=Hijacked" }),
    );
    expect(answer.status).toBe(200);
    const row = await panelData.prepare("SELECT attrs FROM contacts WHERE panel_id = ? AND pk_value = 'old@example.com'").bind(panel.id).first<{ attrs: string }>();
    expect(JSON.parse(row!.attrs).NAME).toBe("Original");
    expect(mailer.mails).toHaveLength(1);
  });
});
