import { describe, expect, it } from "vitest";
import { admin, call, countRows, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { importCsv, storeImportJob } from "../support/imports";
import { scheduleIn } from "../support/broadcasts";

// Lists are numbered per panel from 1 (CONTRACT 10, migration 0058). Test panels live on shard 1
// (TEST_SHARD), whose other ids start at 2^40 + 1: before this change its lists did too.

const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as any });

/** A list as a shard 1 panel got it before migration 0058, written as that code wrote it. */
async function listFromBefore(panel: TestPanel, id: number, name: string): Promise<void> {
  await panelData
    .prepare("INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at) VALUES (?, ?, ?, ?, '', 0, 0)")
    .bind(panel.id, id, name, name.toLowerCase())
    .run();
}

function apiv2(panel: TestPanel, query: string, init?: RequestInit) {
  return call(`/apiv2?apikey=${encodeURIComponent(panel.apiKey)}&${query}`, init).then(json);
}

describe("lists numbered per panel (CONTRACT 10)", () => {
  it("a panel on shard 1 numbers its lists from 1, in every route", async () => {
    expect(TEST_SHARD).toBe(1);
    const panel = await createPanel();
    // A C# client: long would do, but it keeps ids in int, as the hosted service's are small.
    const first = await apiv2(panel, "type=lists&activity=add&listname=Newsletter", { method: "POST" });
    expect(first.body).toMatchObject({ result: "Success", listid: 1 });
    const second = await apiv2(panel, "type=lists&activity=add&listname=Buyers", { method: "POST" });
    expect(second.body.listid).toBe(2);
    const byAdmin = await admin("POST", `/panels/${panel.id}/lists`, { name: "Panel made" });
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.id).toBe(3);

    // contact add with listid, as one id and as "1,2"; view names the lists by the same ids.
    const added = await apiv2(panel, `type=contact&activity=add&data=${encodeURIComponent(JSON.stringify({ EMAIL: "a@example.com" }))}&listid=1,2`);
    expect(added.status).toBe(200);
    const viewed = await apiv2(panel, "type=contact&activity=view&data=a@example.com");
    expect(viewed.body.lists).toEqual([{ id: 1, listname: "Newsletter" }, { id: 2, listname: "Buyers" }]);

    // bulk upload into list 3.
    const job = await importCsv(panel, "EMAIL\nb@example.com\n", { listid: "3" });
    expect(job).toMatchObject({ status: "completed", created: 1 });

    const all = await apiv2(panel, "type=lists&activity=getall");
    expect(all.body.lists.map((l: any) => [l.id, l.listname, l.count])).toEqual([[1, "Newsletter", 1], [2, "Buyers", 1], [3, "Panel made", 1]]);
    const adminLists = await admin("GET", `/panels/${panel.id}/lists`);
    expect(adminLists.body.lists.map((l: any) => l.id)).toEqual([1, 2, 3]);
    expect((await admin("GET", `/panels/${panel.id}/lists/2/members`)).status).toBe(200);

    // contact delete from list 2, list delete by name: the next list takes the number after the largest left.
    const removed = await apiv2(panel, "type=contact&activity=delete&data=a@example.com&listid=2");
    expect(removed.body.removed_from).toEqual([2]);
    expect((await apiv2(panel, "type=lists&activity=delete&listname=Buyers")).status).toBe(200);
    expect((await apiv2(panel, "type=lists&activity=add&listname=Later", { method: "POST" })).body.listid).toBe(4);
  });

  it("two panels of one shard both have a list 1; each sees only its own", async () => {
    const mine = await createPanel();
    const theirs = await createPanel();
    expect((await apiv2(mine, "type=lists&activity=add&listname=Mine", { method: "POST" })).body.listid).toBe(1);
    expect((await apiv2(theirs, "type=lists&activity=add&listname=Theirs", { method: "POST" })).body.listid).toBe(1);
    await apiv2(theirs, `type=contact&activity=add&data=${encodeURIComponent(JSON.stringify({ EMAIL: "t@example.com" }))}&listid=1`);
    const lists = await apiv2(mine, "type=lists&activity=getall");
    expect(lists.body.lists).toEqual([expect.objectContaining({ id: 1, listname: "Mine", count: 0 })]);
    expect((await apiv2(mine, "type=contact&activity=view&data=t@example.com")).status).toBe(404);
    expect((await apiv2(mine, "type=lists&activity=emptylist&listname=Mine")).body.removed).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM list_members WHERE panel_id = ?", theirs.id)).toBe(1);
  });

  it("a list from before keeps its large id and keeps answering it; new lists number from 1 beside it", async () => {
    const panel = await createPanel();
    const old = 2 ** 40 + 1;
    await listFromBefore(panel, old, "Imported 2025");
    // The next number above the panel's largest list id below 2^31: none, so 1.
    expect((await apiv2(panel, "type=lists&activity=add&listname=New", { method: "POST" })).body.listid).toBe(1);
    const added = await apiv2(panel, `type=contact&activity=add&data=${encodeURIComponent(JSON.stringify({ EMAIL: "o@example.com" }))}&listid=${old}`);
    expect(added.status).toBe(200);
    expect((await apiv2(panel, "type=contact&activity=view&data=o@example.com")).body.lists).toEqual([{ id: old, listname: "Imported 2025" }]);
    expect((await apiv2(panel, `type=lists&activity=edit&id=${old}&listname=Imported`)).body.list).toMatchObject({ id: old, listname: "Imported", count: 1 });
    const members = await admin("GET", `/panels/${panel.id}/lists/${old}/members`);
    expect(members.status).toBe(200);
    expect(JSON.stringify(members.body)).toContain("o@example.com");
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${old}`)).status).toBeLessThan(300);
    expect((await apiv2(panel, "type=lists&activity=getall")).body.lists.map((l: any) => l.id)).toEqual([1]);
  });

  it("a deleted list's number stays taken while a campaign, a journey, an import, a segment or a form names it, and is handed out again once nothing does", async () => {
    const panel = await createPanel();
    const add = async (name: string) => (await apiv2(panel, `type=lists&activity=add&listname=${name}`, { method: "POST" })).body.listid as number;
    const remove = async (name: string) => expect((await apiv2(panel, `type=lists&activity=delete&listname=${name}`)).status).toBe(200);
    const kept = (id: number) => countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND id = ? AND deleted_at IS NOT NULL", panel.id, id);

    // Named by nothing: the newest list's number is handed out again (CONTRACT 10).
    expect(await add("Plain")).toBe(1);
    await remove("Plain");
    expect(await add("Again")).toBe(1);

    // A scheduled campaign's audience: the new list must not become it.
    const audience = await add("Audience");
    const scheduled = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Later", subject: "News", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", audience: { lists: [audience] }, schedule_date: scheduleIn(60 * 24),
    });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);
    await remove("Audience");
    expect(await kept(audience)).toBe(1);
    const next = await add("Next");
    expect(next).toBe(audience + 1);

    // A running journey it triggers.
    const trigger = await add("Trigger");
    const journey = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Welcome", trigger: { type: "list", listid: trigger }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect((await admin("POST", `/panels/${panel.id}/journeys/${journey.body.id}/status`, { status: "running" })).status).toBe(200);
    await remove("Trigger");
    expect(await add("After trigger")).toBe(trigger + 1);

    // An import into it, not yet done.
    const imported = await add("Imported");
    await storeImportJob(panel.id, { sources: [{ url: "https://files.example/contacts.csv" }], listId: imported });
    await remove("Imported");
    expect(await add("After import")).toBe(imported + 1);
    expect(await kept(imported)).toBe(1);

    // A saved segment's list condition, and a signup form offering it.
    const counted = await add("Counted");
    expect((await admin("POST", `/panels/${panel.id}/segments`, { name: "Members", match: { all: [{ list: counted, op: "in" }] } })).status).toBe(201);
    await remove("Counted");
    expect(await add("After segment")).toBe(counted + 1);
    const offered = await add("Offered");
    expect((await admin("POST", `/panels/${panel.id}/forms`, { name: "Join", fields: [{ attribute: "EMAIL" }], lists: [offered] })).status).toBe(201);
    await remove("Offered");
    expect(await add("After form")).toBe(offered + 1);
    // The deleted lists stay out of every read.
    const names = (await apiv2(panel, "type=lists&activity=getall")).body.lists.map((l: any) => l.listname);
    expect(names).toEqual(["Again", "Next", "After trigger", "After import", "After segment", "After form"]);
  });

  it("a panel whose old lists are small goes on above the largest of them", async () => {
    const panel = await createPanel();
    await listFromBefore(panel, 57, "From shard 0");
    await listFromBefore(panel, 2 ** 40 + 9, "From shard 1");
    expect((await apiv2(panel, "type=lists&activity=add&listname=Next", { method: "POST" })).body.listid).toBe(58);
  });
});
