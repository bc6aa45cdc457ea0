import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../../src/jobs/queues";
import { listClearRedrive, readListClearNudge } from "../../../src/services/lists/clear";
import { emptyList } from "../../../src/services/lists/empty";
import { removeList } from "../../../src/services/lists/remove";
import { admin, apiFor, countRows, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { scheduled } from "../../support/broadcasts";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { collectingQueue, withBindings, type CollectingQueue } from "../../support/cron";
import { importCsv } from "../../support/imports";

/** An env whose fan-outs step over `ids` contact ids, its IMPORTS messages kept for the test. */
function steppingEnv(ids: number): { stepEnv: Env; imports: CollectingQueue } {
  const imports = collectingQueue();
  return { stepEnv: withBindings(env, { IMPORTS: imports, FANOUT_CHUNK_IDS: String(ids) } as Partial<Env>), imports };
}

/** Hands the kept IMPORTS messages to the consumer (each delivered twice: a redelivery changes nothing) until none is left; returns how many steps ran. */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<number> {
  let steps = 0;
  while (imports.bodies.length) {
    const bodies = imports.bodies.splice(0);
    const batch = createMessageBatch("apiv2-imports-default", [...bodies, ...bodies].map((body, i) => ({ id: `clear-${steps}-${i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
    steps += bodies.length;
  }
  return steps;
}

async function listWithMembers(panel: TestPanel, name: string, n: number): Promise<number> {
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname: name })).body.listid as number;
  for (let i = 0; i < n; i++) await api("contact", "add", { data: { EMAIL: `${name.toLowerCase()}${i}@example.com` }, listid: list });
  return list;
}

const countOf = async (panel: TestPanel, name: string) => ((await apiFor(panel)("lists", "getall")).body.lists as Array<{ listname: string; count: number }>).find((l) => l.listname === name)?.count;
const held = (panel: TestPanel, list: number) => countRows("SELECT COUNT(*) AS n FROM list_members WHERE panel_id = ? AND list_id = ?", panel.id, list);

describe("emptying and deleting a list in bounded steps", () => {
  it("empties a list a few ids per step through the queue, its count right after every step, keeping members added after the request", async () => {
    const panel = await createPanel();
    const list = await listWithMembers(panel, "Big", 7);
    const other = await listWithMembers(panel, "Other", 2);
    const { stepEnv, imports } = steppingEnv(2);

    const emptied = await emptyList(stepEnv, panelData, panel.id, [], { name: "Big" }, Date.now());
    expect(emptied).toEqual({ ok: true, value: { removed: 7 } });
    // The first step ran before the answer: two of seven ids gone, the next step queued.
    expect(await countOf(panel, "Big")).toBe(5);
    expect(await held(panel, list)).toBe(5);
    expect(imports.bodies.map(readListClearNudge)).toEqual([{ type: "list_clear", panelId: panel.id, listId: list }]);
    // A contact who joins while the list is being emptied stays a member.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await apiFor(panel)("contact", "add", { data: { EMAIL: "late@example.com" }, listid: list });

    expect(await drainImports(stepEnv, imports)).toBeGreaterThanOrEqual(3);
    expect(await countOf(panel, "Big")).toBe(1);
    expect(await held(panel, list)).toBe(1);
    expect(await countOf(panel, "Other")).toBe(2);
    expect(await held(panel, other)).toBe(2);
  });

  it("a list emptied and filled again at once (a client's sync) keeps the members added after the emptying, by the API or an import", async () => {
    const panel = await createPanel();
    const list = await listWithMembers(panel, "Synced", 8);
    const { stepEnv, imports } = steppingEnv(2);
    const api = apiFor(panel);

    expect(await emptyList(stepEnv, panelData, panel.id, [], { name: "Synced" }, Date.now())).toEqual({ ok: true, value: { removed: 8 } });
    // The first step removed synced0 and synced1; the others wait for the queue's steps.
    expect(await held(panel, list)).toBe(6);
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Added again: one the first step removed, and members the later steps have yet to reach.
    for (const email of ["synced0@example.com", "synced5@example.com"]) expect((await api("contact", "add", { data: { EMAIL: email }, listid: list })).status).toBe(200);
    expect((await importCsv(panel, "EMAIL\nsynced6@example.com\nsynced7@example.com\n", { listid: String(list) })).status).toBe("completed");

    expect(await drainImports(stepEnv, imports)).toBeGreaterThanOrEqual(3);
    const members = await panelData
      .prepare("SELECT c.pk_value AS key FROM list_members m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? AND m.list_id = ? ORDER BY c.pk_value")
      .bind(panel.id, list)
      .all<{ key: string }>();
    expect(members.results.map((m) => m.key)).toEqual(["synced0@example.com", "synced5@example.com", "synced6@example.com", "synced7@example.com"]);
    expect(await countOf(panel, "Synced")).toBe(4);
    // Each added again is a new member with its proof of consent, as on a list emptied in one step.
    expect(await countRows("SELECT COUNT(*) AS n FROM consent_records WHERE panel_id = ? AND list_id = ? AND via = 'import'", panel.id, list)).toBe(2);
  });

  it("a deleted list is gone and its name free at once; its members go in steps, then its row", async () => {
    const panel = await createPanel();
    const list = await listWithMembers(panel, "Gone", 5);
    const { stepEnv, imports } = steppingEnv(1);

    expect(await removeList(stepEnv, panelData, panel.id, [], { name: "Gone" }, Date.now())).toEqual({ ok: true, value: true });
    expect(await countOf(panel, "Gone")).toBeUndefined();
    expect(await held(panel, list)).toBe(4);
    // The next step's nudge is lost; the cron's re-drive a minute later sends it again.
    imports.bodies.splice(0);
    await listClearRedrive.run(stepEnv, Date.now() + 30_000);
    expect(imports.bodies).toHaveLength(0);
    await listClearRedrive.run(stepEnv, Date.now() + 2 * 60_000);
    expect(imports.bodies.map(readListClearNudge)).toEqual([{ type: "list_clear", panelId: panel.id, listId: list }]);
    // Nobody joins it meanwhile, and its name makes a new, empty list.
    const again = await apiFor(panel)("contact", "add", { data: { EMAIL: "new@example.com" }, listid: list });
    expect(again.status).toBe(404);
    expect(again.body.message).toBe(`listid: no list with id ${list} in this panel`);
    const made = (await apiFor(panel)("lists", "add", { listname: "Gone" })).body.listid as number;
    expect(made).not.toBe(list);
    expect((await apiFor(panel)("lists", "delete", { listname: "Gone" })).status).toBe(200);
    expect((await apiFor(panel)("lists", "delete", { listname: "Gone" })).status).toBe(404);

    expect(await drainImports(stepEnv, imports)).toBeGreaterThanOrEqual(4);
    expect(await held(panel, list)).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND id = ?", panel.id, list)).toBe(0);
  });

  it("deleting the list a campaign was sent from: its members go, its row stays deleted for the campaign, its number is not handed out again", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const { id } = await scheduled(panel, `EMAIL\n${Array.from({ length: 4 }, (_, i) => `c${i}@example.com`).join("\n")}\n`, {}, 134);
    const listId = (await getCampaign(panelData, panel.id, id))!.listId!;
    const name = ((await api("lists", "getall")).body.lists as Array<{ id: number; listname: string }>).find((l) => l.id === listId)!.listname;

    const deleted = await api("lists", "delete", { listname: name });
    expect(deleted.status).toBe(200);
    expect(((await api("lists", "getall")).body.lists as Array<{ id: number }>).map((l) => l.id)).not.toContain(listId);
    expect(await held(panel, listId)).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND id = ? AND clear_after IS NULL AND deleted_at IS NOT NULL", panel.id, listId)).toBe(1);
    // Nothing is left for the re-drive, and the campaign still reads.
    await listClearRedrive.run(env, Date.now() + 5 * 60_000);
    expect(await countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND clear_after IS NOT NULL", panel.id)).toBe(0);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}`)).status).toBe(200);
    expect((await api("lists", "add", { listname: name })).body.listid).toBe(listId + 1);
  });

  it("a list whose members span fewer ids than a step is emptied or deleted whole before the answer, with no step left for the queue", async () => {
    const panel = await createPanel();
    const emptied = await listWithMembers(panel, "Small", 3);
    const deleted = await listWithMembers(panel, "Brief", 2);
    // Contacts made after the lists' members: the shard's ids run on past them.
    await listWithMembers(panel, "After", 3);
    // Steps of four ids: each list's members fit one, the shard's ids do not.
    const { stepEnv, imports } = steppingEnv(4);

    expect(await emptyList(stepEnv, panelData, panel.id, [], { name: "Small" }, Date.now())).toEqual({ ok: true, value: { removed: 3 } });
    expect(await held(panel, emptied)).toBe(0);
    expect(await removeList(stepEnv, panelData, panel.id, [], { name: "Brief" }, Date.now())).toEqual({ ok: true, value: true });
    expect(await held(panel, deleted)).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND id = ?", panel.id, deleted)).toBe(0);
    expect(imports.bodies).toEqual([]);
    expect(await countRows("SELECT COUNT(*) AS n FROM lists WHERE panel_id = ? AND clear_after IS NOT NULL", panel.id)).toBe(0);
    expect(await countOf(panel, "After")).toBe(3);
  });
});
