import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../src/jobs/queues";
import { EXPORT_STALL_MS, EXPORT_TUNING, exportNudge, runExportStep, segmentExportsRedrive, startSegmentExport, type ExportTuning } from "../../src/services/segments/export";
import { commitExportPart, getSegmentExport, leaseSegmentExport, type ExportRef } from "../../src/store/segment-exports";
import { getPanel } from "../../src/store/panels";
import { getSegment } from "../../src/store/segments";
import { admin, apiFor, call, ADMIN_TOKEN, createPanel, jobFinished, panelData, type TestPanel } from "../support/helpers";
import { quietEnv } from "../support/imports";

/** Two members a page and three a part: a handful of members makes several pages, parts and steps. */
const TINY: ExportTuning = { ...EXPORT_TUNING, pageRows: 2, partRows: 3, stepMs: 60_000 };

async function exportPanel(n = 7) {
  const panel = await createPanel();
  const api = apiFor(panel);
  await api("contact", "add", { data: { EMAIL: "formula@example.com", NAME: "=SUM(A1:A9)", CITY: "Pune", AGE: 40 } });
  await api("contact", "add", { data: { EMAIL: "quote@example.com", NAME: 'Cy "the, third"', CITY: "Pune" } });
  await api("contact", "add", { data: { EMAIL: "elsewhere@example.com", NAME: "Out", CITY: "Goa" } });
  for (let i = 0; i < n - 2; i++) await api("contact", "add", { data: { EMAIL: `p${i}@example.com`, NAME: `P${i}`, CITY: "Pune", AGE: 20 + i } });
  const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
  expect(segment.status).toBe(201);
  return { panel, segmentId: segment.body.id as string };
}

const waitForExport = jobFinished;

function download(panel: TestPanel, jobId: string, token = ADMIN_TOKEN) {
  return call(`/admin/v1/panels/${panel.id}/jobs/${jobId}/export.csv`, { headers: { authorization: `Bearer ${token}` } });
}

const linesOf = (text: string) => text.split("\r\n").slice(0, -1);

async function deliver(body: unknown, handlerEnv: Env) {
  const batch = createMessageBatch("apiv2-imports-default", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await handleQueue(batch, handlerEnv, ctx);
  return getQueueResult(batch, ctx);
}

async function fileOf(ref: ExportRef): Promise<string[]> {
  const job = (await getSegmentExport(panelData, ref.panelId, ref.exportId))!;
  const texts = await Promise.all(job.parts.map(async (part) => (await env.FILES.get(part.key))!.text()));
  return linesOf(texts.join(""));
}

describe("segment export (CONTRACT 9 POST …/segments/{id}/export)", () => {
  it("writes the members' primary key and chosen attributes to a CSV in R2, with progress and an authenticated download", async () => {
    const { panel, segmentId } = await exportPanel();
    const started = await call(`/admin/v1/panels/${panel.id}/segments/${segmentId}/export?attributes=name,%20AGE`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(started.status).toBe(202);
    const { jobid } = (await started.json()) as { jobid: string };
    expect(jobid).toMatch(/^exp_/);
    const job = await waitForExport(panel, jobid);
    expect(job).toMatchObject({
      jobid,
      type: "segment_export",
      segment: segmentId,
      status: "completed",
      reason: null,
      columns: ["EMAIL", "NAME", "AGE"],
      progress: { rows: 7, total: 7 },
      download: `/admin/v1/panels/${panel.id}/jobs/${jobid}/export.csv`,
    });
    const file = await download(panel, jobid);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const text = await file.text();
    expect(Number(file.headers.get("content-length"))).toBe(new TextEncoder().encode(text).byteLength);
    expect(linesOf(text)).toEqual([
      "EMAIL,NAME,AGE",
      "formula@example.com,'=SUM(A1:A9),40",
      'quote@example.com,"Cy ""the, third""",',
      "p0@example.com,P0,20",
      "p1@example.com,P1,21",
      "p2@example.com,P2,22",
      "p3@example.com,P3,23",
      "p4@example.com,P4,24",
    ]);
    // Only the admin token or a session of the panel reads it.
    expect((await download(panel, jobid, "wrong-token")).status).toBe(401);
  });

  it("refuses unknown attributes and segments, another panel's segment and job, and a download before completion; stores nothing", async () => {
    const { panel, segmentId } = await exportPanel(2);
    const other = await createPanel();
    const refused = await admin("POST", `/panels/${panel.id}/segments/${segmentId}/export?attributes=NAME,SHOE_SIZE`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "attributes", message: "no attribute named SHOE_SIZE in this panel" }]);
    expect((await admin("POST", `/panels/${panel.id}/segments/seg_missing/export`)).status).toBe(404);
    expect((await admin("POST", `/panels/${other.id}/segments/${segmentId}/export`)).status).toBe(404);
    expect((await admin("POST", `/panels/${panel.id}/segments/${segmentId}/export?limit=3`)).status).toBe(400);
    const stored = await panelData.prepare("SELECT COUNT(*) AS n FROM segment_exports WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(stored!.n).toBe(0);

    // A job stored but not run yet: its file is not there, and another panel cannot see it.
    const quiet = quietEnv();
    const started = await startSegmentExport(quiet.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, [], Date.now());
    if (!started.ok) throw new Error("not started");
    const pending = await download(panel, started.value.id);
    expect(pending.status).toBe(409);
    expect(((await pending.json()) as { error: string }).error).toBe("The export is queued; its file can be downloaded once it is completed");
    expect((await admin("GET", `/panels/${other.id}/jobs/${started.value.id}`)).status).toBe(404);
    const elsewhere = await download(other, started.value.id);
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toEqual({ error: `No job "${started.value.id}" in panel "${other.id}"`, errors: [] });
    const noReport = await call(`/admin/v1/panels/${other.id}/jobs/job_none/errors.csv`, { headers: { authorization: "Bearer test-admin-token" } });
    expect(await noReport.json()).toEqual({ error: `No job "job_none" in panel "${other.id}"`, errors: [] });
  });

  it("a lost nudge is found by the cron; duplicated nudges and overlapping steps still write each member exactly once", async () => {
    const { panel, segmentId } = await exportPanel(8);
    const dropped = quietEnv();
    const started = await startSegmentExport(dropped.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, ["NAME"], Date.now());
    if (!started.ok) throw new Error("not started");
    const ref = { panelId: panel.id, exportId: started.value.id };
    // The nudge is dropped: nothing runs.
    dropped.sent.length = 0;
    expect((await getSegmentExport(panelData, panel.id, ref.exportId))!.status).toBe("queued");

    // The cron sees nothing stalled yet, then, once the job has been quiet long enough, nudges it once.
    const cron = quietEnv();
    const mine = () => cron.sent.filter((body) => (body as ExportRef).exportId === ref.exportId);
    await segmentExportsRedrive.run(cron.env, Date.now());
    expect(mine()).toEqual([]);
    const later = Date.now() + EXPORT_STALL_MS + 1000;
    await segmentExportsRedrive.run(cron.env, later);
    expect(mine()).toEqual([exportNudge(ref)]);
    await segmentExportsRedrive.run(cron.env, later + 1000);
    expect(mine()).toHaveLength(1);

    // Two steps at once (the re-driven nudge and a late copy of the lost one): one holds the job.
    const outcomes = await Promise.all([runExportStep(env, ref, TINY), runExportStep(env, ref, TINY)]);
    expect(outcomes.sort()).toEqual(["done", "held"]);
    // Redelivered nudges after the end change nothing.
    expect(await runExportStep(env, ref, TINY)).toBe("done");
    expect((await deliver(exportNudge(ref), env)).explicitAcks).toHaveLength(1);

    const job = (await getSegmentExport(panelData, panel.id, ref.exportId))!;
    expect(job).toMatchObject({ status: "completed", rows: 8, total: 8 });
    expect(job.parts.length).toBe(2); // pages of 2 until a part holds 3 or more: 4 + 4 members, the header in the first
    const lines = await fileOf(ref);
    expect(lines[0]).toBe("EMAIL,NAME");
    expect(lines.slice(1)).toHaveLength(8);
    expect(new Set(lines.slice(1)).size).toBe(8);
    // Nothing but the recorded parts is left in R2.
    const listed = await env.FILES.list({ prefix: `exports/${panel.id}/${ref.exportId}/` });
    expect(listed.objects.map((o) => o.key).sort()).toEqual(job.parts.map((p) => p.key).sort());
  });

  it("a step that spent its time hands on to the next nudge; redeliveries write each member once; a step whose lease ran out records nothing", async () => {
    const { panel, segmentId } = await exportPanel(5);
    const quiet = quietEnv();
    const started = await startSegmentExport(quiet.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, [], Date.now());
    if (!started.ok) throw new Error("not started");
    const ref = { panelId: panel.id, exportId: started.value.id };
    // No time at all: one page, one part, then "more" (the queue consumer sends the next nudge).
    expect(await runExportStep(env, ref, { ...TINY, stepMs: 0 })).toBe("more");
    expect((await getSegmentExport(panelData, panel.id, ref.exportId))!).toMatchObject({ status: "running", rows: 2, cursor: expect.any(Number) });
    quiet.sent.length = 0;
    expect((await deliver(exportNudge(ref), quiet.env)).explicitAcks).toHaveLength(1);
    expect(quiet.sent).toEqual([]); // the consumer's step finished the file: no next nudge
    await deliver(exportNudge(ref), quiet.env);
    const job = (await getSegmentExport(panelData, panel.id, ref.exportId))!;
    expect(job).toMatchObject({ status: "completed", rows: 5 });
    expect(await fileOf(ref)).toEqual(["EMAIL", "formula@example.com", "quote@example.com", "p0@example.com", "p1@example.com", "p2@example.com"]);

    // A step whose lease ran out (another took the job) cannot record a part, nor complete it.
    const other = await startSegmentExport(quiet.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, [], Date.now());
    if (!other.ok) throw new Error("not started");
    const otherRef = { panelId: panel.id, exportId: other.value.id };
    const now = Date.now();
    expect(await leaseSegmentExport(panelData, otherRef, "deadbeef", now, now - 1)).toMatchObject({ status: "running" });
    expect(await runExportStep(env, otherRef, TINY)).toBe("done");
    expect(await commitExportPart(panelData, otherRef, { lease: "deadbeef", from: 0, to: 99, rows: 1, part: { key: "x", size: 1 }, finished: true }, now)).toBe(false);
    expect((await getSegmentExport(panelData, panel.id, otherRef.exportId))!).toMatchObject({ status: "completed", rows: 5 });
  });

  it("waits for a segment's build, and fails when the segment is deleted meanwhile", async () => {
    const { panel, segmentId } = await exportPanel(4);
    // The build the create started in the background ends first, so it cannot finish the one set up here.
    for (let i = 0; i < 100 && (await getSegment(panelData, panel.id, segmentId))!.buildCursor !== null; i++) await new Promise((r) => setTimeout(r, 50));
    await panelData.prepare("UPDATE segments SET build_cursor = 0 WHERE id = ?").bind(segmentId).run();
    await panelData.prepare("DELETE FROM segment_members WHERE segment_id = ?").bind(segmentId).run();
    const quiet = quietEnv();
    const started = await startSegmentExport(quiet.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, [], Date.now());
    if (!started.ok) throw new Error("not started");
    const ref = { panelId: panel.id, exportId: started.value.id };
    expect(await runExportStep(env, ref, TINY)).toBe("done");
    expect((await getSegment(panelData, panel.id, segmentId))!.buildCursor).toBeNull();
    expect((await getSegmentExport(panelData, panel.id, ref.exportId))!).toMatchObject({ status: "completed", rows: 4, total: 4 });

    const second = await startSegmentExport(quiet.env, panelData, (await getPanel(env.DB, panel.id))!, { id: segmentId }, [], Date.now());
    if (!second.ok) throw new Error("not started");
    expect((await call(`/admin/v1/panels/${panel.id}/segments/${segmentId}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(204);
    await deliver(exportNudge({ panelId: panel.id, exportId: second.value.id }), quiet.env);
    const failed = (await admin("GET", `/panels/${panel.id}/jobs/${second.value.id}`)).body;
    expect(failed).toMatchObject({ status: "failed", reason: "The segment was deleted before its export finished", download: null });
  });
});
