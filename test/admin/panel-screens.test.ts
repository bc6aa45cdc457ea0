import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, apiFor, createPanel } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";
import { broadcastData, scheduleIn } from "../support/broadcasts";

async function addContacts(panel: Awaited<ReturnType<typeof createPanel>>, emails: string[]) {
  const api = apiFor(panel);
  for (const email of emails) {
    const added = await api("contact", "add", { data: { EMAIL: email, NAME: email.split("@")[0] } });
    expect(added.body.result).toBe("Success");
  }
}

describe("panel screens: contacts", () => {
  it("finds contacts by primary-key prefix in key order and pages on, and by exact key", async () => {
    const panel = await createPanel();
    await addContacts(panel, ["bea@example.com", "ada@example.com", "adam@example.com", "adele@example.com", "zed@example.com"]);
    const first = await admin("GET", `/panels/${panel.id}/contacts?q=AD&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.contacts.map((c: any) => c.key)).toEqual(["ada@example.com", "adam@example.com"]);
    expect(first.body.next_cursor).toBe("adam@example.com");
    const second = await admin("GET", `/panels/${panel.id}/contacts?q=ad&limit=2&after=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.contacts.map((c: any) => c.key)).toEqual(["adele@example.com"]);
    expect(second.body.next_cursor).toBeNull();

    const exact = await admin("GET", `/panels/${panel.id}/contacts?q=Ada@Example.com&match=exact`);
    expect(exact.body.contacts.map((c: any) => c.key)).toEqual(["ada@example.com"]);
    const none = await admin("GET", `/panels/${panel.id}/contacts?q=ad&match=exact`);
    expect(none.status).toBe(400);
    expect(none.body.errors[0].field).toBe("q");

    const all = await admin("GET", `/panels/${panel.id}/contacts`);
    expect(all.body.contacts).toHaveLength(5);
    expect((await admin("GET", `/panels/${panel.id}/contacts?limit=1000`)).status).toBe(400);
  });

  it("reads one contact with attributes and lists; another panel's contact is 404", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    await addContacts(panel, ["ada@example.com"]);
    const list = await admin("POST", `/panels/${panel.id}/lists`, { name: "VIP" });
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list.body.id });
    const read = await admin("GET", `/panels/${panel.id}/contacts/ada@example.com`);
    expect(read.body).toMatchObject({ key: "ada@example.com", attributes: { EMAIL: "ada@example.com", NAME: "ada" }, lists: [{ id: list.body.id, name: "VIP" }] });
    expect((await admin("GET", `/panels/${other.id}/contacts/ada@example.com`)).status).toBe(404);
  });
});

describe("panel screens: lists and uploads", () => {
  it("creates, renames and deletes lists; names are unique", async () => {
    const panel = await createPanel();
    const created = await admin("POST", `/panels/${panel.id}/lists`, { name: "Customers" });
    expect(created.status).toBe(201);
    expect((await admin("POST", `/panels/${panel.id}/lists`, { name: "customers" })).status).toBe(409);
    expect((await admin("POST", `/panels/${panel.id}/lists`, { name: " " })).body.errors[0].field).toBe("name");
    const renamed = await admin("PATCH", `/panels/${panel.id}/lists/${created.body.id}`, { name: "Buyers" });
    expect(renamed.body.name).toBe("Buyers");
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body.lists.map((l: any) => l.name)).toEqual(["Buyers"]);
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${created.body.id}`)).status).toBe(200);
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${created.body.id}`)).status).toBe(404);
    expect((await admin("DELETE", `/panels/${panel.id}/lists/abc`)).status).toBe(400);
  });

  it("imports an uploaded CSV into the list through the import engine", async () => {
    const panel = await createPanel();
    const owner = await operatorWithRole(panel.id, "marketer");
    const list = await asOperator(owner, "POST", `/panels/${panel.id}/lists`, { name: "Uploads" });
    const { BASE, call } = await import("../support/helpers");
    const response = await call(`/admin/v1/panels/${panel.id}/lists/${list.body.id}/uploads?name=people.csv`, {
      method: "POST",
      headers: { cookie: owner.cookie, origin: BASE, "x-csrf-token": owner.csrf, "content-type": "text/csv" },
      body: "EMAIL,NAME\nup1@example.com,One\nup2@example.com,Two\nbad,Three\n",
    });
    expect(response.status).toBe(202);
    const { jobid } = (await response.json()) as { jobid: string };
    let job: any;
    for (let i = 0; i < 100; i++) {
      job = (await admin("GET", `/panels/${panel.id}/jobs/${jobid}`)).body;
      if (job.status === "completed" || job.status === "failed") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job).toMatchObject({ status: "completed", created: 2, failed: 1, listid: list.body.id });
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body.lists[0].count).toBe(2);
    const stored = await env.FILES.list({ prefix: `panel-uploads/${panel.id}/` });
    expect(stored.objects).toHaveLength(1);
  });

  it("refuses an empty upload and a viewer's upload", async () => {
    const panel = await createPanel();
    const list = await admin("POST", `/panels/${panel.id}/lists`, { name: "L" });
    const viewer = await operatorWithRole(panel.id, "viewer");
    const { BASE, call } = await import("../support/helpers");
    const upload = (headers: Record<string, string>, body: string) =>
      call(`/admin/v1/panels/${panel.id}/lists/${list.body.id}/uploads`, { method: "POST", headers: { origin: BASE, ...headers }, body });
    expect((await upload({ cookie: viewer.cookie, "x-csrf-token": viewer.csrf }, "EMAIL\na@example.com\n")).status).toBe(403);
    expect((await upload({ authorization: "Bearer test-admin-token" }, "")).status).toBe(400);
  });
});

describe("panel screens: overview", () => {
  it("counts the panel's contacts, lists and running journeys", async () => {
    const panel = await createPanel();
    await addContacts(panel, ["a@example.com", "b@example.com"]);
    await admin("POST", `/panels/${panel.id}/lists`, { name: "One" });
    const overview = await admin("GET", `/panels/${panel.id}/overview`);
    expect(overview.body).toEqual({ contacts: 2, lists: 1, events_today: expect.any(Number), sends_today: 0, running_journeys: 0, webhooks_not_operational: 0, email: { provider: "outbox", real_email: false, problem: null } });
  });
});

describe("panel screens: campaigns", () => {
  it("creates and schedules a broadcast under the API's rules and lists it with its counters", async () => {
    const panel = await createPanel();
    const base = `/panels/${panel.id}/campaigns`;
    expect((await admin("GET", base)).body).toEqual({ campaigns: [], timezone: "UTC", lead_minutes: 90 });

    const tooSoon = await admin("POST", base, await broadcastData({ schedule_date: scheduleIn(30) }));
    expect(tooSoon.status).toBe(400);
    expect(tooSoon.body.errors[0]).toMatchObject({ field: "schedule_date", message: expect.stringMatching(/at least 90 minutes ahead/) });
    expect((await admin("GET", base)).body.campaigns).toEqual([]);

    const data = await broadcastData();
    const created = await admin("POST", base, data);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: data.campaign_name, status: "scheduled", schedule_date: data.schedule_date, counters: { recipients: 0 } });
    const listed = await admin("GET", base);
    expect(listed.body.campaigns.map((c: any) => [c.id, c.status])).toEqual([[created.body.id, "scheduled"]]);

    // The list name is the panel's once: a second request with it is refused like the API's.
    const again = await admin("POST", base, { ...data, campaign_name: "Again" });
    expect(again.status).toBe(409);
  });
});
