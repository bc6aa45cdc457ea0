import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { suppressAddress } from "../../src/store/suppressions";
import { defineActivity } from "../support/activity";
import { admin, apiFor, call, contactsOf, createPanel, panelData, panelSnapshot } from "../support/helpers";
import { act, startJourney } from "../support/journeys";
import { asOperator, operatorWithRole } from "../support/operators";
import { broadcastData, host, htmlOf, outbox, rawMessage, scheduleIn, waitForCampaign } from "../support/broadcasts";

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

describe("panel screens: a contact's attributes, messages and journeys", () => {
  async function peoplePanel() {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const data of [
      { EMAIL: "ada@example.com", NAME: "Ada", CITY: "Pune", AGE: 30 },
      { EMAIL: "bob@example.com", NAME: "Bob", CITY: "pune", AGE: 41 },
      { EMAIL: "cy@example.com", NAME: "Cy", CITY: "Delhi", AGE: 30 },
      { EMAIL: "dee@example.com", NAME: "Dee", CITY: "P%" },
    ]) {
      expect((await api("contact", "add", { data })).body.result).toBe("Success");
    }
    return panel;
  }

  it("finds contacts by one attribute's value, exact or by prefix for text, in key order with paging", async () => {
    const panel = await peoplePanel();
    const search = (query: string) => admin("GET", `/panels/${panel.id}/contacts?${query}`);
    const keys = (answer: { body: any }) => answer.body.contacts.map((c: any) => c.key);
    const city = await search("attribute=city&q=PUNE&match=exact");
    expect(city.status).toBe(200);
    expect(city.body.attribute).toBe("CITY");
    expect(keys(city)).toEqual(["ada@example.com", "bob@example.com"]);
    expect(keys(await search("attribute=CITY&q=pu"))).toEqual(["ada@example.com", "bob@example.com"]);
    // LIKE's wildcards in the text are plain characters.
    expect(keys(await search("attribute=CITY&q=P%25&match=exact"))).toEqual(["dee@example.com"]);
    expect(keys(await search("attribute=CITY&q=_une"))).toEqual([]);
    const age = await search("attribute=AGE&q=30&match=exact&limit=1");
    expect(keys(age)).toEqual(["ada@example.com"]);
    expect(age.body.next_cursor).toBe("ada@example.com");
    expect(keys(await search(`attribute=AGE&q=30&match=exact&limit=1&after=${encodeURIComponent(age.body.next_cursor)}`))).toEqual(["cy@example.com"]);
    // The primary key named as the attribute is the key search.
    expect(keys(await search("attribute=email&q=bo"))).toEqual(["bob@example.com"]);

    const refused = async (query: string, field: string, message: RegExp) => {
      const answer = await search(query);
      expect(answer.status, query).toBe(400);
      expect(answer.body.errors[0]).toMatchObject({ field, message: expect.stringMatching(message) });
    };
    await refused("attribute=AGE&q=3", "match", /exact value/);
    await refused("attribute=AGE&q=old&match=exact", "q", /integer/);
    await refused("attribute=SHOE&q=4&match=exact", "attribute", /no attribute named SHOE/);
    await refused("attribute=CITY", "q", /required/);
  });

  it("edits a contact's attributes under the API's rules, each refusal naming its field and changing nothing", async () => {
    const panel = await peoplePanel();
    const path = `/panels/${panel.id}/contacts/ada@example.com`;
    const marketer = await operatorWithRole(panel.id, "marketer");
    const edited = await asOperator(marketer, "PATCH", path, { attributes: { age: "31", CITY: null, NAME: "Ada L." } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.attributes).toEqual({ EMAIL: "ada@example.com", NAME: "Ada L.", AGE: 31 });
    // The API reads what the panel wrote.
    const viewed = await apiFor(panel)("contact", "view", { data: "ada@example.com" });
    expect(viewed.body.contact).toEqual({ EMAIL: "ada@example.com", NAME: "Ada L.", AGE: 31 });

    const before = await panelSnapshot(panel.id);
    const refused = async (attributes: Record<string, unknown>, fields: string[]) => {
      const answer = await asOperator(marketer, "PATCH", path, { attributes });
      expect(answer.status, JSON.stringify(attributes)).toBe(400);
      expect(answer.body.errors.map((e: any) => e.field)).toEqual(fields);
    };
    await refused({ AGE: "thirty", CITY: 12.5, NAME: true }, ["attributes.AGE", "attributes.NAME"]);
    await refused({ email: "eve@example.com" }, ["attributes.email"]);
    await refused({ SHOE: 44 }, ["attributes.SHOE"]);
    await refused({}, ["attributes"]);
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect((await asOperator(marketer, "PATCH", `/panels/${panel.id}/contacts/nobody@example.com`, { attributes: { AGE: 1 } })).status).toBe(404);
    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "PATCH", path, { attributes: { AGE: 1 } })).status).toBe(403);
  });

  it("words an edit's refusals as the admin API does: a missing contact without fields, refused attributes by field", async () => {
    const panel = await peoplePanel();
    const missing = await admin("PATCH", `/panels/${panel.id}/contacts/Nobody@example.com`, { attributes: { AGE: 1 } });
    expect(missing).toEqual({ status: 404, body: { error: 'No contact with EMAIL "Nobody@example.com" in this panel', errors: [] } });
    const invalid = await admin("PATCH", `/panels/${panel.id}/contacts/ada@example.com`, { attributes: { AGE: "thirty", SHOE: 44 } });
    expect(invalid).toEqual({
      status: 400,
      body: {
        error: 'attributes.AGE: must be an integer, not "thirty" (and 1 more)',
        errors: [
          { field: "attributes.AGE", message: 'must be an integer, not "thirty"' },
          { field: "attributes.SHOE", message: `unknown attribute "SHOE": it is not in the panel's attribute schema` },
        ],
      },
    });
  });

  it("shows the messages sent to a contact with opens and clicks, the journeys it entered and its suppression", async () => {
    const panel = await peoplePanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "ada@example.com" }, listid: list });
    const empty = await admin("GET", `/panels/${panel.id}/contacts/ada@example.com`);
    expect(empty.body).toMatchObject({ messages: [], journeys: [], suppression: null });

    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Autumn",
      subject: "Hello {{NAME}}",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: '<p>Hi</p><a href="https://shop.example.com/">Shop</a>',
      audience: { lists: [list] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await publishDueBroadcasts(env, Date.now());
    await waitForCampaign(panel, created.body.id);
    const html = htmlOf(await rawMessage(panel, (await outbox(panel))[0].id));
    const pixel = /http:\/\/127\.0\.0\.1:8787(\/t\/o\/[^"]+)/.exec(html)![1]!;
    expect((await call(pixel)).status).toBe(200);
    expect((await call(pixel)).status).toBe(200);

    const browse = await defineActivity(panel, "browse");
    const journey = await startJourney(panel, {
      name: "Welcome",
      trigger: { type: "activity", activity: "browse" },
      steps: [
        { id: "mail", type: "email", subject: "Welcome {{NAME}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
        { id: "wait", type: "wait_for_event", after: "mail", events: ["click"], within: "2d" },
      ],
    });
    await act(panel, browse, "ada@example.com");
    await suppressAddress(panelData, panel.id, "ada@example.com", "unsubscribe", created.body.id, Date.now());

    const page = await admin("GET", `/panels/${panel.id}/contacts/ada@example.com`);
    expect(page.status).toBe(200);
    expect(page.body.lists).toEqual([{ id: list, name: "Readers" }]);
    expect(page.body.messages).toContainEqual(
      expect.objectContaining({ kind: "campaign", source_id: created.body.id, source_name: "Autumn", subject: "Hello Ada", status: "sent", opens: 2, clicks: 0 }),
    );
    expect(page.body.messages).toContainEqual(expect.objectContaining({ kind: "journey", source_id: journey.id, source_name: "Welcome", step_id: "mail", channel: "email", subject: "Welcome Ada" }));
    expect(page.body.journeys).toEqual([expect.objectContaining({ journey_id: journey.id, name: "Welcome", journey_status: "running", status: "active", ended_at: null })]);
    expect(page.body.suppression).toMatchObject({ address: "ada@example.com", reason: "unsubscribe", campaign_id: created.body.id });
    // Another contact's page shows none of it.
    expect((await admin("GET", `/panels/${panel.id}/contacts/bob@example.com`)).body).toMatchObject({ messages: [], journeys: [], suppression: null });
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

  it("refuses to delete a list a campaign still to send or a running journey uses, naming them; the API's lists/delete still deletes (CONTRACT 4.9)", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
    const staff = (await api("lists", "add", { listname: "Staff" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" }, listid: vip });
    const campaign = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Spring",
      subject: "Hello",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hi</p>",
      audience: { lists: [vip], exclude_lists: [staff] },
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    const journey = await startJourney(panel, { name: "Welcome", trigger: { type: "list", listid: vip }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    const paused = await startJourney(panel, { name: "Staff news", trigger: { type: "list", listid: staff }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect((await admin("POST", `${paused.path}/status`, { status: "paused" })).status).toBe(200);

    const refused = await admin("DELETE", `/panels/${panel.id}/lists/${vip}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe(`The list "VIP" is used by campaign 'Spring' (scheduled) and journey 'Welcome' (running); stop the journeys, and send, cancel or delete the campaigns first`);
    // Excluding a list uses it too; a paused journey may resume.
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${staff}`)).body.error).toMatch(/^The list "Staff" is used by campaign 'Spring' \(scheduled\) and journey 'Staff news' \(paused\);/);
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body.lists.map((l: any) => [l.name, l.count])).toEqual([["VIP", 1], ["Staff", 0]]);

    // A campaign paused while sending may resume, a draft may be scheduled: both still use the list.
    const autumn = await admin("POST", `/panels/${panel.id}/campaigns`, { name: "Autumn", subject: "Hello", sender_name: "Shop", sender_email: "shop@example.com", html: "<p>Hi</p>", audience: { lists: [vip] } });
    for (const status of ["paused", "draft"]) {
      await panelData.prepare("UPDATE campaigns SET status = ? WHERE id = ?").bind(status, autumn.body.id).run();
      expect((await admin("DELETE", `/panels/${panel.id}/lists/${vip}`)).body.error).toContain(`campaign 'Autumn' (${status})`);
    }
    await panelData.prepare("UPDATE campaigns SET status = 'cancelled' WHERE id = ?").bind(autumn.body.id).run();

    // Once the campaign has sent and the journeys are stopped, the lists go.
    await publishDueBroadcasts(env, Date.now());
    expect(await waitForCampaign(panel, campaign.body.id)).toMatchObject({ status: "sent" });
    const stillUsed = await admin("DELETE", `/panels/${panel.id}/lists/${vip}`);
    expect(stillUsed.body.error).toBe(`The list "VIP" is used by journey 'Welcome' (running); stop the journeys, and send, cancel or delete the campaigns first`);
    expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${vip}`)).status).toBe(200);
    // The envelope's delete is CONTRACT 4.9's, which names no such refusal.
    const deleted = await api("lists", "delete", { listname: "Staff" });
    expect(deleted.body.result, JSON.stringify(deleted.body)).toBe("Success");
    expect((await admin("GET", paused.path)).body.status).toBe("paused");
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body.lists).toEqual([]);
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

  it("pages through a list's members, empties the list, and imports a CSV from a URL through the import engine", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Members" })).body.id as number;
    const other = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Other" })).body.id as number;
    for (const email of ["m1@example.com", "m2@example.com", "m3@example.com"]) await api("contact", "add", { data: { EMAIL: email, NAME: email.slice(0, 2) }, listid: list });
    await api("contact", "add", { data: { EMAIL: "elsewhere@example.com" }, listid: other });
    const base = `/panels/${panel.id}/lists/${list}`;
    const first = await admin("GET", `${base}/members?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.list).toMatchObject({ id: list, name: "Members", count: 3 });
    expect(first.body.members.map((m: any) => [m.key, m.attributes.NAME])).toEqual([["m1@example.com", "m1"], ["m2@example.com", "m2"]]);
    const second = await admin("GET", `${base}/members?limit=2&after=${first.body.next_cursor}`);
    expect(second.body.members.map((m: any) => m.key)).toEqual(["m3@example.com"]);
    expect(second.body.next_cursor).toBeNull();
    expect((await admin("GET", `${base}/members?limit=0`)).body.errors[0].field).toBe("limit");
    expect((await admin("GET", `/panels/${panel.id}/lists/999999/members`)).status).toBe(404);

    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "POST", `${base}/empty`)).status).toBe(403);
    const emptied = await admin("POST", `${base}/empty`);
    expect(emptied.body).toEqual({ removed: 3 });
    expect((await admin("GET", `${base}/members`)).body.members).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/lists/${other}/members`)).body.members).toHaveLength(1);
    expect((await contactsOf(panel.id)).length).toBe(4);

    const refused = await admin("POST", `${base}/imports`, { url: "ftp://files.example.com/x.csv" });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].field).toBe("url");
    const url = await host("people.csv", "EMAIL,NAME\nu1@example.com,One\nm1@example.com,Again\nbroken,Three\n");
    const started = await admin("POST", `${base}/imports`, { url });
    expect(started.status).toBe(202);
    let job: any;
    for (let i = 0; i < 100; i++) {
      job = (await admin("GET", `/panels/${panel.id}/jobs/${started.body.jobid}`)).body;
      if (job.status === "completed" || job.status === "failed") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job).toMatchObject({ status: "completed", created: 1, updated: 1, failed: 1, listid: list });
    expect((await admin("GET", `${base}/members`)).body.members.map((m: any) => m.key)).toEqual(["m1@example.com", "u1@example.com"]);
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
    expect(overview.body).toEqual({ contacts: 2, contacts_counted_at: expect.any(String), contacts_at_least: false, lists: 1, events_today: expect.any(Number), sends_today: 0, running_journeys: 0, webhooks_not_operational: 0, email: { provider: "outbox", real_email: false, problem: null } });
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
