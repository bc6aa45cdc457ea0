import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import {
  DEFAULT_TUNING,
  MAX_IMPORT_ATTEMPTS,
  redriveStalledImports,
  startImport,
  STALL_MS,
  type ImportTuning,
  type StartImportOptions,
} from "../../../src/services/imports";
import { commitImportStatements, getImportJob, importChunkStatements, type ChunkCommit, type ImportJob } from "../../../src/store/imports";
import { getContactByKey } from "../../../src/store/contacts";
import { listNotifications } from "../../../src/store/notifications";
import { countedEnv, type D1Use } from "../../../bench/worker/d1-count";
import { admin, apiFor, call, contactsOf, createPanel, receiver, type TestPanel, panelData } from "../../support/helpers";
import { chunkAt, deliver, importedRows, job, quietEnv, runToEnd, storeImportJob, TINY } from "../../support/imports";

let panel: TestPanel;

beforeEach(async () => {
  panel = await createPanel();
});

/** A job of this test's panel stored but not queued: the test delivers its messages itself. */
const newJob = (options: Omit<StartImportOptions, "panelId">, now = Date.now()) => storeImportJob(panel.id, options, now);

const CSV = [
  "EMAIL,NAME,AGE",
  '"a@example.com","Ann, the first",30',
  "b@example.com,Bob,31",
  "bad-address,Nope,1",
  'c@example.com,"Cy ""C""\nSmith",32',
  "a@example.com,Ann again,",
  "d@example.com,Dee,old",
  "e@example.com,Eve,35",
].join("\r\n");

async function hostCsv(csv = CSV): Promise<string> {
  return receiver.putFile(`engine-${crypto.randomUUID()}.csv`, csv);
}

async function contacts(): Promise<Record<string, unknown>> {
  const stored = (await contactsOf(panel.id)).sort((a, b) => (a.key < b.key ? -1 : 1));
  return Object.fromEntries(stored.map((contact) => [contact.key, contact.attributes]));
}

const EXPECTED = { status: "completed", total: 7, created: 4, updated: 1, failed: 2 };

describe("import engine", () => {
  it("imports in many small chunks with the same outcome as in one", async () => {
    const quiet = quietEnv();
    const ref = await newJob({ sources: [{ url: await hostCsv() }] });
    const done = await runToEnd(ref, quiet.env);
    expect(done).toMatchObject(EXPECTED);
    expect(done.seq).toBeGreaterThan(3);
    // Each step but the last queued the next one.
    expect(quiet.sent.length).toBeGreaterThan(3);
    expect(await contacts()).toEqual({
      "a@example.com": { EMAIL: "a@example.com", NAME: "Ann again", AGE: 30 },
      "b@example.com": { EMAIL: "b@example.com", NAME: "Bob", AGE: 31 },
      "c@example.com": { EMAIL: "c@example.com", NAME: 'Cy "C"\nSmith', AGE: 32 },
      "e@example.com": { EMAIL: "e@example.com", NAME: "Eve", AGE: 35 },
    });
    const report = await env.FILES.get(done.errorReportKey!);
    const lines = (await report!.text()).trimEnd().split("\r\n");
    expect(lines.map((l) => l.split(",")[0])).toEqual(["row", "4", "7"]);
  });

  it("keeps a step of the default tuning within D1's 1,000 queries of one invocation, however its rows split", async () => {
    // Every other row refused, into a list, in chunks of ten rows: each chunk then makes every
    // kind of statement (its claim, upserts, report lines, the membership insert, the
    // checkpoint), and the step is stopped by its statements before its chunks run out.
    const tuning: ImportTuning = { ...DEFAULT_TUNING, chunkRows: 10 };
    const listid = (await apiFor(panel)("lists", "add", { listname: "Counted" })).body.listid;
    const rows = tuning.chunkRows * (tuning.stepChunks + 1);
    const csv = ["EMAIL,NAME", ...Array.from({ length: rows }, (_, i) => (i % 2 ? `bad-${i},Refused ${i}` : `u${i}@example.com,User ${i}`))].join("\n");
    const ref = await newJob({ sources: [{ url: await hostCsv(csv) }], listId: listid });
    const used: D1Use = { statements: 0, roundTrips: 0 };
    const quiet = quietEnv();
    await deliver(ref, countedEnv(quiet.env, used), tuning);
    const after = await job(ref);
    expect(after.phase).toBe("rows");
    expect(after.seq).toBeGreaterThan(0);
    expect(after.seq).toBeLessThan(tuning.stepChunks);
    // As close to the budget as a chunk's statements allow, and under the limit.
    expect(used.statements).toBeLessThan(1000);
    expect(used.statements).toBeGreaterThan(tuning.stepStatements - 10);
  });

  it("records a consent record naming the import for each membership it adds, none for members already there or rows repeated", async () => {
    const api = apiFor(panel);
    const listid = (await api("lists", "add", { listname: "Imported" })).body.listid as number;
    await api("contact", "add", { data: { EMAIL: "b@example.com" }, listid });
    const ref = await newJob({ sources: [{ url: await hostCsv() }], listId: listid });
    expect(await runToEnd(ref, quietEnv().env)).toMatchObject({ ...EXPECTED, created: 3, updated: 2 });
    const { results } = await panelData
      .prepare(
        `SELECT c.pk_value AS contact, r.kind, r.list_id, r.via, r.via_id, r.ip, r.user_agent, r.text FROM consent_records r JOIN contacts c ON c.id = r.contact_id
         WHERE r.panel_id = ? ORDER BY c.pk_value, r.via`,
      )
      .bind(panel.id)
      .all();
    const imported = { kind: "subscribe", list_id: listid, via: "import", via_id: ref.jobId, ip: null, user_agent: null, text: "" };
    expect(results).toEqual([
      { contact: "a@example.com", ...imported },
      // Bob joined through the API before: the import added no membership of his.
      { contact: "b@example.com", kind: "subscribe", list_id: listid, via: "api_key", via_id: panel.userId, ip: null, user_agent: null, text: "" },
      { contact: "c@example.com", ...imported },
      { contact: "e@example.com", ...imported },
    ]);
    // Each in the access export.
    const exported = await admin("GET", `/panels/${panel.id}/contacts/a@example.com/export`);
    expect(exported.body.consent).toEqual([{ kind: "subscribe", list_id: listid, topic: null, via: "import", via_id: ref.jobId, ip: null, user_agent: null, text: "", at: expect.any(String) }]);
  });

  it("counts a chunk committed twice once", async () => {
    const ref = await newJob({ sources: [{ url: await hostCsv() }] });
    const quiet = quietEnv();
    // Run to the rows phase, then commit the same chunk twice from the same checkpoint.
    while ((await job(ref)).phase !== "rows") await deliver(ref, quiet.env);
    const at = await job(ref);
    const chunk = chunkAt(at, [["twice@example.com", { EMAIL: "twice@example.com" }]]);
    // The count the step's budget uses is what the batch holds, with every kind of statement.
    const everyKind = importChunkStatements(panelData, at, { ...chunk, listId: 1, errorLines: [{ row: 9, line: "9,EMAIL,bad" }] });
    for (const each of ["jsonb_each", "json_each"] as const) expect(everyKind.build(each)).toHaveLength(everyKind.count);
    expect(everyKind.count).toBe(7);
    const commit = (c: ChunkCommit) => commitImportStatements(panelData, importChunkStatements(panelData, at, c));
    expect(await commit(chunk)).toBe("committed");
    expect(await commit({ ...chunk, rows: importedRows(panel.id, [["other@example.com", { EMAIL: "other@example.com" }]]) })).toBe("stale");
    const after = await job(ref);
    expect(after).toMatchObject({ seq: at.seq + 1, total: at.total + 1, created: at.created + 1, updated: at.updated });
    // The stale batch rolled back whole: its contact was never written.
    expect(await getContactByKey(panelData, panel.id, "other@example.com")).toBeNull();
  });

  it("stays exact when every message is delivered twice and two consumers run at once", async () => {
    const bucket = receiver.bucket("twice");
    const ref = await newJob({ sources: [{ url: await hostCsv() }], notifyEmails: ["ops@example.com"], callbackUrl: receiver.hookUrl(bucket) });
    const quiet = quietEnv();
    for (let i = 0; i < 200 && (await job(ref)).phase !== "done"; i++) {
      await Promise.all([deliver(ref, quiet.env), deliver(ref, quiet.env)]);
      await deliver(ref, quiet.env);
    }
    // Late copies of the message after the end change nothing.
    await Promise.all([deliver(ref, quiet.env), deliver(ref, quiet.env)]);
    expect(await job(ref)).toMatchObject({ ...EXPECTED, phase: "done" });
    expect(Object.keys(await contacts())).toHaveLength(4);
    // The email and the callback went out once.
    expect(await listNotifications(panelData, panel.id, 10, "import_summary")).toHaveLength(1);
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("resumes after a consumer that fails mid-job, without losing or doubling rows", async () => {
    const ref = await newJob({ sources: [{ url: await hostCsv() }], callbackUrl: receiver.hookUrl(receiver.bucket("resume")) });
    const quiet = quietEnv();
    while ((await job(ref)).seq < 2) await deliver(ref, quiet.env);

    // D1 fails on the next chunk's batch: the step throws, the message is retried.
    const failingDb = new Proxy(panelData, {
      get(target, name) {
        if (name === "batch") return async () => Promise.reject(new Error("D1 is overloaded"));
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const before = await job(ref);
    const failed = await deliver(ref, quietEnv({ SHARD_1: failingDb }).env);
    expect(failed.retryMessages).toHaveLength(1);
    expect(failed.explicitAcks).toHaveLength(0);
    expect(await job(ref)).toMatchObject({ seq: before.seq, total: before.total, attempts: 1, lastError: "D1 is overloaded" });

    // The next message is lost after the chunk committed (the send fails): retried too.
    const lostSend = quietEnv({ IMPORTS: { send: async () => Promise.reject(new Error("queue down")) } as unknown as Queue });
    const lost = await deliver(ref, lostSend.env);
    expect(lost.retryMessages).toHaveLength(1);
    expect((await job(ref)).seq).toBe(before.seq + 1);

    const done = await runToEnd(ref, quiet.env);
    expect(done).toMatchObject({ ...EXPECTED, attempts: 0 });
    expect(done.callbackState).toBe("sent");
  });

  it("gives up after repeated transient download errors, with the reason", async () => {
    const bucket = receiver.bucket("flaky");
    await receiver.script(bucket, [{ status: 503, body: "busy" }]);
    const ref = await newJob({ sources: [{ url: receiver.hookUrl(bucket) }] });
    const quiet = quietEnv();
    for (let attempt = 1; attempt < MAX_IMPORT_ATTEMPTS; attempt++) {
      const result = await deliver(ref, quiet.env);
      expect(result.retryMessages).toHaveLength(1);
      expect(await job(ref)).toMatchObject({ status: "running", attempts: attempt });
    }
    await deliver(ref, quiet.env);
    const failed = await runToEnd(ref, quiet.env);
    expect(failed.status).toBe("failed");
    expect(failed.reason).toMatch(/answered HTTP 503$/);
    expect(await receiver.requests(bucket)).toHaveLength(MAX_IMPORT_ATTEMPTS);
  });

  it("imports a chunk whose rows and report lines need several JSON arrays, each row once and whole", async () => {
    // A control character is one byte in the file and six in JSON (\u0001): 250 rows of 2,000
    // fill one chunk of the default tuning and take about 3 MB as JSON, several bound values.
    const cell = "\u0001".repeat(2000);
    const lines = Array.from({ length: 250 }, (_, i) => (i % 5 === 4 ? `bad-${i},${cell}` : `u${i}@example.com,${cell}`));
    const ref = await newJob({ sources: [{ url: await hostCsv(["EMAIL,NAME", ...lines].join("\n")) }] });
    const used: D1Use = { statements: 0, roundTrips: 0 };
    const done = await runToEnd(ref, countedEnv(quietEnv().env, used), DEFAULT_TUNING);
    expect(done).toMatchObject({ status: "completed", total: 250, created: 200, failed: 50 });
    expect(done.seq).toBe(1);
    const stored = await contactsOf(panel.id);
    expect(stored).toHaveLength(200);
    expect(stored.every((contact) => contact.attributes.NAME === cell)).toBe(true);
    const report = (await (await env.FILES.get(done.errorReportKey!))!.text()).trimEnd().split("\r\n");
    expect(report.slice(1).map((line) => line.split(",")[0])).toEqual(Array.from({ length: 50 }, (_, i) => String(i * 5 + 6)));
  });

  it("fails a job whose row never ends (a quote left open) with the row number", async () => {
    const open = `EMAIL,NAME\nok@example.com,Ok\nx@example.com,"open${" and on".repeat(40)}\n`;
    const ref = await newJob({ sources: [{ url: await hostCsv(open) }] });
    const done = await runToEnd(ref, quietEnv().env, { ...TINY, maxRecordBytes: 100 });
    expect(done.status).toBe("failed");
    expect(done.reason).toBe("Row 3 is longer than 100 bytes; is a quote left open?");
    expect(done.created).toBe(1);
  });

  it("reports a huge refused row without repeating it", async () => {
    const csv = `EMAIL,NAME\nok@example.com,Ok\nx@example.com,"${"y".repeat(40_000)}\n`;
    const ref = await newJob({ sources: [{ url: await hostCsv(csv) }] });
    const done = await runToEnd(ref, quietEnv().env, DEFAULT_TUNING);
    expect(done).toMatchObject({ status: "completed", total: 2, created: 1, failed: 1 });
    const report = await (await env.FILES.get(done.errorReportKey!))!.text();
    expect(report.split("\r\n")[1]).toMatch(/^3,,"the quotes of the row are malformed.*",\(the row is \d+ characters long and is not repeated here\)$/);
  });

  it("re-drives a stalled job from the cron, and leaves moving jobs alone", async () => {
    const now = Date.now();
    const stalled = await newJob({ sources: [{ url: await hostCsv() }] }, now - STALL_MS - 1000);
    const fresh = await newJob({ sources: [{ url: await hostCsv() }] }, now);
    const quiet = quietEnv();
    await redriveStalledImports.run(quiet.env, now);
    const nudged = quiet.sent.map((body) => (body as { jobId: string }).jobId);
    expect(nudged).toContain(stalled.jobId);
    expect(nudged).not.toContain(fresh.jobId);
    // Marked as re-driven: the next minute does not send it again.
    await redriveStalledImports.run(quiet.env, now + 1000);
    expect(quiet.sent.filter((body) => (body as { jobId: string }).jobId === stalled.jobId)).toHaveLength(1);

    // With the real queue, the re-driven job runs to the end.
    const lost = await newJob({ sources: [{ url: await hostCsv() }] }, now - STALL_MS - 1000);
    await redriveStalledImports.run(env, now);
    for (let i = 0; i < 600 && (await job(lost)).phase !== "done"; i++) await scheduler.wait(50);
    expect(await job(lost)).toMatchObject({ ...EXPECTED, phase: "done" });
  });
});

describe("recovery after a crash or a lost message", () => {
  /** The messages a cron run at `at` sends, as job ids. */
  async function cronNudges(at: number): Promise<string[]> {
    const quiet = quietEnv();
    await redriveStalledImports.run(quiet.env, at);
    return quiet.sent.map((body) => (body as { jobId: string }).jobId);
  }

  it("takes a job up again at the first cron tick after its consumer died holding it, mid-download or mid-rows, counting each row once", async () => {
    const quiet = quietEnv();
    const midRows = await newJob({ sources: [{ url: await hostCsv() }] });
    while ((await job(midRows)).seq < 2) await deliver(midRows, quiet.env);
    const midDownload = await newJob({ sources: [{ url: await hostCsv() }] });
    // Consumers that took the jobs and died: their leases were last renewed at the crash, and
    // their messages are gone (a local queue forgets them; on Cloudflare they may be dead-lettered).
    const crash = Date.now();
    for (const ref of [midRows, midDownload]) {
      await panelData.prepare("UPDATE import_jobs SET lease = 'dead', leased_until = ?, status = 'running', started_at = ? WHERE id = ?")
        .bind(crash + DEFAULT_TUNING.leaseMs, crash, ref.jobId)
        .run();
    }
    // While the lease runs, nobody else takes the jobs, neither a stray message nor the cron.
    expect(await deliver(midRows, quiet.env)).toMatchObject({ explicitAcks: [expect.any(String)] });
    expect((await job(midRows)).seq).toBe(2);
    expect(await cronNudges(crash + 1000)).not.toContain(midRows.jobId);
    // The first tick after the lease ran out sends both again.
    const nudged = await cronNudges(crash + 60_000);
    expect(nudged).toEqual(expect.arrayContaining([midRows.jobId, midDownload.jobId]));
    const minuteLater = () => Date.now() + 60_000;
    expect(await runToEnd(midRows, quiet.env, TINY, minuteLater)).toMatchObject({ ...EXPECTED, phase: "done" });
    // The same file again: the contacts exist now, so every row is an update, each counted once.
    expect(await runToEnd(midDownload, quiet.env, TINY, minuteLater)).toMatchObject({ status: "completed", total: 7, created: 0, updated: 5, failed: 2 });
    expect(Object.keys(await contacts())).toHaveLength(4);
  });

  it("takes a job up again at the first cron tick after its next message was lost", async () => {
    const ref = await newJob({ sources: [{ url: await hostCsv() }] });
    const quiet = quietEnv();
    while ((await job(ref)).seq < 1) await deliver(ref, quiet.env);
    // The step's next message fails to send, and the retry of the message is lost as well.
    const lostSend = quietEnv({ IMPORTS: { send: async () => Promise.reject(new Error("queue down")) } as unknown as Queue });
    await deliver(ref, lostSend.env);
    const lostAt = Date.now();
    expect(await cronNudges(lostAt + 1000)).not.toContain(ref.jobId);
    expect(await cronNudges(lostAt + 60_000)).toContain(ref.jobId);
    expect(await runToEnd(ref, quiet.env)).toMatchObject({ ...EXPECTED, phase: "done" });
  });

  it("never takes a slow download that is alive for dead: its heartbeat keeps the lease", async () => {
    const bucket = receiver.bucket("slow");
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "text/csv" }, body: CSV, delayMs: 1500 }]);
    const ref = await newJob({ sources: [{ url: receiver.hookUrl(bucket) }] });
    const tuning = { ...TINY, leaseMs: 300, heartbeatMs: 100 };
    const quiet = quietEnv();
    const first = deliver(ref, quiet.env, tuning);
    await scheduler.wait(800);
    // Long past the lease without its renewals, and quiet for long: only the heartbeat keeps it.
    await panelData.prepare("UPDATE import_jobs SET updated_at = 0 WHERE id = ?").bind(ref.jobId).run();
    expect(await cronNudges(Date.now())).not.toContain(ref.jobId);
    expect(await deliver(ref, quiet.env, tuning)).toMatchObject({ explicitAcks: [expect.any(String)] });
    await first;
    expect((await job(ref)).phase).not.toBe("fetch");
    expect(await runToEnd(ref, quiet.env)).toMatchObject({ ...EXPECTED, phase: "done" });
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });
});

describe("startImport, the programmatic entry", () => {
  const put = async (name: string, text: string) => {
    const key = `test/${crypto.randomUUID()}/${name}`;
    await env.FILES.put(key, text);
    return key;
  };

  it("returns the stored job when the queue send fails; the re-drive starts it later", async () => {
    const key = await put("lost.csv", "EMAIL\nlost@example.com\n");
    const failingQueue = { send: async () => Promise.reject(new Error("queue down")) } as unknown as Queue;
    const jobId = await startImport({ ...env, IMPORTS: failingQueue }, panelData, { panelId: panel.id, sources: [{ key }] });
    expect(await getImportJob(panelData, panel.id, jobId)).toMatchObject({ status: "queued" });
  });

  it("imports several files already in R2 into a list as one job", async () => {
    const api = apiFor(panel);
    const listid = (await api("lists", "add", { listname: "From zip" })).body.listid;
    const first = await put("part1.csv", "EMAIL,NAME\r\none@example.com,One\r\nbad,Bad\r\n");
    const second = await put("part2.csv", "\uFEFFemail,name\ntwo@example.com,Two\none@example.com,Uno\n");
    const jobId = await startImport(env, panelData, { panelId: panel.id, sources: [{ key: first }, { key: second }], listId: listid, origin: "https://api.test" });
    let done: ImportJob | null = null;
    for (let i = 0; i < 600 && done?.phase !== "done"; i++) {
      done = await getImportJob(panelData, panel.id, jobId);
      await scheduler.wait(50);
    }
    expect(done).toMatchObject({ status: "completed", total: 4, created: 2, updated: 1, failed: 1 });
    expect((await api("lists", "getall")).body.lists[0].count).toBe(2);
    // Sources the caller stored stay; only the engine's own downloads are deleted.
    expect(await env.FILES.head(first)).not.toBeNull();
    const report = await call(`/apiv2/jobs/${jobId}/errors.csv?apikey=${panel.apiKey}`);
    expect((await report.text()).split("\r\n").slice(0, 2)).toEqual([
      "file,row,column,reason,EMAIL,NAME",
      'part1.csv,3,EMAIL,"EMAIL is not a valid email address: ""bad""",bad,Bad',
    ]);
  });

  it("refuses files whose header rows differ, before writing any row", async () => {
    const first = await put("a.csv", "EMAIL,NAME\nx@example.com,X\n");
    const second = await put("b.csv", "EMAIL,CITY\ny@example.com,Goa\n");
    const ref = await newJob({ sources: [{ key: first, name: "a.csv" }, { key: second, name: "b.csv" }] });
    const done = await runToEnd(ref, quietEnv().env);
    expect(done).toMatchObject({ status: "failed", reason: 'The file "b.csv" does not have the same header row as "a.csv"; every file of an import must' });
    expect(await contactsOf(panel.id)).toEqual([]);
  });

  it("fails a job whose R2 source is missing", async () => {
    const ref = await newJob({ sources: [{ key: `test/${crypto.randomUUID()}/gone.csv` }] });
    const done = await runToEnd(ref, quietEnv().env);
    expect(done).toMatchObject({ status: "failed", reason: 'The file "gone.csv" is not in storage' });
  });
});
