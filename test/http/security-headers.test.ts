import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { htmlOf } from "../support/broadcasts";
import { ADMIN_TOKEN, admin, apiFor, call, createPanel } from "../support/helpers";
import { unsubscribeUris } from "../support/mime";
import { act, cartPanel, messagesOf, startJourney } from "../support/journeys";

// Security headers of what the Worker renders and answers (issue 44). The panel's pages and
// hashed files come from the asset server, which this pool does not run: test/e2e/security-headers.test.ts.

function directives(response: Response): Map<string, string> {
  const csp = response.headers.get("content-security-policy");
  expect(csp, "Content-Security-Policy").toBeTruthy();
  return new Map(csp!.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values.join(" ")]));
}

function expectNeverFramedOrSniffed(response: Response): Map<string, string> {
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  expect(response.headers.get("x-frame-options")).toBe("DENY");
  const csp = directives(response);
  expect(csp.get("frame-ancestors")).toBe("'none'");
  return csp;
}

/** A link page: no script, nothing loaded from anywhere, inline style only, its token never sent on as a referrer. */
async function expectLinkPage(response: Response) {
  expect(response.headers.get("content-type")).toMatch(/^text\/html/);
  const csp = expectNeverFramedOrSniffed(response);
  expect(csp.get("default-src")).toBe("'none'");
  expect(csp.has("script-src")).toBe(false);
  expect(csp.get("style-src")).toBe("'unsafe-inline'");
  expect(csp.get("form-action")).toBe("'self'");
  expect(response.headers.get("referrer-policy")).toBe("no-referrer");
  expect(await response.text()).not.toMatch(/<script/i);
}

describe("security headers", () => {
  it("the unsubscribe and preference pages, and a click's redirect, keep the link's token to themselves and cannot be framed", async () => {
    const panel = await createPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" } });
    const { cart } = await cartPanel(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Hi", html: '<p>Hi <a href="https://shop.example.com/cart">your cart</a></p>', sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    await act(panel, cart, "ada@example.com");
    const [sent] = await messagesOf(panel, "email");
    const raw = await (await env.FILES.get(`outbox/${panel.id}/${sent.msgid}.eml`))!.text();
    const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]!;
    const click = /http:\/\/127\.0\.0\.1:8787(\/t\/c\/[^"]+)"/.exec(htmlOf(raw))![1]!;

    const page = await call(unsubscribe);
    expect(page.status).toBe(200);
    await expectLinkPage(page);
    const preferences = await call(unsubscribe.replace("/t/u/", "/t/p/"));
    expect(preferences.status).toBe(200);
    await expectLinkPage(preferences);
    const done = await call(unsubscribe, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(done.status).toBe(200);
    await expectLinkPage(done);
    const invalid = await call("/t/u/not-a-token");
    expect(invalid.status).toBe(404);
    await expectLinkPage(invalid);

    const redirect = await call(click, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("https://shop.example.com/cart");
    expect(redirect.headers.get("referrer-policy")).toBe("no-referrer");
  });

  it("JSON answers of the envelope, the admin API and unknown paths: nosniff, nothing to load, never framed; CORS headers stay", async () => {
    const panel = await createPanel();
    const answers = [
      await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(panel.apiKey)}`),
      await call("/apiv2?type=lists&activity=getall"),
      await call("/health"),
      await call("/no/such/path", { headers: { accept: "application/json" } }),
    ];
    answers.push(await call(`/admin/v1/panels/${panel.id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
    for (const answer of answers) {
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      expect(expectNeverFramedOrSniffed(answer).get("default-src")).toBe("'none'");
    }
    const shop = "https://shop.example.com";
    expect((await admin("PATCH", `/panels/${panel.id}`, { cors_origins: [shop] })).status).toBe(200);
    const cors = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(panel.apiKey)}`, { headers: { origin: shop } });
    expect(cors.headers.get("access-control-allow-origin")).toBe(shop);
    expectNeverFramedOrSniffed(cors);
  });
});
