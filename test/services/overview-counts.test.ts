import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../src/domain/time";
import type { SegmentNode } from "../../src/domain/segments";
import { wholeShards } from "../../src/services/access/partitions";
import { contactsFigure, memberFigures, PANEL_COUNTS, refreshPanelCounts } from "../../src/services/overview/counts";
import { housekeeping } from "../../src/services/retention/housekeeping";
import { act } from "../support/journeys";
import { defineActivity, eventually } from "../support/activity";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";

async function addContacts(panel: TestPanel, emails: string[], city = "Pune") {
  const api = apiFor(panel);
  for (const email of emails) expect((await api("contact", "add", { data: { EMAIL: email, CITY: city } })).body.result).toBe("Success");
}

const stored = (panel: TestPanel, subject = "") =>
  panelData.prepare("SELECT n, counted_at, cursor, pass_n FROM panel_counts WHERE panel_id = ? AND subject = ?").bind(panel.id, subject).first();
const trueCount = async (sql: string, ...binds: unknown[]) => (await panelData.prepare(sql).bind(...binds).first<{ n: number }>())!.n;

// Small chunks, one row a statement: a pass over 7 contacts takes 4 statements.
const TINY = { ...PANEL_COUNTS, rowsPerStatement: 1, chunk: 2, statementsPerRun: 1, requestCap: 3 };

describe("stored counts (issue 42)", () => {
  it("counts a panel's contacts and a segment's members in bounded chunks, across runs, to the true count", async () => {
    const panel = await createPanel();
    await addContacts(panel, ["a@x.io", "b@x.io", "c@x.io", "d@x.io", "e@x.io"]);
    await addContacts(panel, ["f@x.io", "g@x.io"], "Delhi");
    const segment = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } })).body;
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${segment.id}`)).body.members === 5 ? true : undefined));

    const t0 = Date.now();
    // One statement a run steps one row by one chunk: the first run leaves the contacts pass under way.
    await refreshPanelCounts(panelData, [panel.id], t0, TINY);
    expect(await stored(panel)).toEqual({ n: null, counted_at: null, cursor: expect.any(String), pass_n: 2 });
    for (let run = 1; run < 10; run++) await refreshPanelCounts(panelData, [panel.id], t0 + run, TINY);
    const contacts = await trueCount("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ?", panel.id);
    expect(contacts).toBe(7);
    expect(await stored(panel)).toEqual({ n: 7, counted_at: expect.any(Number), cursor: null, pass_n: 0 });
    expect(await stored(panel, segment.id)).toEqual({ n: 5, counted_at: expect.any(Number), cursor: null, pass_n: 0 });
    expect(await trueCount("SELECT COUNT(*) AS n FROM segment_members WHERE segment_id = ?", segment.id)).toBe(5);
  });

  it("answers the stored figure past the request's cap, even when stale, and a floor when there is none", async () => {
    const panel = await createPanel();
    await addContacts(panel, ["a@x.io", "b@x.io", "c@x.io", "d@x.io"]);
    const t0 = Date.now();
    // Never counted: the request counts up to the cap and says "at least".
    expect(await contactsFigure(panelData, panel.id, t0, TINY)).toEqual({ n: 3, countedAt: t0, atLeast: true });
    await refreshPanelCounts(panelData, [panel.id], t0, { ...TINY, statementsPerRun: 5 });
    await addContacts(panel, ["e@x.io", "f@x.io"]);
    // The request reads 3 index entries and the stored 4: it did not count the panel's 6.
    expect(await contactsFigure(panelData, panel.id, t0 + 60_000, TINY)).toEqual({ n: 4, countedAt: t0, atLeast: false });
    // Fresh figures are not counted again; stale ones are.
    await refreshPanelCounts(panelData, [panel.id], t0 + 60_000, { ...TINY, statementsPerRun: 5 });
    expect(await contactsFigure(panelData, panel.id, t0 + 60_000, TINY)).toMatchObject({ n: 4 });
    await refreshPanelCounts(panelData, [panel.id], t0 + PANEL_COUNTS.refreshMs + 1, { ...TINY, statementsPerRun: 5 });
    expect(await contactsFigure(panelData, panel.id, t0 + PANEL_COUNTS.refreshMs + 2, TINY)).toEqual({ n: 6, countedAt: t0 + PANEL_COUNTS.refreshMs + 1, atLeast: false });
    // Below the cap a figure is exact and current, stored or not.
    expect(await contactsFigure(panelData, panel.id, t0, PANEL_COUNTS)).toEqual({ n: 6, countedAt: t0, atLeast: false });
    expect(await memberFigures(panelData, panel.id, ["seg_none"], t0, TINY)).toEqual(new Map([["seg_none", { n: 0, countedAt: t0, atLeast: false }]]));
  });

  it("the overview shows contacts with the time of their count and events received today from the pipeline's slots", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const cart = await defineActivity(panel, "Added to cart");
    for (const identity of ["a@example.com", "b@example.com", "c@example.com"]) await act(panel, cart, identity);
    await act(other, await defineActivity(other, "Added to cart"), "z@example.com");
    const { status, body } = await admin("GET", `/panels/${panel.id}/overview`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ contacts: 3, contacts_at_least: false, events_today: 3 });
    expect(Date.parse(body.contacts_counted_at)).toBeGreaterThan(0);
    const slots = await panelData.prepare("SELECT SUM(n) AS n FROM panel_received WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(slots!.n).toBe(3);
    // Home's figures read no events: the plan of today's count searches the slots' key.
    const plan = await panelData.prepare("EXPLAIN QUERY PLAN SELECT COALESCE(SUM(n), 0) AS n FROM panel_received WHERE panel_id = ? AND slot >= ?").bind(panel.id, 0).all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail).join("\n")).toMatch(/SEARCH panel_received USING PRIMARY KEY \(panel_id=\? AND slot>\?\)/);
  });

  it("housekeeping counts the panels of each shard and drops receipt slots older than two days", async () => {
    const panel = await createPanel();
    await addContacts(panel, ["a@x.io", "b@x.io"]);
    const now = Date.now() + 3 * DAY_MS;
    await panelData.prepare("INSERT INTO panel_received (panel_id, slot, n) VALUES (?, ?, 5)").bind(panel.id, 900_000).run();
    await housekeeping.run(env, now);
    expect(await stored(panel)).toEqual({ n: 2, counted_at: now, cursor: null, pass_n: 0 });
    expect(await panelData.prepare("SELECT COUNT(*) AS n FROM panel_received WHERE panel_id = ? AND slot < ?").bind(panel.id, now - 2 * DAY_MS).first()).toEqual({ n: 0 });
  });
});

describe("segment counts in a request (issue 42)", () => {
  it("read at most the cap's contacts: exact below it, past it the stored members with their time, or an estimate from those read", async () => {
    const { countSegment } = await import("../../src/services/segments/definitions");
    const { segmentWithCount } = await import("../../src/services/segments/read");
    const panel = await createPanel();
    await addContacts(panel, ["a@x.io", "b@x.io", "c@x.io", "d@x.io"]);
    await addContacts(panel, ["e@x.io", "f@x.io", "g@x.io", "h@x.io"], "Delhi");
    const pune: SegmentNode = { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] };
    const now = Date.now();
    expect(await countSegment(wholeShards([panelData]), panel.id, pune, now)).toEqual({ ok: true, value: { n: 4, estimated: false } });
    // Past a cap of 5: a sample of five spread over the panel's ids, not its five oldest (four of them in Pune).
    expect(await countSegment(wholeShards([panelData]), panel.id, pune, now, 5)).toEqual({ ok: true, value: { n: 5, estimated: true } });
    // Past a cap of 7 (seven windows, each a statement: D1 refuses a compound SELECT past five terms): 4 of 7 in Pune.
    expect(await countSegment(wholeShards([panelData]), panel.id, pune, now, 7)).toEqual({ ok: true, value: { n: 5, estimated: true } });

    const segment = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: pune })).body;
    expect(segment).toMatchObject({ count: 4, count_estimated: false });
    expect((await admin("POST", `/panels/${panel.id}/segments/count`, { match: pune })).body).toEqual({ count: 4, count_estimated: false });
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${segment.id}`)).body.members === 4 ? true : undefined));
    // Past the cap, a saved segment answers its members as the background last counted them.
    for (let run = 0; run < 10; run++) await refreshPanelCounts(panelData, [panel.id], now + run, { ...TINY, requestCap: 2 });
    const read = await segmentWithCount(wholeShards([panelData]), panel.id, segment.id, now, 5);
    expect(read?.count).toEqual({ n: 4, estimated: true });
  });
});

describe("a segment's stored members after its build (issue 42)", () => {
  it("a finished build makes the figure counted during it due, so a request past the cap never answers a half-built count", async () => {
    const { buildSegmentPage } = await import("../../src/services/segments/membership");
    const { getSegment } = await import("../../src/store/segments");
    const panel = await createPanel();
    await addContacts(panel, ["a@x.io", "b@x.io", "c@x.io", "d@x.io"]);
    await addContacts(panel, ["e@x.io", "f@x.io"], "Delhi");
    const created = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } })).body;
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${created.id}`)).body.members === 4 ? true : undefined));
    // A build from the first contact again, as a new mirror's or a rebuild's, stepped by hand three contacts a page.
    await panelData.batch([
      panelData.prepare("DELETE FROM segment_members WHERE segment_id = ?").bind(created.id),
      panelData.prepare("UPDATE segments SET build_cursor = 0 WHERE id = ?").bind(created.id),
    ]);
    const cap2 = { ...TINY, requestCap: 2 };
    const now = Date.now();
    let segment = (await getSegment(panelData, panel.id, created.id))!;
    expect(await buildSegmentPage(env, segment, now, 3)).toEqual(expect.any(Number));
    // The refresh counts the half-built three: a fresh figure.
    for (let run = 0; run < 10; run++) await refreshPanelCounts(panelData, [panel.id], now + run, cap2);
    expect(await stored(panel, created.id)).toMatchObject({ n: 3, counted_at: expect.any(Number) });
    segment = (await getSegment(panelData, panel.id, created.id))!;
    expect(await buildSegmentPage(env, segment, now, 3)).toEqual(expect.any(Number));
    segment = (await getSegment(panelData, panel.id, created.id))!;
    expect(await buildSegmentPage(env, segment, now, 3)).toBeNull();
    expect(await trueCount("SELECT COUNT(*) AS n FROM segment_members WHERE segment_id = ?", created.id)).toBe(4);
    // Not "3" (counted half-way, young enough to stand for ten minutes): at least the cap until counted again.
    expect(await stored(panel, created.id)).toEqual({ n: null, counted_at: null, cursor: null, pass_n: 0 });
    expect(await memberFigures(panelData, panel.id, [created.id], now + 20, cap2)).toEqual(new Map([[created.id, { n: 2, countedAt: now + 20, atLeast: true }]]));
    // The refresh takes it first (never counted), though no figure is older than refreshMs.
    for (let run = 0; run < 10; run++) await refreshPanelCounts(panelData, [panel.id], now + 20 + run, cap2);
    expect(await memberFigures(panelData, panel.id, [created.id], now + 40, cap2)).toEqual(new Map([[created.id, { n: 4, countedAt: expect.any(Number), atLeast: false }]]));
  });
});

describe("the count refresh over many panels (issue 42)", () => {
  it("binds the shard's panel ids a page at a time and reaches every page across runs", async () => {
    const panels = [await createPanel(), await createPanel(), await createPanel()];
    for (const [i, panel] of panels.entries()) await addContacts(panel, [`p${i}a@x.io`, `p${i}b@x.io`]);
    // Unknown ids beside them, as a shard's directory list holds many panels; a page of two ids.
    const ids = ["pnl_none_1", panels[0]!.id, "pnl_none_2", panels[1]!.id, "pnl_none_3", panels[2]!.id];
    const paged = { ...PANEL_COUNTS, panelsPerStatement: 2, statementsPerRun: 2 };
    const t0 = Math.floor(Date.now() / 60_000) * 60_000;
    for (let minute = 0; minute < 3; minute++) await refreshPanelCounts(panelData, ids, t0 + minute * 60_000, paged);
    for (const panel of panels) expect(await stored(panel)).toMatchObject({ n: 2, cursor: null });
  });
});
