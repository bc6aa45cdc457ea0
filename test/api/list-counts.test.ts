import { describe, expect, it } from "vitest";
import { LIST_SELECT } from "../../src/store/lists";
import { admin, apiFor, call, BASE, createPanel, jobFinished, panelData, type TestPanel } from "../support/helpers";
import { operatorWithRole } from "../support/operators";

// Issue 42: a list's member count is a counter kept by triggers on list_members (migration
// 0061), not a COUNT on each read. Every way a membership comes or goes keeps it exact.

/** Each list's count as lists/getall answers it, next to its members actually held. */
async function countsOf(panel: TestPanel): Promise<Array<[string, number, number]>> {
  const lists = (await apiFor(panel)("lists", "getall")).body.lists as Array<{ id: number; listname: string; count: number }>;
  const held = async (id: number) =>
    (await panelData.prepare("SELECT COUNT(*) AS n FROM list_members WHERE panel_id = ? AND list_id = ?").bind(panel.id, id).first<{ n: number }>())!.n;
  return Promise.all(lists.map(async (l) => [l.listname, l.count, await held(l.id)] as [string, number, number]));
}

describe("list member counts", () => {
  it("stay exact through adds, removes, uploads, empty, erasure and delete", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const a = (await api("lists", "add", { listname: "A" })).body.listid as number;
    const b = (await api("lists", "add", { listname: "B" })).body.listid as number;

    for (const n of [1, 2, 3]) await api("contact", "add", { data: { EMAIL: `${n}@example.com` }, listid: `${a},${b}` });
    // Adding a member again counts nothing.
    await api("contact", "add", { data: { EMAIL: "1@example.com" }, listid: String(a) });
    expect(await countsOf(panel)).toEqual([["A", 3, 3], ["B", 3, 3]]);

    expect((await api("contact", "delete", { data: "2@example.com", listid: String(b) })).status).toBe(200);
    expect(await countsOf(panel)).toEqual([["A", 3, 3], ["B", 2, 2]]);

    // An upload through the import engine: one new contact, one already a member, one refused.
    const owner = await operatorWithRole(panel.id, "marketer");
    const uploaded = await call(`/admin/v1/panels/${panel.id}/lists/${b}/uploads?name=people.csv`, {
      method: "POST",
      headers: { cookie: owner.cookie, origin: BASE, "x-csrf-token": owner.csrf, "content-type": "text/csv" },
      body: "EMAIL\nnew@example.com\n1@example.com\nbad\n",
    });
    expect(uploaded.status).toBe(202);
    expect(await jobFinished(panel, ((await uploaded.json()) as { jobid: string }).jobid)).toMatchObject({ status: "completed" });
    expect(await countsOf(panel)).toEqual([["A", 3, 3], ["B", 3, 3]]);

    // Erasing a contact takes its memberships of every list.
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent("1@example.com")}`)).status).toBe(200);
    expect(await countsOf(panel)).toEqual([["A", 2, 2], ["B", 2, 2]]);

    expect((await api("lists", "emptylist", { listname: "A" })).body.removed).toBe(2);
    expect(await countsOf(panel)).toEqual([["A", 0, 0], ["B", 2, 2]]);
    await api("contact", "add", { data: { EMAIL: "3@example.com" }, listid: String(a) });
    expect(await countsOf(panel)).toEqual([["A", 1, 1], ["B", 2, 2]]);

    // The admin lists screen and a list's view read the same counter.
    const screen = (await admin("GET", `/panels/${panel.id}/lists`)).body.lists.map((l: { name: string; count: number }) => [l.name, l.count]);
    expect(screen).toEqual([["A", 1], ["B", 2]]);

    expect((await api("lists", "delete", { listname: "B" })).status).toBe(200);
    expect(await countsOf(panel)).toEqual([["A", 1, 1]]);
    // A list made again under a deleted one's name starts from nothing.
    await api("lists", "add", { listname: "B" });
    expect(await countsOf(panel)).toEqual([["A", 1, 1], ["B", 0, 0]]);
  });

  it("lists/getall reads no list_members row", async () => {
    const panel = await createPanel();
    await apiFor(panel)("lists", "add", { listname: "A" });
    // The read getall runs (src/store/lists.ts listLists), planned: no step touches list_members.
    const { results } = await panelData
      .prepare(`EXPLAIN QUERY PLAN ${LIST_SELECT} WHERE l.panel_id = ? ORDER BY l.id`)
      .bind(panel.id)
      .all<{ detail: string }>();
    expect(results.map((r) => r.detail).join("\n")).not.toContain("list_members");
  });
});
