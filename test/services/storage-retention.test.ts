import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { housekeeping } from "../../src/services/retention/housekeeping";
import { deleteCampaignMessages, deleteFinishedInstances, deleteInstanceMessages, deleteInstancePoints, deleteInstanceStepRuns } from "../../src/store/housekeeping";
import { insertAuditEntry } from "../../src/store/audit";
import { defineActivity, eventCount, eventually, pipelineSettled, postActivity } from "../support/activity";
import { fireCron, scheduled, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, countRows, createPanel, panelData, type TestPanel } from "../support/helpers";
import { countersOf, messagesOf, puneSegmentJourney } from "../support/journeys";
import { scanSegment } from "../../src/services/journeys/contact-triggers";
import { getJourney } from "../../src/store/journeys/definitions";
import { forgetOwnersStatements, partsOfOwners, recordOwnersStatement } from "../../src/store/event-archive";

// Bounded storage (issue 42): housekeeping prunes rows past their window (config
// `retentionDays`, defaults in src/lib/config.ts); what a user reads stays the same.
const DAY = 86_400_000;

const campaignRows = (campaignId: string) => countRows("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = ?", campaignId);

async function sentCampaign(panel: TestPanel, csv: string): Promise<string> {
  const { id, sendAt } = await scheduled(panel, csv, {}, 125);
  await fireCron(sendAt);
  expect((await waitForCampaign(panel, id)).status).toBe("sent");
  return id;
}

/** What the campaign's screens show: counters, hours and links, and the campaign list's counters. */
async function campaignScreens(panel: TestPanel, id: string) {
  const report = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body;
  const listed = (await admin("GET", `/panels/${panel.id}/campaigns`)).body.campaigns.find((c: { id: string }) => c.id === id);
  return { counters: report.counters, rates: report.rates, hours: report.hours, links: report.top_links, listed: listed.counters };
}

describe("campaign messages", () => {
  it("a campaign finished before the window loses its recipient rows and keeps its report; a newer one keeps both", async () => {
    const panel = await createPanel();
    const old = await sentCampaign(panel, "EMAIL\nada@example.com\nbob@example.com\ncy@example.com\n");
    const recent = await sentCampaign(panel, "EMAIL\ndee@example.com\neve@example.com\n");
    // The first finished 366 days ago (default window 365 days), the other just now.
    await panelData.prepare("UPDATE campaigns SET finished_at = finished_at - 366 * 86400000 WHERE id = ?").bind(old).run();
    const before = { old: await campaignScreens(panel, old), recent: await campaignScreens(panel, recent) };
    expect(before.old.counters).toMatchObject({ recipients: 3, sent: 3, queued: 0 });

    await housekeeping.run(env, Date.now());

    expect(await campaignRows(old)).toBe(0);
    expect(await campaignRows(recent)).toBe(2);
    expect({ old: await campaignScreens(panel, old), recent: await campaignScreens(panel, recent) }).toEqual(before);
    // The numbers' contacts are gone with the rows; the newer campaign's are listed.
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${old}/recipients?filter=sent`)).body.recipients).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${recent}/recipients?filter=sent`)).body.recipients).toHaveLength(2);
    // Done once: the campaign is marked, and a second run changes nothing.
    expect(await countRows("SELECT COUNT(*) AS n FROM campaigns WHERE id = ? AND messages_pruned_at IS NOT NULL", old)).toBe(1);
    await housekeeping.run(env, Date.now());
    expect(await campaignRows(recent)).toBe(2);
  });

  it("each statement removes at most its limit, in key order", async () => {
    const panel = await createPanel();
    const id = await sentCampaign(panel, "EMAIL\nada@example.com\nbob@example.com\ncy@example.com\n");
    expect(await deleteCampaignMessages(panelData, id, 2)).toBe(2);
    expect(await campaignRows(id)).toBe(1);
    expect(await deleteCampaignMessages(panelData, id, 2)).toBe(1);
    expect(await campaignRows(id)).toBe(0);
  });
});

describe("idempotency keys", () => {
  it("a guid repeated within EVENT_GUID_DAYS stores nothing; one claimed before the window is forgotten", async () => {
    const panel = await createPanel();
    const activityid = await defineActivity(panel, "purchase", {});
    const post = (guid: string) => postActivity(panel.clientId, { activityid, identity: "ada@example.com", guid });
    expect((await post("old-order")).body.duplicate).toBe(false);
    expect((await post("new-order")).body.duplicate).toBe(false);
    await pipelineSettled(panel.id);
    await panelData.prepare("UPDATE event_guids SET at = at - 31 * 86400000 WHERE panel_id = ? AND guid = 'old-order'").bind(panel.id).run();

    await housekeeping.run(env, Date.now());

    expect(await countRows("SELECT COUNT(*) AS n FROM event_guids WHERE panel_id = ?", panel.id)).toBe(1);
    expect((await post("new-order")).body.duplicate).toBe(true);
    expect((await post("old-order")).body.duplicate).toBe(false);
    await pipelineSettled(panel.id);
    expect(await eventCount(panel.id)).toBe(3);
  });

  it("a key claimed before keys had a time starts its window at the first housekeeping run", async () => {
    const panel = await createPanel();
    const activityid = await defineActivity(panel, "purchase", {});
    const post = (guid: string) => postActivity(panel.clientId, { activityid, identity: "ada@example.com", guid });
    await post("legacy");
    await panelData.prepare("UPDATE event_guids SET at = NULL WHERE panel_id = ?").bind(panel.id).run();
    const now = Date.now();
    await housekeeping.run(env, now);
    expect(await countRows("SELECT COUNT(*) AS n FROM event_guids WHERE panel_id = ? AND at = ?", panel.id, now)).toBe(1);
    expect((await post("legacy")).body.duplicate).toBe(true);
    // Thirty days later it is still remembered; a day after that, gone.
    await housekeeping.run(env, now + 30 * DAY);
    expect((await post("legacy")).body.duplicate).toBe(true);
    await housekeeping.run(env, now + 31 * DAY);
    expect((await post("legacy")).body.duplicate).toBe(false);
  });
});

describe("segment changes", () => {
  it("entries and exits older than SEGMENT_CHANGES_DAYS go; the history screen's longest range (366 days) reads the same", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const email of ["ada@example.com", "bob@example.com", "cy@example.com"]) {
      expect((await api("contact", "add", { data: { EMAIL: email, CITY: "Pune" } })).status).toBe(200);
    }
    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    const path = `/panels/${panel.id}/segments/${created.body.id}`;
    await eventually(async () => ((await admin("GET", path)).body.members === 3 ? true : undefined));
    const changes = await panelData.prepare("SELECT id FROM segment_changes WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ id: number }>();
    expect(changes.results).toHaveLength(3);
    // One entry 401 days back (past the default 400), one 300 days back, one today.
    const age = (id: number, days: number) => panelData.prepare("UPDATE segment_changes SET at = at - ? WHERE id = ?").bind(days * DAY, id).run();
    await age(changes.results[0]!.id, 401);
    await age(changes.results[1]!.id, 300);
    const history = async () => (await admin("GET", `${path}/history?days=366`)).body;
    const before = await history();
    expect(before.days.map((d: { entered: number }) => d.entered)).toEqual([1, 1]);

    await housekeeping.run(env, Date.now());

    expect(await countRows("SELECT COUNT(*) AS n FROM segment_changes WHERE panel_id = ?", panel.id)).toBe(2);
    // The history reads the same, apart from when its member figure was counted (the time of the request).
    const { members_counted_at: _counted, ...rest } = await history();
    const { members_counted_at: _countedBefore, ...restBefore } = before;
    expect(rest).toEqual(restBefore);
  });
});

describe("audit log", () => {
  it("entries older than AUDIT_LOG_DAYS go; newer ones are listed as before", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { name: "Renamed" })).status).toBe(200);
    await insertAuditEntry(panelData, { panelId: panel.id, at: Date.now() - 366 * DAY, actorKind: "admin_token", actorId: null, actorEmail: null, action: "panel.settings_changed", target: panel.id, detail: {} });
    const log = async () => (await admin("GET", `/panels/${panel.id}/audit?limit=100`)).body.entries;
    const before = await log();
    const old = before.filter((e: { at: string }) => Date.parse(e.at) < Date.now() - 365 * DAY);
    expect(old).toHaveLength(1);
    expect(before.length).toBeGreaterThan(1);

    await housekeeping.run(env, Date.now());

    expect(await log()).toEqual(before.filter((e: unknown) => e !== old[0]));
  });
});

describe("journey instances", () => {
  const rowsOf = async (journeyId: string) => ({
    instances: await countRows("SELECT COUNT(*) AS n FROM journey_instances WHERE journey_id = ?", journeyId),
    points: await countRows("SELECT COUNT(*) AS n FROM journey_points WHERE journey_id = ?", journeyId),
    runs: await countRows("SELECT COUNT(*) AS n FROM journey_step_runs WHERE journey_id = ?", journeyId),
    messages: await countRows("SELECT COUNT(*) AS n FROM journey_messages WHERE journey_id = ?", journeyId),
  });

  it("instances that ended before JOURNEY_INSTANCES_DAYS go with their rows; the journey page reads the same and a contact still enters a segment journey once", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "bhopal@example.com", CITY: "Bhopal" } });
    const journey = await puneSegmentJourney(panel);
    await api("contact", "update", { data: { EMAIL: "bhopal@example.com", CITY: "Pune" } });
    await eventually(async () => ((await countersOf(journey)).completed === 2 ? true : undefined));
    // The journey page: its counters (per step too), its versions' entries, its report.
    const day = (at: number) => new Date(at).toISOString().slice(0, 10);
    const period = { from: day(Date.now() - 30 * DAY), to: day(Date.now() + DAY) };
    const screens = async () => ({
      journey: (await admin("GET", journey.path)).body,
      versions: (await admin("GET", `${journey.path}/versions`)).body,
      report: (await admin("GET", `${journey.path}/report?from=${period.from}&to=${period.to}`)).body,
    });
    const before = await screens();
    expect(before.journey.counters).toMatchObject({ entered: 2, completed: 2, active: 0 });
    expect(await rowsOf(journey.id)).toEqual({ instances: 2, points: 2, runs: 2, messages: 2 });
    // Pune's instance ended 366 days ago (default window 365 days), Bhopal's just now.
    await panelData
      .prepare("UPDATE journey_instances SET ended_at = ended_at - 366 * 86400000 WHERE journey_id = ? AND contact_id = (SELECT id FROM contacts WHERE panel_id = ? AND pk_value = 'pune@example.com')")
      .bind(journey.id, panel.id)
      .run();

    await housekeeping.run(env, Date.now());

    expect(await rowsOf(journey.id)).toEqual({ instances: 1, points: 1, runs: 1, messages: 1 });
    expect(await screens()).toEqual(before);
    expect((await messagesOf(panel)).map((m) => m.recipient)).toEqual(["bhopal@example.com"]);
    // Entering again (the journey's scan from the start) refuses Pune, whose instance is gone, as it refuses Bhopal.
    const running = (await getJourney(panelData, panel.id, journey.id))!;
    await scanSegment(env, { ...running, scanCursor: null }, Date.now());
    expect(await rowsOf(journey.id)).toEqual({ instances: 1, points: 1, runs: 1, messages: 1 });
    expect(await screens()).toEqual(before);
    // A second run has nothing left to prune.
    await housekeeping.run(env, Date.now());
    expect(await rowsOf(journey.id)).toEqual({ instances: 1, points: 1, runs: 1, messages: 1 });
  });

  it("each statement removes at most its limit; the counters read the same between statements", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const email of ["a@example.com", "b@example.com", "c@example.com"]) await api("contact", "add", { data: { EMAIL: email, CITY: "Pune" } });
    const journey = await puneSegmentJourney(panel);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 3, completed: 3 });
    const ids = (await panelData.prepare("SELECT id FROM journey_instances WHERE journey_id = ?").bind(journey.id).all<{ id: string }>()).results.map((r) => r.id);
    expect(await deleteInstanceMessages(panelData, ids, 2)).toBe(2);
    expect(await deleteInstanceStepRuns(panelData, ids, 2)).toBe(2);
    expect(await countersOf(journey)).toEqual(counters);
    expect(await deleteInstanceStepRuns(panelData, ids, 2)).toBe(1);
    expect(await deleteInstancePoints(panelData, ids, 2)).toBe(2);
    expect(await deleteInstancePoints(panelData, ids, 2)).toBe(1);
    expect(await deleteFinishedInstances(panelData, ids)).toBe(3);
    expect(await countersOf(journey)).toEqual(counters);
  });

  it("erasing a contact removes the entry key its pruned instance left", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune" } });
    const journey = await puneSegmentJourney(panel);
    await panelData.prepare("UPDATE journey_instances SET ended_at = ended_at - 366 * 86400000 WHERE journey_id = ?").bind(journey.id).run();
    await housekeeping.run(env, Date.now());
    const keys = () => countRows("SELECT COUNT(*) AS n FROM journey_entry_keys WHERE journey_id = ?", journey.id);
    expect(await keys()).toBe(1);
    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent("pune@example.com")}`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(await keys()).toBe(0);
    // The journey's counters keep what it did.
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
  });
});

describe("archive index", () => {
  it("lists a part once per owner however often it is recorded, in a row per owner and 32 days; forgetting it removes emptied rows", async () => {
    const panel = await createPanel();
    const day = (n: number) => n * DAY;
    // A part written before shard migration 0116 has no shard; one written by shard 1 with the same day and number is another part.
    const at = (d: number, part: number, shard: number | null = null) => ({ day: day(d), part, shard });
    const record = (d: number, part: number, owners: string[], shard: number | null = null) => recordOwnersStatement(panelData, panel.id, at(d, part, shard), owners).run();
    await record(20_000, 7, ["c:1", "u:v1"]);
    await record(20_000, 7, ["c:1"]);
    await record(20_000, 7, ["c:1"], 1);
    await record(20_000, 7, ["c:1"], 1);
    await record(20_001, 9, ["c:1"]);
    await record(20_040, 11, ["c:1"]);
    const rows = (owner: string) => countRows("SELECT COUNT(*) AS n FROM event_archive_owner_blocks WHERE panel_id = ? AND owner = ?", panel.id, owner);
    expect(await rows("c:1")).toBe(2);
    expect(await partsOfOwners(panelData, panel.id, ["c:1"], 10)).toEqual([at(20_000, 7), at(20_000, 7, 1), at(20_001, 9), at(20_040, 11)]);
    expect(await partsOfOwners(panelData, panel.id, ["u:v1"], 10)).toEqual([at(20_000, 7)]);
    await panelData.batch(forgetOwnersStatements(panelData, panel.id, at(20_040, 11), ["c:1"]));
    await panelData.batch(forgetOwnersStatements(panelData, panel.id, at(20_000, 7), ["c:1", "u:v1"]));
    expect(await rows("c:1")).toBe(1);
    expect(await rows("u:v1")).toBe(0);
    expect(await partsOfOwners(panelData, panel.id, ["c:1", "u:v1"], 10)).toEqual([at(20_000, 7, 1), at(20_001, 9)]);
    await panelData.batch(forgetOwnersStatements(panelData, panel.id, at(20_000, 7, 1), ["c:1"]));
    expect(await partsOfOwners(panelData, panel.id, ["c:1", "u:v1"], 10)).toEqual([at(20_001, 9)]);
  });
});

describe("panels in transit", () => {
  it("a panel a move is copying to or removing from this shard keeps its old rows until it is done", async () => {
    const panel = await createPanel();
    await insertAuditEntry(panelData, { panelId: panel.id, at: Date.now() - 400 * DAY, actorKind: "admin_token", actorId: null, actorEmail: null, action: "panel.settings_changed", target: panel.id, detail: {} });
    const old = () => countRows("SELECT COUNT(*) AS n FROM audit_log WHERE panel_id = ? AND at < ?", panel.id, Date.now() - 365 * DAY);
    await panelData.prepare("INSERT INTO panels_in_transit (panel_id) VALUES (?)").bind(panel.id).run();
    await housekeeping.run(env, Date.now());
    expect(await old()).toBe(1);
    await panelData.prepare("DELETE FROM panels_in_transit WHERE panel_id = ?").bind(panel.id).run();
    await housekeeping.run(env, Date.now());
    expect(await old()).toBe(0);
  });
});

describe("sends counted for frequency caps", () => {
  it("a send older than the longest cap window (90 days) is forgotten; newer ones keep counting", async () => {
    const panel = await createPanel();
    const now = Date.now();
    const send = (key: string, daysAgo: number) =>
      panelData
        .prepare("INSERT INTO contact_sends (panel_id, contact_id, channel, at, send_key) VALUES (?, 1, 'email', ?, ?)")
        .bind(panel.id, now - daysAgo * DAY, key);
    await panelData.batch([send("m-91", 91), send("m-95", 95), send("m-89", 89), send("m-1", 1)]);

    await housekeeping.run(env, now);

    const { results } = await panelData.prepare("SELECT send_key FROM contact_sends WHERE panel_id = ? ORDER BY at").bind(panel.id).all<{ send_key: string }>();
    expect(results.map((r) => r.send_key)).toEqual(["m-89", "m-1"]);
  });
});
