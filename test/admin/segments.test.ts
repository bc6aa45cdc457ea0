import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { segmentsCron } from "../../src/services/segments/membership";
import { defineActivity, eventually, pipelineSettled, postUpload } from "../support/activity";
import { ADMIN_TOKEN, admin, apiFor, call, createPanel, panelData, panelSnapshot, type TestPanel } from "../support/helpers";

const DAY = 86_400_000;
const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 19);

/**
 * A panel of six contacts, made through the public API: attributes (one a date), two lists,
 * and purchases and views at known times.
 */
async function shopPanel(): Promise<{ panel: TestPanel; vip: number; news: number }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  expect((await admin("PUT", `/panels/${panel.id}/attributes/SIGNUP`, { type: "date" })).status).toBe(200);
  expect((await admin("PUT", `/panels/${panel.id}/attributes/PUSH_TOKEN`, { type: "string" })).status).toBe(200);
  const vip = (await api("lists", "add", { listname: "VIP" })).body.listid;
  const news = (await api("lists", "add", { listname: "News" })).body.listid;
  const add = async (data: Record<string, unknown>, listid?: number[]) => {
    const added = await api("contact", "add", { data, ...(listid ? { listid: JSON.stringify(listid) } : {}) });
    expect(added.status).toBe(200);
  };
  await add({ EMAIL: "ada@example.com", CITY: "Pune", AGE: 25, MOBILE: "+15550001", SIGNUP: iso(2 * DAY).slice(0, 10) }, [vip, news]);
  await add({ EMAIL: "bob@example.com", CITY: "pune ", AGE: 41, SIGNUP: iso(40 * DAY).slice(0, 10) }, [vip]);
  await add({ EMAIL: "cy@example.com", CITY: "Mumbai", AGE: 33, PUSH_TOKEN: "tok-1" }, [news]);
  await add({ EMAIL: "dee@example.com", CITY: "Delhi", AGE: 19 });
  await add({ EMAIL: "eve@example.com", CITY: "", AGE: 60, MOBILE: "" });
  await add({ EMAIL: "fay@example.com", CITY: "Punekar", AGE: 30 });
  await defineActivity(panel, "purchase", { price: "float", sku: "string" });
  await defineActivity(panel, "view", {});
  const uploaded = await postUpload(panel.apiKey, [
    { activity_name: "purchase", identity: "ada@example.com", timestamp: iso(1 * DAY), activity_params: { price: 120, sku: "KETTLE" } },
    { activity_name: "purchase", identity: "ada@example.com", timestamp: iso(5 * DAY), activity_params: { price: 80, sku: "mug" } },
    { activity_name: "purchase", identity: "ada@example.com", timestamp: iso(60 * DAY), activity_params: { price: 10, sku: "mug" } },
    { activity_name: "purchase", identity: "bob@example.com", timestamp: iso(2 * DAY), activity_params: { price: 300, sku: "TV" } },
    { activity_name: "purchase", identity: "cy@example.com", timestamp: iso(45 * DAY), activity_params: { price: 50, sku: "mug" } },
    { activity_name: "view", identity: "dee@example.com", timestamp: iso(3 * DAY) },
    { activity_name: "view", identity: "bob@example.com", timestamp: iso(100 * DAY) },
  ]);
  expect(uploaded.body).toMatchObject({ recorded: 7 });
  await pipelineSettled(panel.id);
  return { panel, vip, news };
}

async function members(panel: TestPanel, match: unknown): Promise<string[]> {
  const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match });
  expect(counted.status, JSON.stringify(counted.body)).toBe(200);
  const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: `s${Math.random()}`, match });
  expect(saved.status, JSON.stringify(saved.body)).toBe(201);
  expect(saved.body.count).toBe(counted.body.count);
  const emails = await eventually(async () => {
    const page = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}/contacts?limit=100`);
    const read = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}`);
    return read.body.building ? undefined : (page.body.contacts as Array<{ EMAIL: string }>).map((c) => c.EMAIL.split("@")[0]!).sort();
  });
  expect(emails.length).toBe(counted.body.count);
  return emails;
}

describe("segment conditions, against contacts and events made through the public API", () => {
  it("attribute operators, relative dates and emptiness", async () => {
    const { panel } = await shopPanel();
    expect(await members(panel, { all: [{ attribute: "city", op: "eq", value: "PUNE" }] })).toEqual(["ada", "bob"]);
    expect(await members(panel, { all: [{ attribute: "CITY", op: "ne", value: "pune" }] })).toEqual(["cy", "dee", "eve", "fay"]);
    expect(await members(panel, { all: [{ attribute: "CITY", op: "starts_with", value: "pun" }] })).toEqual(["ada", "bob", "fay"]);
    expect(await members(panel, { all: [{ attribute: "CITY", op: "contains", value: "umb" }] })).toEqual(["cy"]);
    expect(await members(panel, { all: [{ attribute: "CITY", op: "in", value: ["Delhi", "mumbai"] }] })).toEqual(["cy", "dee"]);
    expect(await members(panel, { all: [{ attribute: "AGE", op: "gte", value: "33" }] })).toEqual(["bob", "cy", "eve"]);
    expect(await members(panel, { all: [{ attribute: "AGE", op: "lt", value: 25 }] })).toEqual(["dee"]);
    expect(await members(panel, { all: [{ attribute: "AGE", op: "in", value: [19, 60] }] })).toEqual(["dee", "eve"]);
    expect(await members(panel, { all: [{ attribute: "CITY", op: "is_empty" }] })).toEqual(["eve"]);
    expect(await members(panel, { all: [{ attribute: "MOBILE", op: "is_not_empty" }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ attribute: "SIGNUP", op: "within_last_days", value: 7 }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ attribute: "SIGNUP", op: "before_days_ago", value: 30 }] })).toEqual(["bob"]);
  });

  it("list membership, groups, not, and reachability", async () => {
    const { panel, vip, news } = await shopPanel();
    expect(await members(panel, { all: [{ list: vip, op: "in" }] })).toEqual(["ada", "bob"]);
    expect(await members(panel, { all: [{ list: String(news), op: "not_in" }] })).toEqual(["bob", "dee", "eve", "fay"]);
    expect(await members(panel, { any: [{ list: vip, op: "in" }, { attribute: "AGE", op: "lt", value: 20 }] })).toEqual(["ada", "bob", "dee"]);
    expect(await members(panel, { all: [{ list: news, op: "in" }, { not: { attribute: "CITY", op: "eq", value: "Pune" } }] })).toEqual(["cy"]);
    expect(
      await members(panel, { any: [{ all: [{ list: vip, op: "in" }, { any: [{ attribute: "AGE", op: "gt", value: 40 }] }] }, { attribute: "CITY", op: "eq", value: "Delhi" }] }),
    ).toEqual(["bob", "dee"]);
    expect(await members(panel, { all: [{ reachable: "sms" }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ reachable: "push" }] })).toEqual(["cy"]);
    expect(await members(panel, { all: [{ reachable: "email" }] })).toEqual(["ada", "bob", "cy", "dee", "eve", "fay"]);
  });

  it("behaviour: performed with counts, windows, dates and typed parameters; not performed; first and last", async () => {
    const { panel } = await shopPanel();
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed" }] })).toEqual(["ada", "bob", "cy"]);
    expect(await members(panel, { all: [{ activity: "Purchase", op: "performed", min: 2 }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", min: 2, within_days: 30 }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", min: 3, within_days: 30 }] })).toEqual([]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", max: 1 }] })).toEqual(["bob", "cy"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", min: 0, max: 1 }] })).toEqual(["bob", "cy", "dee", "eve", "fay"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", min: 1, max: 1, within_days: 30 }] })).toEqual(["bob"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "not_performed", within_days: 30 }] })).toEqual(["cy", "dee", "eve", "fay"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", from: iso(50 * DAY).slice(0, 10), to: iso(30 * DAY).slice(0, 10) }] })).toEqual(["cy"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", where: [{ param: "price", op: "gte", value: "100" }] }] })).toEqual(["ada", "bob"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "performed", min: 2, where: [{ param: "SKU", op: "eq", value: "MUG" }] }] })).toEqual(["ada"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "first_performed", within_days: 30 }] })).toEqual(["bob"]);
    expect(await members(panel, { all: [{ activity: "purchase", op: "last_performed", to: iso(30 * DAY) }] })).toEqual(["cy"]);
    expect(await members(panel, { all: [{ activity: "view", op: "last_performed", within_days: 10 }, { not: { activity: "purchase", op: "performed" } }] })).toEqual(["dee"]);
  });
});

describe("saved segments", () => {
  it("create, read, list, edit and delete; the contacts page on", async () => {
    const { panel, vip } = await shopPanel();
    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "Pune", count: 2, match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(created.body.id).toMatch(/^seg_/);
    expect(Date.parse(created.body.created_at)).toBeGreaterThan(0);
    const path = `/panels/${panel.id}/segments/${created.body.id}`;
    expect((await admin("GET", path)).body).toMatchObject({ id: created.body.id, count: 2 });
    const edited = await admin("PUT", path, { name: "Not VIP", match: { all: [{ list: vip, op: "not_in" }] } });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ name: "Not VIP", count: 4 });
    await eventually(async () => ((await admin("GET", path)).body.members === 4 ? true : undefined));
    const first = await admin("GET", `${path}/contacts?limit=3`);
    expect(first.body.contacts).toHaveLength(3);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await admin("GET", `${path}/contacts?limit=3&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ next_cursor: null });
    expect([...first.body.contacts, ...second.body.contacts].map((c: any) => c.EMAIL).sort()).toEqual(["cy@example.com", "dee@example.com", "eve@example.com", "fay@example.com"]);
    const listed = await admin("GET", `/panels/${panel.id}/segments`);
    expect(listed.body.segments).toEqual([expect.objectContaining({ id: created.body.id, name: "Not VIP", members: 4 })]);
    const history = await admin("GET", `${path}/history`);
    expect(history.body.members).toBe(4);
    expect(history.body.days.at(-1)).toMatchObject({ entered: 6, exited: 2 });
    const deleted = await call204("DELETE", path);
    expect(deleted).toBe(204);
    expect((await admin("GET", path)).status).toBe(404);
  });

  it("still answers a count once a list it names is deleted through the API: in it, no one; not in it, everyone", async () => {
    const { panel, vip } = await shopPanel();
    const inVip = (await admin("POST", `/panels/${panel.id}/segments`, { name: "VIPs", match: { all: [{ list: vip, op: "in" }] } })).body;
    const notVip = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Others", match: { all: [{ list: vip, op: "not_in" }] } })).body;
    expect([inVip.count, notVip.count]).toEqual([2, 4]);
    // The envelope's delete is not refused for a segment naming the list (API clients delete lists as they like).
    expect((await apiFor(panel)("lists", "delete", { listname: "VIP" })).body.result).toBe("Success");
    const read = async (id: string) => (await admin("GET", `/panels/${panel.id}/segments/${id}`)).body;
    expect(await read(inVip.id)).toMatchObject({ count: 0, count_estimated: false });
    expect(await read(notVip.id)).toMatchObject({ count: 6, count_estimated: false });
  });

  it("counts a preview sent as the match, as the definition to be saved, or as `definition`", async () => {
    const { panel, vip } = await shopPanel();
    const match = { all: [{ list: vip, op: "in" }] };
    const count = async (body: unknown) => {
      const answer = await admin("POST", `/panels/${panel.id}/segments/count`, body);
      return [answer.status, answer.body.count ?? answer.body.errors?.[0]?.field];
    };
    expect(await count({ match })).toEqual([200, 2]);
    expect(await count({ name: "VIPs", match })).toEqual([200, 2]);
    expect(await count({ definition: { name: "VIPs", match } })).toEqual([200, 2]);
    expect(await count({})).toEqual([400, "match"]);
    expect(await count({ match, definition: { match } })).toEqual([400, "definition"]);
    expect(await count({ match, extra: 1 })).toEqual([400, "extra"]);
  });

  it("reads a query parameter sent empty as not given: ?limit=&cursor= is the first page", async () => {
    const { panel, vip } = await shopPanel();
    const saved = (await admin("POST", `/panels/${panel.id}/segments`, { name: "VIPs", match: { all: [{ list: vip, op: "in" }] } })).body;
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${saved.id}`)).body.members === 2 ? true : undefined));
    const page = await admin("GET", `/panels/${panel.id}/segments/${saved.id}/contacts?limit=&cursor=`);
    expect(page.status).toBe(200);
    expect((page.body.contacts as Array<{ EMAIL: string }>).map((c) => c.EMAIL).sort()).toEqual(["ada@example.com", "bob@example.com"]);
    expect((await admin("GET", `/panels/${panel.id}/outbox?channel=&limit=`)).status).toBe(200);
    // A value that is there is still checked.
    expect((await admin("GET", `/panels/${panel.id}/segments/${saved.id}/contacts?limit=0`)).status).toBe(400);
  });

  it("refuses what the panel does not have, naming the field, and writes nothing", async () => {
    const { panel } = await shopPanel();
    const before = await panelSnapshot(panel.id);
    const refused = async (match: unknown, field: string, message: RegExp) => {
      const answer = await admin("POST", `/panels/${panel.id}/segments`, { name: "Bad", match });
      expect(answer.status, JSON.stringify(match)).toBe(400);
      expect(answer.body.errors).toContainEqual({ field, message: expect.stringMatching(message) });
    };
    await refused({ all: [{ attribute: "SHOE", op: "eq", value: 1 }] }, "match.all.0.attribute", /no attribute named SHOE/);
    await refused({ all: [{ attribute: "AGE", op: "eq", value: "old" }] }, "match.all.0.value", /integer/);
    await refused({ all: [{ attribute: "AGE", op: "within_last_days", value: 3 }] }, "match.all.0.op", /date attributes/);
    await refused({ all: [{ attribute: "CITY", op: "eq" }] }, "match.all.0.value", /is required for eq/);
    await refused({ all: [{ list: 999999, op: "in" }] }, "match.all.0.list", /no list with id 999999/);
    await refused({ all: [{ activity: "refund", op: "performed" }] }, "match.all.0.activity", /no activity named "refund"/);
    await refused({ all: [{ activity: "purchase", op: "performed", where: [{ param: "colour", op: "eq", value: "red" }] }] }, "match.all.0.where.0.param", /no parameter "colour"/);
    await refused({ all: [{ activity: "purchase", op: "performed", within_days: 3, from: "2024-01-01" }] }, "match.all.0.within_days", /may not be given with from or to/);
    await refused({ all: [{ activity: "purchase", op: "not_performed", min: 2 }] }, "match.all.0.min", /only for performed/);
    await refused({ all: [{ engagement: "opened", campaign: "cmp_nope" }] }, "match.all.0.campaign", /no campaign/);
    await refused({ all: [{ colour: "red" }] }, "match.all.0", /must be a group/);
    await refused({ all: [{ attribute: "CITY", op: "eq", value: "x", extra: 1 }] }, "match.all.0.extra", /is not an accepted member/);
    await refused({ all: [{ any: [{ all: [{ any: [{ reachable: "sms" }] }] }] }] }, "match.all.0.any.0.all.0.any", /at most 3 levels/);
    await refused({ all: [] }, "match.all", /at least 1/);
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect((await admin("GET", `/panels/${panel.id}/segments`)).body.segments).toEqual([]);
  });

  it("is invisible from another panel, and counts only its own panel's contacts", async () => {
    const { panel, vip } = await shopPanel();
    const other = await createPanel();
    await apiFor(other)("contact", "add", { data: { EMAIL: "zed@example.com", CITY: "Pune" } });
    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(created.body.count).toBe(2);
    for (const [method, suffix] of [["GET", ""], ["GET", "/contacts"], ["GET", "/history"], ["PUT", ""], ["DELETE", ""]] as const) {
      const answer = await admin(method, `/panels/${other.id}/segments/${created.body.id}${suffix}`, method === "PUT" ? { name: "x", match: { all: [{ reachable: "sms" }] } } : undefined);
      expect(answer.status, `${method} ${suffix}`).toBe(404);
    }
    expect((await admin("GET", `/panels/${other.id}/segments`)).body.segments).toEqual([]);
    // Another panel's list is no list of this one.
    const refused = await admin("POST", `/panels/${other.id}/segments/count`, { match: { all: [{ list: vip, op: "in" }] } });
    expect(refused.status).toBe(400);
    expect((await admin("POST", `/panels/${other.id}/segments/count`, { match: { all: [{ attribute: "CITY", op: "eq", value: "pune" }] } })).body.count).toBe(1);
  });

  it("is not deleted while a campaign not yet done or a running journey names it, sending or paused included, naming them as a list's delete does", async () => {
    const panel = await createPanel();
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    const campaign = await admin("POST", `/panels/${panel.id}/campaigns`, { name: "Spring", subject: "Hi", sender_name: "Shop", sender_email: "shop@example.com", html: "<p>Hi</p>", audience: { exclude_segments: [segment.body.id], lists: [(await apiFor(panel)("lists", "add", { listname: "VIP" })).body.listid] } });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    const path = `/panels/${panel.id}/segments/${segment.body.id}`;
    for (const status of ["scheduled", "sending", "paused", "draft"]) {
      await panelData.prepare("UPDATE campaigns SET status = ? WHERE id = ?").bind(status, campaign.body.id).run();
      const refused = await admin("DELETE", path);
      expect(refused.status, status).toBe(409);
      expect(refused.body.error).toBe(`The segment "Pune" is used by campaign 'Spring' (${status}); stop the journeys, and send, cancel or delete the campaigns first`);
    }
    const journey = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Welcome", trigger: { type: "segment", segment: segment.body.id }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect((await admin("POST", `/panels/${panel.id}/journeys/${journey.body.id}/status`, { status: "running" })).status).toBe(200);
    expect((await admin("DELETE", path)).body.error).toMatch(/^The segment "Pune" is used by campaign 'Spring' \(draft\) and journey 'Welcome' \(running\);/);
    await panelData.prepare("UPDATE campaigns SET status = 'sent' WHERE id = ?").bind(campaign.body.id).run();
    expect((await admin("DELETE", path)).body.error).toMatch(/^The segment "Pune" is used by journey 'Welcome' \(running\);/);
    expect((await admin("POST", `/panels/${panel.id}/journeys/${journey.body.id}/status`, { status: "stopped" })).status).toBe(200);
    expect((await call(`/admin/v1${path}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(204);
  });
});

describe("live membership", () => {
  it("an event updates every segment that reads events, however many (they are evaluated in groups)", async () => {
    const { panel } = await shopPanel();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const created = await admin("POST", `/panels/${panel.id}/segments`, { name: `v${i}`, match: { all: [{ activity: "view", op: "performed", min: 1 + (i % 2), within_days: 30 + i }] } });
      ids.push(created.body.id);
    }
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments`)).body.segments.every((s: any) => !s.building) ? true : undefined));
    await postUpload(panel.apiKey, [{ activity_name: "view", identity: "fay@example.com" }]);
    await pipelineSettled(panel.id);
    for (const [i, id] of ids.entries()) {
      const emails = ((await admin("GET", `/panels/${panel.id}/segments/${id}/contacts`)).body.contacts as any[]).map((c) => c.EMAIL).sort();
      expect(emails, `segment ${i}`).toEqual(i % 2 === 0 ? ["dee@example.com", "fay@example.com"] : []);
    }
  });

  it("follows attribute changes, list changes and new events; a sliding window is re-checked by the cron", async () => {
    const { panel, vip } = await shopPanel();
    const api = apiFor(panel);
    const create = async (match: unknown) => {
      const created = await admin("POST", `/panels/${panel.id}/segments`, { name: `s${Math.random()}`, match });
      await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${created.body.id}`)).body.building ? undefined : true));
      return `/panels/${panel.id}/segments/${created.body.id}`;
    };
    const emails = async (path: string) => ((await admin("GET", `${path}/contacts`)).body.contacts as any[]).map((c) => c.EMAIL.split("@")[0]).sort();
    const until = (path: string, expected: string[]) => eventually(async () => (JSON.stringify(await emails(path)) === JSON.stringify(expected) ? true : undefined));

    const pune = await create({ all: [{ attribute: "CITY", op: "eq", value: "Pune" }] });
    const inVip = await create({ all: [{ list: vip, op: "in" }] });
    const buyers = await create({ all: [{ activity: "purchase", op: "performed", min: 2, within_days: 30 }] });
    expect(await emails(pune)).toEqual(["ada", "bob"]);

    await api("contact", "update", { data: { EMAIL: "dee@example.com", CITY: "Pune" } });
    await api("contact", "update", { data: { EMAIL: "ada@example.com", CITY: "Goa" } });
    await until(pune, ["bob", "dee"]);

    await api("contact", "add", { data: { EMAIL: "cy@example.com" }, listid: vip });
    await api("contact", "delete", { data: "bob@example.com", listid: vip });
    await until(inVip, ["ada", "cy"]);

    expect(await emails(buyers)).toEqual(["ada"]);
    await postUpload(panel.apiKey, [
      { activity_name: "purchase", identity: "bob@example.com", timestamp: iso(29 * DAY + 23 * 3_600_000) },
      { activity_name: "purchase", identity: "cy@example.com", timestamp: iso(DAY) },
    ]);
    await pipelineSettled(panel.id);
    await until(buyers, ["ada", "bob"]);

    // Two hours on, bob's older purchase (two days short of... 29 days 23 hours ago) left the 30-day window.
    await segmentsCron.run(env, Date.now() + 2 * 3_600_000);
    await until(buyers, ["ada"]);
    const history = await admin("GET", `${buyers}/history`);
    expect(history.body.days.at(-1)).toMatchObject({ entered: 2, exited: 1 });
  });
});

describe("a segment built by a cron task queued before it was saved", () => {
  it("is built over its window from its save on, not from the task's earlier tick: a purchase past 30 days at the save does not count", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await defineActivity(panel, "purchase", {});
    for (const who of ["eve", "fay"]) expect((await api("contact", "add", { data: { EMAIL: `${who}@example.com` } })).status).toBe(200);
    // eve's older purchase left the 30 days a minute before the save; fay's two are well inside.
    await postUpload(panel.apiKey, [
      { activity_name: "purchase", identity: "eve@example.com", timestamp: iso(30 * DAY + 60_000) },
      { activity_name: "purchase", identity: "eve@example.com", timestamp: iso(DAY) },
      { activity_name: "purchase", identity: "fay@example.com", timestamp: iso(2 * DAY) },
      { activity_name: "purchase", identity: "fay@example.com", timestamp: iso(DAY) },
    ]);
    await pipelineSettled(panel.id);
    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Buyers", match: { all: [{ activity: "purchase", op: "performed", min: 2, within_days: 30 }] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const path = `/panels/${panel.id}/segments/${created.body.id}`;
    const emails = async () => ((await admin("GET", `${path}/contacts`)).body.contacts as any[]).map((c) => c.EMAIL.split("@")[0]).sort();
    await eventually(async () => (JSON.stringify(await emails()) === JSON.stringify(["fay"]) ? true : undefined));

    // As if the build after the save had not run: the cron's segments task, queued at a tick five minutes before the save, builds it.
    await panelData.batch([
      panelData.prepare("UPDATE segments SET build_cursor = 0 WHERE id = ?").bind(created.body.id),
      panelData.prepare("DELETE FROM segment_members WHERE segment_id = ?").bind(created.body.id),
    ]);
    await segmentsCron.run(env, Date.now() - 5 * 60_000);
    expect(await panelData.prepare("SELECT build_cursor FROM segments WHERE id = ?").bind(created.body.id).first("build_cursor")).toBeNull();
    expect(await emails()).toEqual(["fay"]);
  });
});

async function call204(method: string, path: string): Promise<number> {
  const { call } = await import("../support/helpers");
  const response = await call(`/admin/v1${path}`, { method, headers: { authorization: "Bearer test-admin-token" } });
  return response.status;
}
