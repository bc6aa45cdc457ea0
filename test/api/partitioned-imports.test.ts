import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap, splitByShard } from "../../src/services/access/partitions";
import { DEFAULT_TUNING, type ImportTuning } from "../../src/services/imports";
import { commitImportPart, importPartStatements, type ImportedRow } from "../../src/store/imports";
import type { ShardDb } from "../../src/store/shards";
import { countedEnv, type D1Use } from "../../bench/worker/d1-count";
import { ADMIN_TOKEN, admin, apiFor, call, createPanel, jobFinished, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { deliver, hostFile, importCsv, importedRows, job, quietEnv, runToEnd, storeImportJob, TINY } from "../support/imports";
import { keyOn, membersOn, shard0, TWO } from "../support/partitions";
import { spiedShard } from "../support/batch-spy";

// Decision 0038 step 3: an import's rows go to their key's partition. A panel split over two
// partitions (TWO: SHARD_0 and SHARD_1, its home); the job's own state stays on the home.

async function contactsOn(db: ShardDb, panelId: string): Promise<Record<string, unknown>> {
  const { results } = await db.prepare("SELECT pk_value, attrs FROM contacts WHERE panel_id = ? ORDER BY pk_value").bind(panelId).all<{ pk_value: string; attrs: string }>();
  return Object.fromEntries(results.map((r) => [r.pk_value, JSON.parse(r.attrs)]));
}

async function consentOn(db: ShardDb, panelId: string): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT c.pk_value || ' ' || r.kind || ' ' || r.list_id || ' ' || r.via || ' ' || r.via_id AS r FROM consent_records r JOIN contacts c ON c.id = r.contact_id
       WHERE r.panel_id = ? ORDER BY c.pk_value, r.list_id`,
    )
    .bind(panelId)
    .all<{ r: string }>();
  return results.map((r) => r.r);
}

const sorted = (items: string[]) => [...items].sort();

async function counts(panel: TestPanel): Promise<Record<string, number>> {
  return Object.fromEntries(((await apiFor(panel)("lists", "getall")).body.lists as Array<{ listname: string; count: number }>).map((l) => [l.listname, l.count]));
}

/** The panel's upload of `csv` into a list (the raw body), with a column mapping. */
async function upload(panel: TestPanel, listId: number, csv: string, mapping?: unknown): Promise<any> {
  const query = new URLSearchParams({ name: "people.csv", ...(mapping === undefined ? {} : { mapping: JSON.stringify(mapping) }) });
  const response = await call(`/admin/v1/panels/${panel.id}/lists/${listId}/uploads?${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "text/csv" },
    body: csv,
  });
  const body = (await response.json()) as any;
  expect(response.status, JSON.stringify(body)).toBe(202);
  return jobFinished(panel, body.jobid);
}

/** A panel on TWO with a list, and a stored import into it of eight keys alternating SHARD_0 and SHARD_1 (so chunks of two rows write on both). */
async function alternatingImport(): Promise<{ panel: TestPanel; list: number; keys: string[]; ref: Awaited<ReturnType<typeof storeImportJob>> }> {
  const panel = await createPanel();
  const list = (await apiFor(panel)("lists", "add", { listname: "L" })).body.listid as number;
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const keys = [0, 1, 2, 3].flatMap((i) => [keyOn(panel.id, 0, i), keyOn(panel.id, 1, i)]);
  const ref = await storeImportJob(panel.id, { sources: [{ url: await hostFile(["EMAIL", ...keys].join("\n")) }], listId: list });
  return { panel, list, keys, ref };
}

/** Every key of alternatingImport once, on its own shard, and all eight in the list. */
async function expectEachOnItsShard(panel: TestPanel, keys: string[]): Promise<void> {
  expect(Object.keys(await contactsOn(shard0, panel.id))).toEqual(sorted(keys.filter((_, i) => i % 2 === 0)));
  expect(Object.keys(await contactsOn(panelData, panel.id))).toEqual(sorted(keys.filter((_, i) => i % 2 === 1)));
  expect(await counts(panel)).toEqual({ L: 8 });
}

describe("imports of a panel on two partitions (decision 0038 step 3)", () => {
  it("writes each row's contact, membership and consent on its key's shard, sums the job's counts and the lists' counts", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const a = (await api("lists", "add", { listname: "A" })).body.listid as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const b = (await api("lists", "add", { listname: "B" })).body.listid as number;
    const [x0, y0, z0] = [keyOn(panel.id, 0, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 0, 2)];
    const [x1, y1] = [keyOn(panel.id, 1, 0), keyOn(panel.id, 1, 1)];

    // The API's bulk upload into A: rows of both shards, a key repeated, a row refused.
    const first = await importCsv(panel, `EMAIL,NAME\n${x0},X0\n${x1},X1\n${y0},Y0\nbad-address,Nope\n${y1},Y1\n${x0},X0 again\n`, { listid: String(a) });
    expect(first).toMatchObject({ status: "completed", total: 6, created: 4, updated: 1, failed: 1, listid: a });
    expect(await contactsOn(shard0, panel.id)).toEqual({ [x0]: { EMAIL: x0, NAME: "X0 again" }, [y0]: { EMAIL: y0, NAME: "Y0" } });
    expect(await contactsOn(panelData, panel.id)).toEqual({ [x1]: { EMAIL: x1, NAME: "X1" }, [y1]: { EMAIL: y1, NAME: "Y1" } });
    expect(await membersOn(shard0, panel.id)).toEqual(sorted([`${x0} in ${a}`, `${y0} in ${a}`]));
    expect(await membersOn(panelData, panel.id)).toEqual(sorted([`${x1} in ${a}`, `${y1} in ${a}`]));
    // One subscribe record per membership added, on the contact's shard, naming the job.
    expect(await consentOn(shard0, panel.id)).toEqual(sorted([x0, y0]).map((k) => `${k} subscribe ${a} import ${first.jobid}`));
    expect(await consentOn(panelData, panel.id)).toEqual(sorted([x1, y1]).map((k) => `${k} subscribe ${a} import ${first.jobid}`));
    expect(await counts(panel)).toEqual({ A: 4, B: 0 });
    // The job itself is the home's only.
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM import_jobs WHERE panel_id = ?").bind(panel.id).first("n")).toBe(0);
    // The contacts read through the API from either partition.
    expect((await api("contact", "view", { data: x0 })).body).toMatchObject({ contact: { NAME: "X0 again" }, lists: [{ id: a, listname: "A" }] });

    // The panel's URL import into A again: known contacts updated where they are, a new one added;
    // members already there get no second consent record.
    const url = await hostFile(`EMAIL,NAME\n${x0},X0 renamed\n${y1},Y1 renamed\n${z0},Z0\n`);
    const started = await admin("POST", `/panels/${panel.id}/lists/${a}/imports`, { url });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const second = await jobFinished(panel, started.body.jobid);
    expect(second).toMatchObject({ status: "completed", total: 3, created: 1, updated: 2, failed: 0 });
    expect(await contactsOn(shard0, panel.id)).toMatchObject({ [x0]: { NAME: "X0 renamed" }, [z0]: { NAME: "Z0" } });
    expect(await contactsOn(panelData, panel.id)).toMatchObject({ [y1]: { NAME: "Y1 renamed" } });
    expect(Object.keys(await contactsOn(panelData, panel.id))).not.toContain(z0);
    expect((await consentOn(shard0, panel.id)).filter((r) => r.endsWith(second.jobid))).toEqual([`${z0} subscribe ${a} import ${second.jobid}`]);
    expect((await consentOn(panelData, panel.id)).filter((r) => r.endsWith(second.jobid))).toEqual([]);
    expect(await counts(panel)).toEqual({ A: 5, B: 0 });

    // The panel's upload into B (made after the map: its mirror row on SHARD_0) with a mapping that
    // makes a new attribute: defined on the home and the mirror, the values on each contact's shard.
    const third = await upload(panel, b, `E-mail,Shoe\n${y0},38\n${x1},41\n`, { "E-mail": "EMAIL", Shoe: { new: "shoe_size", type: "integer" } });
    expect(third).toMatchObject({ status: "completed", total: 2, created: 0, updated: 2, failed: 0 });
    for (const db of [shard0, panelData]) {
      expect(await db.prepare("SELECT type FROM attributes WHERE panel_id = ? AND name = 'SHOE_SIZE'").bind(panel.id).first("type")).toBe("integer");
    }
    expect((await contactsOn(shard0, panel.id))[y0]).toEqual({ EMAIL: y0, NAME: "Y0", SHOE_SIZE: 38 });
    expect((await contactsOn(panelData, panel.id))[x1]).toEqual({ EMAIL: x1, NAME: "X1", SHOE_SIZE: 41 });
    expect(await membersOn(shard0, panel.id)).toContain(`${y0} in ${b}`);
    expect(await membersOn(panelData, panel.id)).toContain(`${x1} in ${b}`);
    expect(await counts(panel)).toEqual({ A: 5, B: 2 });
  });

  it("commits a chunk's parts before the home's checkpoint, chunk after chunk, within a step's statements", async () => {
    // Chunks of two rows (TINY): each writes on both shards.
    const { panel, list, keys, ref } = await alternatingImport();
    const done = await runToEnd(ref, quietEnv().env, TINY);
    expect(done).toMatchObject({ status: "completed", total: 8, created: 8, updated: 0, failed: 0 });
    await expectEachOnItsShard(panel, keys);

    // A step of the default tuning stays within D1's 1,000 queries of one invocation, counting every shard.
    const tuning: ImportTuning = { ...DEFAULT_TUNING, chunkRows: 10 };
    const rows = Array.from({ length: tuning.chunkRows * (tuning.stepChunks + 1) }, (_, i) => (i % 3 === 2 ? `bad-${i}` : `many${i}@example.com`));
    const big = await storeImportJob(panel.id, { sources: [{ url: await hostFile(["EMAIL", ...rows].join("\n")) }], listId: list });
    const used: D1Use = { statements: 0, roundTrips: 0 };
    const quiet = quietEnv();
    await deliver(big, quiet.env, tuning); // fetch and header
    await deliver(big, countedEnv(quiet.env, used), tuning);
    const after = await job(big);
    expect(after.phase).toBe("rows");
    expect(after.seq).toBeGreaterThan(0);
    expect(after.seq).toBeLessThan(tuning.stepChunks);
    expect(used.statements).toBeLessThan(1000);
  });

  it("writes a chunk's parts while the chunk before lands on the home; a home batch that fails loses no row", async () => {
    const { panel, keys, ref } = await alternatingImport();
    const tuning: ImportTuning = { ...TINY, stepChunks: 100 };

    // The home's chunk batches (those moving the checkpoint) held until the other shard has seen
    // the next chunk's part, or two seconds; the second one fails.
    let parts = 0;
    let homeBatches = 0;
    const partsBeforeLanding: number[] = [];
    const home = spiedShard(
      panelData,
      async (statements, checkpoint) => {
        if (!statements.some(checkpoint)) return panelData.batch(statements);
        const nth = ++homeBatches;
        for (const started = Date.now(); parts < nth + 1 && Date.now() - started < 2000; ) await new Promise((r) => setTimeout(r, 10));
        partsBeforeLanding.push(parts);
        if (nth === 2) throw new Error("D1 is overloaded");
        return panelData.batch(statements);
      },
      (sql) => sql.includes("UPDATE import_jobs SET seq"),
    );
    const other = spiedShard(shard0, (statements) => (parts++, shard0.batch(statements)));
    const failed = await deliver(ref, quietEnv({ SHARD_1: home, SHARD_0: other } as Partial<Env>).env, tuning);
    expect(failed.retryMessages).toHaveLength(1);
    // Chunk 2's part went out before chunk 1 landed on the home, chunk 3's before chunk 2 failed.
    expect(partsBeforeLanding).toEqual([2, 3]);
    expect((await job(ref)).seq).toBe(1);

    // The retry writes chunks 2 and 3 again: every row once on its key's shard, the counts whole.
    const done = await runToEnd(ref, quietEnv().env, tuning);
    expect(done).toMatchObject({ status: "completed", total: 8, failed: 0 });
    expect(done.created + done.updated).toBe(8);
    await expectEachOnItsShard(panel, keys);
  });

  it("writes a part again without doubling anything: its contacts then count as updated", async () => {
    const panel = await createPanel();
    const list = (await apiFor(panel)("lists", "add", { listname: "L" })).body.listid as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const rows: ImportedRow[] = importedRows(panel.id, [
      [keyOn(panel.id, 0, 0), { NAME: "One" }],
      [keyOn(panel.id, 0, 1), { NAME: "Two" }],
      [keyOn(panel.id, 0, 0), { NAME: "One again" }],
    ]);
    const job = { id: "job_part", panelId: panel.id };
    const part = () => importPartStatements(shard0, job, { rows, listId: list, now: Date.now() });
    expect(await commitImportPart(shard0, part())).toEqual({ created: 2 });
    expect(await commitImportPart(shard0, part())).toEqual({ created: 0 });
    expect((await contactsOn(shard0, panel.id))[keyOn(panel.id, 0, 0)]).toEqual({ NAME: "One again" });
    expect(await membersOn(shard0, panel.id)).toHaveLength(2);
    expect(await consentOn(shard0, panel.id)).toHaveLength(2);
  });

  it("leaves a panel without a map on its home, its rows untouched by the split", async () => {
    const panel = await createPanel();
    const a = (await apiFor(panel)("lists", "add", { listname: "A" })).body.listid as number;
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    const imported = await importCsv(panel, `EMAIL\n${k0}\n${k1}\n`, { listid: String(a) });
    expect(imported).toMatchObject({ status: "completed", total: 2, created: 2, updated: 0, failed: 0 });
    expect(Object.keys(await contactsOn(panelData, panel.id))).toEqual(sorted([k0, k1]));
    expect(await contactsOn(shard0, panel.id)).toEqual({});
    expect(await membersOn(panelData, panel.id)).toEqual(sorted([`${k0} in ${a}`, `${k1} in ${a}`]));
    expect(await counts(panel)).toEqual({ A: 2 });
    // The split hands the chunk's rows back as they are, with no part elsewhere.
    const rows = importedRows(panel.id, [[k0, {}], [k1, {}]]);
    const split = splitByShard(env, { shard: TEST_SHARD, partitions: [] }, rows, (row) => row[2]);
    expect(split.home).toBe(rows);
    expect(split.elsewhere).toEqual([]);
  });
});
