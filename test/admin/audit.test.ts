import { describe, expect, it } from "vitest";
import { defineActivity } from "../support/activity";
import { admin, createPanel, receiver } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";

const SECRET = `whsec_${btoa("a".repeat(32))}`;

/** An operator's admin calls under the panel's path. */
const callsAs = (operator: Parameters<typeof asOperator>[0], panel: { id: string }) => (method: string, path: string, body?: unknown) =>
  asOperator(operator, method, `/panels/${panel.id}${path}`, body);

/** The body of a call that must succeed (the failure names what the service said). */
async function ok(answer: Promise<{ status: number; body: any }>) {
  const { status, body } = await answer;
  expect(status, JSON.stringify(body)).toBeLessThan(300);
  return body;
}

describe("the panel's audit log", () => {
  it("records who changed keys, API mode, settings, users, operators, webhooks, campaigns and journeys; owners read it newest first", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const as = callsAs(owner, panel);

    await ok(as("PATCH", "", { api_mode: false }));
    await ok(as("PATCH", "", { name: "Renamed", timezone: "Asia/Kolkata" }));
    const user = await ok(as("POST", "/users", { email: "robot@example.com" }));
    await ok(as("POST", `/users/${user.id}/api-key`));
    await ok(as("PATCH", `/users/${user.id}`, { disabled: true }));
    // Adding an operator straight away is the admin token's (owners invite); the owner then changes and removes.
    const mate = (await admin("POST", `/panels/${panel.id}/operators`, { email: `mate-${panel.id}@example.com`, role: "viewer", password: "a long passphrase" })).body;
    await ok(as("PATCH", `/operators/${mate.id}`, { role: "marketer" }));
    await ok(as("DELETE", `/operators/${mate.id}`));
    const hook = await ok(as("POST", "/webhooks", { label: "Orders", url: receiver.url("/hooks/audit") }));
    await ok(as("PATCH", `/webhooks/${hook.id}`, { label: "Orders v2", signing_secret: SECRET }));
    const list = (await ok(as("POST", "/lists", { name: "Readers" }))).id;
    const campaign = await ok(
      as("POST", "/campaigns", { name: "Autumn", subject: "Hi", sender_name: "Shop", sender_email: "shop@example.com", html: "<p>Hi</p>", schedule_date: "2099-01-01 10:00:00", audience: { lists: [list] } }),
    );
    await defineActivity(panel, "browse");
    const journey = await ok(as("POST", "/journeys", { name: "Welcome", trigger: { type: "activity", activity: "browse" }, steps: [{ id: "d", type: "delay", for: "1h" }] }));
    for (const status of ["running", "paused", "running", "stopped"]) await ok(as("POST", `/journeys/${journey.id}/status`, { status }));
    // The admin token acts too; its entries name no operator.
    await ok(admin("PATCH", `/panels/${panel.id}`, { api_mode: true }));
    // A refused change records nothing.
    expect((await as("POST", `/journeys/${journey.id}/status`, { status: "running" })).status).toBe(409);

    const log = await ok(as("GET", "/audit?limit=100"));
    const actions = log.entries.map((e: any) => e.action);
    expect(actions).toEqual([
      "panel.api_mode_changed",
      "journey.stopped",
      "journey.resumed",
      "journey.paused",
      "journey.started",
      "journey.created",
      "activity.defined",
      "campaign.published",
      "list.created",
      "webhook.edited",
      "webhook.created",
      "operator.removed",
      "operator.role_changed",
      "operator.added",
      "user.disabled",
      "user.key_rotated",
      "user.created",
      "panel.settings_changed",
      "panel.api_mode_changed",
      // What createPanel and operatorWithRole did with the admin token.
      "operator.added",
      "user.created",
      "panel.api_mode_changed",
    ]);
    expect(log.entries[0]).toMatchObject({ actor: { kind: "admin_token" }, target: panel.id, detail: { api_mode: true } });
    expect(log.entries[18]).toMatchObject({ actor: { kind: "operator", id: owner.body.operator.id, email: owner.email }, detail: { api_mode: false } });
    expect(log.entries[19]).toMatchObject({ actor: { kind: "admin_token" }, detail: { email: owner.email, role: "owner" } });
    const byAction = (action: string) => log.entries.find((e: any) => e.action === action);
    expect(byAction("panel.settings_changed").detail).toEqual({ name: "Renamed", timezone: "Asia/Kolkata" });
    expect(byAction("user.key_rotated")).toMatchObject({ target: user.id, detail: { email: "robot@example.com" } });
    expect(byAction("operator.role_changed").detail).toMatchObject({ from: "viewer", to: "marketer" });
    expect(byAction("webhook.edited")).toMatchObject({ target: hook.id, detail: { label: "Orders v2", changed: { label: "Orders v2", signing_secret: "changed" } } });
    expect(byAction("campaign.published")).toMatchObject({ target: campaign.id, detail: { name: "Autumn" } });
    expect(byAction("journey.started").detail).toMatchObject({ name: "Welcome", from: "draft", to: "running" });
    expect(JSON.stringify(log)).not.toContain(SECRET.slice(6));
    expect(JSON.stringify(log)).not.toContain(user.api_key ?? "mk_");

    // Pages go on before the last entry shown; one action can be asked for.
    const first = await ok(as("GET", "/audit?limit=3"));
    expect(first.entries).toHaveLength(3);
    const second = await ok(as("GET", `/audit?limit=3&before=${first.next_cursor}`));
    expect(second.entries.map((e: any) => e.action)).toEqual(actions.slice(3, 6));
    expect((await ok(as("GET", "/audit?action=journey.paused"))).entries).toHaveLength(1);
    expect((await as("GET", "/audit?action=nope")).body.errors[0].field).toBe("action");

    // Owners only, and only their panel's.
    const marketer = await operatorWithRole(panel.id, "marketer");
    expect((await asOperator(marketer, "GET", `/panels/${panel.id}/audit`)).status).toBe(403);
    expect((await admin("GET", `/panels/${other.id}/audit`)).body.entries.map((e: any) => e.action)).toEqual(["user.created", "panel.api_mode_changed"]);
  });

  it("records journeys created and edited, segments, list deletes and empties, sender and tracking domains and the SMS provider, never the provider's secrets", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const as = callsAs(owner, panel);
    await defineActivity(panel, "browse");
    const definition = { name: "Welcome", trigger: { type: "activity", activity: "browse" }, steps: [{ id: "d", type: "delay", for: "1h" }] };
    const journey = await ok(as("POST", "/journeys", definition));
    await ok(as("PUT", `/journeys/${journey.id}`, { ...definition, name: "Welcome v2" }));
    const segment = await ok(as("POST", "/segments", { name: "Gmail", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@gmail.com" }] } }));
    await ok(as("PUT", `/segments/${segment.id}`, { name: "Gmail readers", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@gmail.com" }] } }));
    await ok(as("DELETE", `/segments/${segment.id}`));
    const list = await ok(as("POST", "/lists", { name: "Readers" }));
    await ok(as("POST", `/lists/${list.id}/empty`));
    await ok(as("DELETE", `/lists/${list.id}`));
    await ok(as("POST", "/sender-domains", { domain: "Mail.Example.com" }));
    await ok(as("DELETE", "/sender-domains/mail.example.com"));
    await ok(as("PUT", "/tracking-domain", { domain: "links.example.com" }));
    await ok(as("DELETE", "/tracking-domain"));
    await ok(as("PUT", "/sms", { provider: "msg91", authkey: "secret-authkey-123", sender_id: "SHOPIN", template_id: "flow1" }));
    // Refused changes record nothing.
    expect((await as("PUT", `/segments/${segment.id}`, { name: "Gone", match: { all: [] } })).status).toBeGreaterThanOrEqual(400);
    expect((await as("POST", "/sender-domains", { domain: "not a domain" })).status).toBe(400);

    const log = await ok(as("GET", "/audit?limit=100"));
    const mine = log.entries.filter((e: any) => e.actor.kind === "operator");
    expect(mine.map((e: any) => e.action)).toEqual([
      "sms.settings_changed",
      "tracking_domain.removed",
      "tracking_domain.set",
      "sender_domain.removed",
      "sender_domain.added",
      "list.deleted",
      "list.emptied",
      "list.created",
      "segment.deleted",
      "segment.edited",
      "segment.created",
      "journey.edited",
      "journey.created",
    ]);
    const byAction = (action: string) => mine.find((e: any) => e.action === action);
    expect(byAction("journey.edited")).toMatchObject({ target: journey.id, detail: { name: "Welcome v2" } });
    expect(byAction("segment.deleted")).toMatchObject({ target: segment.id, detail: { name: "Gmail readers" } });
    expect(byAction("list.emptied")).toMatchObject({ target: String(list.id), detail: { name: "Readers", removed: 0 } });
    expect(byAction("sender_domain.added").target).toBe("mail.example.com");
    expect(byAction("tracking_domain.set").target).toBe("links.example.com");
    expect(byAction("sms.settings_changed").detail).toEqual({ provider: "msg91" });
    expect(JSON.stringify(log)).not.toContain("secret-authkey-123");
  });

  it("records a marketer's SMS templates and stops by number (the number as its last four digits) and a contact added by hand, whose detail an erasure blanks", async () => {
    const panel = await createPanel();
    const marketer = await operatorWithRole(panel.id, "marketer");
    const as = callsAs(marketer, panel);
    const template = await ok(as("POST", "/sms/templates", { name: "Order", body: "Your order {{ORDER}} is on its way" }));
    await ok(as("PUT", `/sms/templates/${template.id}`, { name: "Order shipped", body: "Order {{ORDER}} shipped" }));
    await ok(as("DELETE", `/sms/templates/${template.id}`));
    await ok(as("PUT", "/sms/suppressions/919876543210", undefined));
    await ok(as("DELETE", "/sms/suppressions/919876543210"));
    await ok(as("POST", "/contacts", { attributes: { EMAIL: "hand@example.com", NAME: "Hand" } }));
    // Refused changes record nothing.
    expect((await as("DELETE", `/sms/templates/${template.id}`)).status).toBe(404);
    expect((await as("POST", "/contacts", { attributes: { EMAIL: "hand@example.com" } })).status).toBe(409);

    const read = async () => (await admin("GET", `/panels/${panel.id}/audit?limit=100`)).body.entries.filter((e: any) => e.actor.kind === "operator");
    const mine = await read();
    expect(mine.map((e: any) => [e.action, e.target])).toEqual([
      ["contact.added", expect.stringMatching(/^\d+$/)],
      ["sms.number_allowed", "…3210"],
      ["sms.number_stopped", "…3210"],
      ["sms.template_deleted", template.id],
      ["sms.template_replaced", template.id],
      ["sms.template_created", template.id],
    ]);
    expect(mine.every((e: any) => e.actor.email === marketer.email)).toBe(true);
    expect(JSON.stringify(mine)).not.toContain("9876543210");
    expect(mine[0].detail).toEqual({ key: "hand@example.com", lists: [] });
    expect(mine[4].detail).toEqual({ name: "Order shipped", body: { before: "Your order {{ORDER}} is on its way", after: "Order {{ORDER}} shipped" } });

    await ok(as("PATCH", "/contacts/hand@example.com", { attributes: { NAME: "Hand II" } }));
    expect((await read())[0]).toMatchObject({ action: "contact.edited", detail: { key: "hand@example.com" } });
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/hand@example.com`)).status).toBe(200);
    const after = await read();
    expect(after.filter((e: any) => e.action.startsWith("contact.")).map((e: any) => [e.action, e.detail])).toEqual([
      ["contact.edited", { erased: true }],
      ["contact.added", { erased: true }],
    ]);
    expect(JSON.stringify(after)).not.toContain("hand@example.com");
  });
});
