import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN_ROUTES } from "../../src/admin";
import type { AdminRoute } from "../../src/admin/route";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { defineActivity } from "../support/activity";
import { admin, apiFor, call, createPanel } from "../support/helpers";
import { act } from "../support/journeys";
import { createWebhook } from "../support/webhooks";
import { waitForCampaign } from "../support/broadcasts";

/** The route that answers `method path` (a path under /admin/v1, query string left out). */
function routeOf(method: string, path: string): AdminRoute {
  const bare = path.split("?")[0]!;
  const route = ADMIN_ROUTES.find(
    (r) => r.method === method && new RegExp(`^${r.path.replace(/:\w+/g, "[^/]+")}$`).test(bare),
  );
  if (!route) throw new Error(`no admin route ${method} ${bare}`);
  return route;
}

/** Calls the route and checks its answer against the schema the route declares. */
async function answersAsDeclared(method: string, path: string, body?: unknown): Promise<any> {
  const route = routeOf(method, path);
  const answer = await admin(method, path, body);
  expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(route.status ?? 200);
  expect(route.response, `${method} ${route.path} declares no response schema`).toBeDefined();
  const parsed = route.response!.safeParse(answer.body);
  expect(parsed.success, `${method} ${route.path}: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(answer.body)}`).toBe(true);
  return answer.body;
}

describe("admin routes answer what they declare", () => {
  it("every route the panel calls, with realistic data, parses with its declared response schema", async () => {
    const panel = await createPanel();
    const p = `/panels/${panel.id}`;
    const api = apiFor(panel);
    for (const email of ["ada@example.com", "bob@example.com"]) await api("contact", "add", { data: { EMAIL: email, NAME: email.split("@")[0] } });
    const activity = await defineActivity(panel, "Viewed", { sku: "string" });
    await act(panel, activity, "ada@example.com", { activity_params: { sku: "A1" } });
    await createWebhook(panel);

    await answersAsDeclared("GET", p);
    await answersAsDeclared("PATCH", p, { name: "Renamed" });
    await answersAsDeclared("GET", `${p}/overview`);
    await answersAsDeclared("GET", `${p}/overview/history?days=7`);
    await answersAsDeclared("PUT", `${p}/attributes/CITY`, { type: "string" });
    await answersAsDeclared("GET", `${p}/attributes`);
    await answersAsDeclared("GET", `${p}/activities`);
    await answersAsDeclared("GET", `${p}/activities/${activity}`);
    // An array parameter (CONTRACT 10) is answered as defined: {"type":"array","of":{...}}.
    const cart = await answersAsDeclared("POST", `${p}/activities`, { name: "Cart", params: { total: "float", items: { type: "array", of: { prid: "integer", name: "string" } } } });
    expect(cart.params.items).toEqual({ type: "array", of: { prid: "integer", name: "string" } });
    const user = await answersAsDeclared("POST", `${p}/users`, { email: "app@example.com" });
    await answersAsDeclared("GET", `${p}/users`);
    await answersAsDeclared("POST", `${p}/users/${user.id}/api-key`);
    const operator = await answersAsDeclared("POST", `${p}/operators`, { email: "grace@example.com", role: "viewer", password: "a long passphrase" });
    await answersAsDeclared("GET", `${p}/operators`);
    await answersAsDeclared("PATCH", `${p}/operators/${operator.id}`, { role: "marketer" });

    await answersAsDeclared("GET", `${p}/contacts?q=ad`);
    await answersAsDeclared("GET", `${p}/contacts/ada@example.com`);
    await answersAsDeclared("POST", `${p}/contacts`, { attributes: { EMAIL: "cy@example.com", NAME: "Cy" } });
    await answersAsDeclared("PATCH", `${p}/contacts/ada@example.com`, { attributes: { CITY: "Pune" } });
    await answersAsDeclared("GET", `${p}/contacts/ada@example.com/events?limit=20`);
    await answersAsDeclared("GET", `${p}/contacts/ada@example.com/journeys`);
    await answersAsDeclared("GET", `${p}/contacts/ada@example.com/preferences`);
    await answersAsDeclared("PUT", `${p}/contacts/ada@example.com/preferences`, { push: "unsubscribed" });

    const list = await answersAsDeclared("POST", `${p}/lists`, { name: "VIP" });
    await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list.id });
    await answersAsDeclared("GET", `${p}/lists`);
    await answersAsDeclared("PATCH", `${p}/lists/${list.id}`, { name: "Very VIP" });
    await answersAsDeclared("GET", `${p}/lists/${list.id}/members?limit=25`);
    await answersAsDeclared("GET", `${p}/imports?list=${list.id}`);

    const segment = await answersAsDeclared("POST", `${p}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    await answersAsDeclared("POST", `${p}/segments/count`, { match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    await answersAsDeclared("GET", `${p}/segments`);
    await answersAsDeclared("GET", `${p}/segments/${segment.id}`);
    await answersAsDeclared("GET", `${p}/segments/${segment.id}/history?days=30`);
    const exported = await answersAsDeclared("POST", `${p}/segments/${segment.id}/export`, {});
    await answersAsDeclared("GET", `${p}/jobs/${exported.jobid}`);

    const journey = await answersAsDeclared("POST", `${p}/journeys`, {
      name: "Welcome",
      trigger: { type: "activity", activity: "Viewed" },
      steps: [{ id: "m", type: "sms", text: "Hi" }],
    });
    await answersAsDeclared("GET", `${p}/journeys`);
    await answersAsDeclared("GET", `${p}/journeys/${journey.id}`);
    await answersAsDeclared("POST", `${p}/journeys/${journey.id}/status`, { status: "running" });
    await answersAsDeclared("GET", `${p}/journeys/${journey.id}/versions`);
    await answersAsDeclared("GET", `${p}/journeys/${journey.id}/report?from=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`);

    const campaign = await answersAsDeclared("POST", `${p}/campaigns`, {
      name: "Autumn",
      subject: "Hello {{NAME}}",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: '<p>Hi</p><a href="https://shop.example.com/">Shop</a>',
      audience: { lists: [list.id] },
    });
    await publishDueBroadcasts(env, Date.now());
    await waitForCampaign(panel, campaign.id);
    await answersAsDeclared("GET", `${p}/campaigns`);
    await answersAsDeclared("GET", `${p}/campaigns/${campaign.id}`);
    await answersAsDeclared("GET", `${p}/campaigns/${campaign.id}/report`);
    await answersAsDeclared("GET", `${p}/campaigns/${campaign.id}/recipients?filter=all&after=0&limit=50`);
    await answersAsDeclared("POST", `${p}/campaigns/${campaign.id}/test`, { email: "ada@example.com" });
    const outbox = await answersAsDeclared("GET", `${p}/outbox?campaign=${campaign.id}&limit=20`);
    await answersAsDeclared("GET", `${p}/outbox/${outbox.messages[0].id}`);

    const webhooks = await answersAsDeclared("GET", `${p}/webhooks`);
    const hook = webhooks.webhooks[0].id;
    await answersAsDeclared("GET", `${p}/webhooks/${hook}`);
    await answersAsDeclared("PATCH", `${p}/webhooks/${hook}`, { label: "CRM" });
    await answersAsDeclared("POST", `${p}/webhooks/${hook}/test`);
    await answersAsDeclared("POST", `${p}/webhooks/${hook}/enable`);
    await answersAsDeclared("GET", `${p}/webhooks/${hook}/deliveries`);

    await answersAsDeclared("POST", `${p}/sender-domains`, { domain: "mail.example.com" });
    await answersAsDeclared("GET", `${p}/sender-domains`);
    await answersAsDeclared("PUT", `${p}/tracking-domain`, { domain: "links.example.com" });
    await answersAsDeclared("GET", `${p}/tracking-domain`);
    await answersAsDeclared("GET", `${p}/sms`);
    await answersAsDeclared("POST", `${p}/sms/templates`, { name: "Cart", body: "Hi {{NAME | there}}, your cart waits." });
    await answersAsDeclared("GET", `${p}/sms/templates`);
    const template = await answersAsDeclared("POST", `${p}/email-templates`, { name: "Welcome", subject: "Hi {{NAME|there}}", preheader: "Soon", body_html: "<p>Hi</p>" });
    await answersAsDeclared("GET", `${p}/email-templates`);
    await answersAsDeclared("GET", `${p}/email-templates/${template.id}`);
    await answersAsDeclared("PUT", `${p}/email-templates/${template.id}`, { name: "Welcome", subject: "Hello", body_html: "<p>Hello</p>" });
    await answersAsDeclared("DELETE", `${p}/email-templates/${template.id}`);
    await answersAsDeclared("POST", `${p}/sms/preview`, { body: "Hi {{NAME | there}}" });
    await answersAsDeclared("GET", `${p}/sms/suppressions?limit=200`);
    await answersAsDeclared("GET", `${p}/push`);
    await answersAsDeclared("GET", `${p}/audit?limit=50`);

    await answersAsDeclared("POST", `${p}/lists/${list.id}/empty`);
    const erased = await answersAsDeclared("DELETE", `${p}/contacts/bob@example.com`);
    await answersAsDeclared("GET", `${p}/erasures/${erased.erasure_id}`);
  });
});

describe("/openapi.json carries each admin route's answer", () => {
  it("every admin route declares a JSON response schema, or what its non-JSON answer is", async () => {
    const doc = (await (await call("/openapi.json")).json()) as any;
    const missing: string[] = [];
    for (const route of ADMIN_ROUTES) {
      const operation = doc.paths[`/admin/v1${route.path.replace(/:(\w+)/g, "{$1}")}`][route.method.toLowerCase()];
      const success = operation.responses[String(route.status ?? 200)];
      const schema = success?.content?.["application/json"]?.schema;
      const described = route.raw !== undefined && success?.description === route.raw.description;
      if (!schema && !described) missing.push(`${route.method} ${route.path}`);
    }
    expect(missing).toEqual([]);
    const contact = doc.paths["/admin/v1/panels/{panel}/contacts/{key}"].get.responses["200"].content["application/json"].schema;
    expect(contact.required).toEqual(expect.arrayContaining(["key", "attributes", "lists", "messages", "journeys", "suppression"]));
    const removed = doc.paths["/admin/v1/panels/{panel}/segments/{segment}"].delete.responses;
    expect(Object.keys(removed)).toContain("204");
  });
});
