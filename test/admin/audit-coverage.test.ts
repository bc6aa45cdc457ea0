import { describe, expect, it } from "vitest";
import { admin, apiFor, call, createPanel, receiver } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";

const ok = async (answer: Promise<{ status: number; body: any }>) => {
  const { status, body } = await answer;
  expect(status, JSON.stringify(body)).toBeLessThan(300);
  return body;
};

describe("the audit log of every configuration change", () => {
  it("records a marketer's attributes, activities, lists, imports, contact edits and unsubscribes, with before and after", async () => {
    const panel = await createPanel();
    const marketer = await operatorWithRole(panel.id, "marketer");
    const owner = await operatorWithRole(panel.id, "owner");
    const as = (method: string, path: string, body?: unknown) => asOperator(marketer, method, `/panels/${panel.id}${path}`, body);
    await ok(apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" } }));

    await ok(as("PUT", "/attributes/plan", { type: "string" }));
    await ok(as("PUT", "/attributes/plan", { type: "string" })); // repeating it changes nothing
    const activity = await ok(as("POST", "/activities", { name: "browse", params: { url: "string" } }));
    const list = await ok(as("POST", "/lists", { name: "Readers" }));
    await ok(as("PATCH", `/lists/${list.id}`, { name: "Loyal readers" }));
    const job = await ok(as("POST", `/lists/${list.id}/imports`, { url: receiver.url("/files/audit.csv?X-Amz-Signature=sig-secret-123") }));
    await ok(as("PATCH", "/contacts/ada@example.com", { attributes: { NAME: "Ada L.", PLAN: "gold" } }));
    await ok(as("PUT", "/contacts/ada@example.com/preferences", { email: "unsubscribed" }));
    // A refused change records nothing.
    expect((await as("POST", "/lists", { name: "loyal READERS" })).status).toBe(409);

    const log = await ok(asOperator(owner, "GET", `/panels/${panel.id}/audit?actor=${marketer.body.operator.id}`));
    expect(log.entries.map((e: any) => e.action)).toEqual([
      "contact.preferences_changed",
      "contact.edited",
      "import.started",
      "list.renamed",
      "list.created",
      "activity.defined",
      "attribute.defined",
    ]);
    for (const entry of log.entries) expect(entry.actor).toEqual({ kind: "operator", id: marketer.body.operator.id, email: marketer.email });
    const byAction = (action: string) => log.entries.find((e: any) => e.action === action);
    expect(byAction("attribute.defined")).toMatchObject({ target_kind: "attribute", target: "PLAN", detail: { name: "PLAN", type: "string" } });
    expect(byAction("activity.defined")).toMatchObject({ target: activity.activityid, detail: { name: "browse", params: { url: "string" } } });
    expect(byAction("list.created")).toMatchObject({ target: String(list.id), detail: { name: "Readers" } });
    expect(byAction("list.renamed").detail).toEqual({ name: { before: "Readers", after: "Loyal readers" } });
    expect(byAction("import.started")).toMatchObject({ target: job.jobid, detail: { list: { id: list.id, name: "Loyal readers" }, source: "url" } });
    // A presigned link's signature is a secret: the query is redacted.
    expect(byAction("import.started").detail.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\/audit\.csv\?(\[|%5B)redacted(\]|%5D)$/);
    expect(JSON.stringify(log)).not.toContain("sig-secret-123");
    expect(byAction("contact.edited").detail).toEqual({ key: "ada@example.com", changed: { NAME: { before: "Ada", after: "Ada L." }, PLAN: { before: null, after: "gold" } } });
    expect(byAction("contact.preferences_changed").detail).toEqual({ changed: { email: { before: "subscribed", after: "unsubscribed" } } });
  });

  it("records configuration changed with an API key, naming the key's user, but not contact data written through the API", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const { listid } = await ok(api("lists", "add", { listname: "From the API", desc: "synced" }));
    await ok(api("lists", "edit", { id: listid, listname: "From the API v2" }));
    await ok(api("contact", "add", { data: { EMAIL: "bob@example.com" }, listid }));
    await ok(api("contact", "update", { data: { EMAIL: "bob@example.com", NAME: "Bob" } }));
    await ok(api("lists", "emptylist", { listname: "From the API v2" }));
    await ok(api("lists", "delete", { listname: "From the API v2" }));

    const log = await ok(admin("GET", `/panels/${panel.id}/audit?actor=api_key`));
    expect(log.entries.map((e: any) => e.action)).toEqual(["list.deleted", "list.emptied", "list.renamed", "list.created"]);
    for (const entry of log.entries) expect(entry.actor).toEqual({ kind: "api_key", user_id: panel.userId, email: expect.any(String) });
    expect(log.entries[3]).toMatchObject({ target: String(listid), detail: { name: "From the API", description: "synced" } });
    expect(log.entries[2].detail).toEqual({ name: { before: "From the API", after: "From the API v2" } });
    const everything = await ok(admin("GET", `/panels/${panel.id}/audit?limit=200`));
    expect(everything.entries.filter((e: any) => e.action.startsWith("contact."))).toEqual([]);
  });

  it("filters by actor, action, kind of object and time, refuses bad filters, and downloads the log as formula-safe CSV", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "owner");
    const as = (method: string, path: string, body?: unknown) => asOperator(owner, method, `/panels/${panel.id}${path}`, body);
    await ok(as("POST", "/lists", { name: "=HYPERLINK(\"http://evil.example\")" }));
    await ok(apiFor(panel)("lists", "add", { listname: "Plain" }));
    await ok(as("PUT", "/attributes/tier", { type: "integer" }));

    const actions = async (query: string) => (await ok(as("GET", `/audit?${query}`))).entries.map((e: any) => e.action);
    expect(await actions("target_kind=list")).toEqual(["list.created", "list.created"]);
    expect(await actions("target_kind=list&actor=api_key")).toEqual(["list.created"]);
    expect(await actions(`actor=${owner.body.operator.id}`)).toEqual(["attribute.defined", "list.created"]);
    expect(await actions("action=attribute.defined")).toEqual(["attribute.defined"]);
    expect(await actions("actor=admin_token")).toEqual(["operator.added", "user.created", "panel.api_mode_changed"]);
    expect(await actions("to=2000-01-01")).toEqual([]);
    expect(await actions(`from=2000-01-01&to=${new Date(Date.now() + 86_400_000).toISOString()}&target_kind=attribute`)).toEqual(["attribute.defined"]);
    expect(await actions(`from=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    for (const [query, field] of [["target_kind=planet", "target_kind"], ["from=yesterday", "from"], ["from=2025-02-01&to=2025-01-01", "to"], ["format=xml", "format"]]) {
      const refused = await as("GET", `/audit?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body.errors[0].field, query).toBe(field);
    }

    const response = await call(`/admin/v1/panels/${panel.id}/audit?format=csv&target_kind=list`, { headers: { cookie: owner.cookie } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/csv");
    expect(response.headers.get("content-disposition")).toContain("attachment");
    const lines = (await response.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("id,at,actor_kind,actor_id,actor_email,action,target_kind,target,detail");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain(",api_key,");
    expect(lines[1]).toContain(`${panel.userId}`);
    expect(lines[2]).toContain(`,operator,${owner.body.operator.id},${owner.email},list.created,list,`);
    // The list's name sits inside the detail's JSON, quoted; a cell that would start a formula is neutralised.
    expect(lines[2]).toContain('HYPERLINK');
    expect(lines.every((line) => !/(^|,)=/.test(line))).toBe(true);
    // Marketers cannot read or download it.
    const marketer = await operatorWithRole(panel.id, "marketer");
    expect((await call(`/admin/v1/panels/${panel.id}/audit?format=csv`, { headers: { cookie: marketer.cookie } })).status).toBe(403);
  });
});
