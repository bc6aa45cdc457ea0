import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dependenciesOf, type SegmentNode } from "../../../src/domain/segments";
import { buildSegment, segmentsCron } from "../../../src/services/segments/membership";
import { PANEL_SEGMENTS_CACHE_MS, panelSegments } from "../../../src/services/segments/panel-segments";
import { insertSegment } from "../../../src/store/segments";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, panelData, type TestPanel } from "../../support/helpers";

const membersOf = async (panel: TestPanel, segmentId: string) =>
  (
    await panelData
      .prepare("SELECT c.pk_value FROM segment_members m JOIN contacts c ON c.id = m.contact_id WHERE m.segment_id = ? AND c.panel_id = ? ORDER BY c.pk_value")
      .bind(segmentId, panel.id)
      .all<{ pk_value: string }>()
  ).results.map((r) => r.pk_value);

// The per-isolate answer to "which saved segments has this panel" (panel-segments.ts).
describe("saved segments of a panel, as an isolate keeps them", () => {
  it("are read again at once after a save or a delete in this isolate, so the next contact write joins", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "early@example.com", CITY: "Delhi" } });
    expect(await panelSegments(panelData, panel.id)).toEqual([]);

    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(created.status).toBe(201);
    expect((await panelSegments(panelData, panel.id)).map((s) => s.id)).toEqual([created.body.id]);
    await api("contact", "add", { data: { EMAIL: "later@example.com", CITY: "Pune" } });
    const membersOf = async () =>
      (await panelData.prepare("SELECT COUNT(*) AS n FROM segment_members WHERE segment_id = ?").bind(created.body.id).first<{ n: number }>())!.n;
    // The membership is written after the answer (waitUntil); well inside the cache's 10 s.
    const deadline = Date.now() + 3_000;
    while ((await membersOf()) < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await membersOf()).toBe(1);

    const deleted = await call(`/admin/v1/panels/${panel.id}/segments/${created.body.id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(deleted.status).toBe(204);
    expect(await panelSegments(panelData, panel.id)).toEqual([]);
  });

  it("a segment saved through another isolate: a contact written here before this isolate knows it, after the build passed it, joins once every isolate knows it", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "ada@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "bob@example.com", CITY: "Delhi" } });
    // This isolate's answer: no segment (kept up to PANEL_SEGMENTS_CACHE_MS).
    expect(await panelSegments(panelData, panel.id)).toEqual([]);
    // Another isolate saves "Pune" and builds it at once, as saveSegment does there.
    const match: SegmentNode = { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } as SegmentNode;
    const saved = Date.now();
    const segment = await insertSegment(panelData, { id: `seg_${crypto.randomUUID().slice(0, 8)}`, panelId: panel.id, name: "Pune", match, dependencies: dependenciesOf(match) }, saved);
    await buildSegment(env, segment, saved, 20_000);
    expect(await membersOf(panel, segment.id)).toEqual(["ada@example.com"]);
    // Bob moves to Pune through this isolate, whose write does not know the segment yet.
    expect((await api("contact", "update", { data: { EMAIL: "bob@example.com", CITY: "Pune" } })).status).toBe(200);
    // Not before every isolate knows the segment: the re-check waits that long.
    await segmentsCron.run(env, saved + PANEL_SEGMENTS_CACHE_MS - 1_000);
    expect(await membersOf(panel, segment.id)).toEqual(["ada@example.com"]);
    // Then the cron re-checks what the build passed while some isolate could miss it: Bob joins.
    await segmentsCron.run(env, saved + PANEL_SEGMENTS_CACHE_MS + 1_000);
    expect(await membersOf(panel, segment.id)).toEqual(["ada@example.com", "bob@example.com"]);
    expect((await panelData.prepare("SELECT recheck_upto FROM segments WHERE id = ?").bind(segment.id).first<{ recheck_upto: number | null }>())!.recheck_upto).toBeNull();
  });
});
