import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ENTRIES_PER_MESSAGE, ENTRY_LEASE_MS, enterListEntries, redriveListEntries } from "../../../src/services/journeys/list-entries";
import { LEFT_BEHIND_MS } from "../../../src/services/journeys/timers";
import { wireContactReactions } from "../../../src/jobs/contact-reactions";
import { afterContactChanged } from "../../../src/services/contacts/reactions";
import { liftFence, raiseFence } from "../../../src/store/panel-move/triggers";
import { eventually } from "../../support/activity";
import { admin, apiFor, countRows, createPanel, type TestPanel, panelData } from "../../support/helpers";
import { importCsv } from "../../support/imports";
import { addMembersQuietly, countersOf, cronAllAt, cronAt, createWebhook, delivered, messagesOf, puneSegmentJourney, smsListJourney, startJourney } from "../../support/journeys";

async function listOf(panel: TestPanel, name = "VIP"): Promise<number> {
  return (await apiFor(panel)("lists", "add", { listname: name })).body.listid;
}

function csvOf(header: string, rows: string[]): string {
  return `${header}\n${rows.join("\n")}\n`;
}

async function entered(journey: { path: string }, count: number) {
  return eventually(async () => ((await countersOf(journey)).entered === count ? true : undefined));
}

async function pendingEntries(panel: TestPanel): Promise<number> {
  return countRows("SELECT COUNT(*) AS n FROM journey_list_entries WHERE panel_id = ?", panel.id);
}

describe("list trigger through bulk upload", () => {
  it("every contact an upload adds to the list enters, through the journey's filter; members already in it and other lists' do not", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = await listOf(panel);
    const other = await listOf(panel, "Other");
    await api("contact", "add", { data: { EMAIL: "already@example.com", CITY: "Pune" }, listid: vip });
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "list", listid: vip },
      filter: [{ attribute: "CITY", op: "eq", value: "Pune" }],
      steps: [{ id: "hook", type: "webhook", webhook: hook.id, attributes: ["EMAIL", "CITY"] }],
    });
    const pune = Array.from({ length: 30 }, (_, i) => `p${i}@example.com,Pune`);
    const delhi = Array.from({ length: 5 }, (_, i) => `d${i}@example.com,Delhi`);
    const job = await importCsv(panel, csvOf("EMAIL,CITY", [...pune, ...delhi, "already@example.com,Pune"]), { listid: vip });
    expect(job).toMatchObject({ status: "completed", total: 36, created: 35, updated: 1 });
    await importCsv(panel, csvOf("EMAIL,CITY", ["elsewhere@example.com,Pune"]), { listid: other });

    await entered(journey, 30);
    await eventually(async () => ((await pendingEntries(panel)) === 0 ? true : undefined));
    const events = await delivered(hook);
    expect(events.map((e) => e.att_params.EMAIL).sort()).toEqual(pune.map((row) => row.split(",")[0]).sort());
    expect(events[0]).toMatchObject({ channel: "custom_activity", att_params: { CITY: "Pune" }, event_params: { activity_name: "list", activity_source: "journey" } });
    expect(await countersOf(journey)).toMatchObject({ entered: 30, completed: 30 });
  });

  it("an upload larger than one message's page drains through the chain of nudges, each contact once", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    const total = ENTRIES_PER_MESSAGE * 2 + 7;
    const rows = Array.from({ length: total }, (_, i) => `c${i}@example.com,+1555${String(i).padStart(6, "0")}`);
    await importCsv(panel, csvOf("EMAIL,MOBILE", rows), { listid: vip });
    await entered(journey, total);
    await eventually(async () => ((await pendingEntries(panel)) === 0 ? true : undefined));
    const recipients = (await admin("GET", `/panels/${panel.id}/journey-messages?channel=sms&limit=1000`)).body.messages.map((m: any) => m.recipient);
    expect(recipients).toHaveLength(total);
    expect(new Set(recipients).size).toBe(total);
  });
});

describe("list entries", () => {
  it("a membership leaves an entry for each running journey of the list only", async () => {
    const panel = await createPanel();
    const vip = await listOf(panel);
    const steps = [{ id: "hi", type: "sms", text: "Hi" }];
    const running = await startJourney(panel, { trigger: { type: "list", listid: vip }, steps });
    await startJourney(panel, { trigger: { type: "list", listid: vip }, steps }, null);
    const paused = await startJourney(panel, { trigger: { type: "list", listid: vip }, steps });
    expect((await admin("POST", `${paused.path}/status`, { status: "paused" })).status).toBe(200);
    await smsListJourney(panel, "Other");
    await addMembersQuietly(panel, vip, ["a@example.com", "b@example.com"]);
    await addMembersQuietly(panel, vip, ["a@example.com"]);
    expect(await countRows("SELECT COUNT(*) AS n FROM journey_list_entries WHERE panel_id = ? AND journey_id = ?", panel.id, running.id)).toBe(2);
    expect(await pendingEntries(panel)).toBe(2);
  });

  it("an entry of a journey stopped before it was taken enters nothing and is dropped", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com", "b@example.com"]);
    expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
    expect(await enterListEntries(env, panel.id, Date.now())).toBe(2);
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
    expect(await pendingEntries(panel)).toBe(0);
    expect(await messagesOf(panel)).toEqual([]);
  });

  it("an entry left while the journey ran enters it held when it was paused since, and goes on at resume", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com"]);
    expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);
    const now = Date.now();
    expect(await enterListEntries(env, panel.id, now)).toBe(1);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 1, completed: 0 });
    expect(await messagesOf(panel)).toEqual([]);
    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    await cronAt(now + LEFT_BEHIND_MS + 1);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
    expect(await messagesOf(panel)).toHaveLength(1);
  });

  it("an entry taken again after its consumer died before deleting it enters once", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com"]);
    // D1 that fails the entries' delete: the consumer entered the contact, then died.
    const failingDb = new Proxy(panelData, {
      get(target, name) {
        if (name === "prepare") return (sql: string) => (sql.startsWith("DELETE FROM journey_list_entries") ? target.prepare("SELECT no_such_column FROM journey_list_entries") : target.prepare(sql));
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const now = Date.now();
    await expect(enterListEntries({ ...env, SHARD_1: failingDb }, panel.id, now)).rejects.toThrow();
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
    // Leased: another consumer does not take it meanwhile.
    expect(await enterListEntries(env, panel.id, now + 1)).toBe(0);
    expect(await enterListEntries(env, panel.id, now + ENTRY_LEASE_MS)).toBe(1);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
    expect(await messagesOf(panel)).toHaveLength(1);
    expect(await pendingEntries(panel)).toBe(0);
  });

  it("contact/add with listid enters its own contact right away and leaves the panel's other entries to their drain", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com", "b@example.com"]);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "c@example.com", MOBILE: "+15550003" }, listid: vip });
    await eventually(async () => ((await countersOf(journey)).completed === 1 ? true : undefined));
    expect((await messagesOf(panel)).map((m) => m.recipient)).toEqual(["+15550003"]);
    expect(await pendingEntries(panel)).toBe(2);
  });

  it("a member removed from the list, or with it, before its entry was taken enters nothing", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com", "b@example.com", "c@example.com"]);
    expect((await api("contact", "delete", { data: "a@example.com", listid: String(vip) })).status).toBe(200);
    expect(await pendingEntries(panel)).toBe(2);
    expect((await api("lists", "delete", { listname: "VIP" })).status).toBe(200);
    expect(await pendingEntries(panel)).toBe(0);
    expect(await enterListEntries(env, panel.id, Date.now())).toBe(0);
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
  });

  it("an entry a contact write could not take (a move's fence refused it) goes to the queue and enters once the fence lifts, no cron needed", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com"]);
    const { id } = (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = 'a@example.com'").bind(panel.id).first<{ id: number }>())!;
    wireContactReactions();
    // The contact/add's reaction, run just after the fence rose: its lease of the entry is refused.
    await raiseFence(panelData, panel.id);
    try {
      await afterContactChanged(env, { panelId: panel.id, contact: { id, key: "a@example.com", attributes: { EMAIL: "a@example.com" } }, changes: ["lists"], joinedList: true, now: Date.now() });
      expect(await pendingEntries(panel)).toBe(1);
    } finally {
      await liftFence(panelData, panel.id);
    }
    await entered(journey, 1);
    await eventually(async () => ((await pendingEntries(panel)) === 0 ? true : undefined));
  });

  it("the cron nudges panels whose entries were never taken (a lost nudge)", async () => {
    const panel = await createPanel();
    const { listId: vip, journey } = await smsListJourney(panel);
    await addMembersQuietly(panel, vip, ["a@example.com", "b@example.com", "c@example.com"]);
    expect(await pendingEntries(panel)).toBe(3);
    await redriveListEntries.run(env, Date.now());
    await entered(journey, 3);
    await eventually(async () => ((await pendingEntries(panel)) === 0 ? true : undefined));
  });
});

describe("segment trigger after a bulk upload", () => {
  it("contacts an upload creates or changes are looked at again by running segment journeys", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "moves@example.com", CITY: "Delhi" } });
    const journey = await puneSegmentJourney(panel);
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
    await importCsv(panel, csvOf("EMAIL,CITY", ["moves@example.com,Pune", "new@example.com,Pune", "stays@example.com,Delhi"]));
    await cronAllAt(Date.now());
    expect(await countersOf(journey)).toMatchObject({ entered: 2 });
    expect((await messagesOf(panel)).map((m) => m.recipient).sort()).toEqual(["moves@example.com", "new@example.com"]);
  });

  it("an upload that ends while a scan is under way makes the scan start over once it has finished", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "moves@example.com", CITY: "Delhi" } });
    await api("contact", "add", { data: { EMAIL: "last@example.com", CITY: "Delhi" } });
    const journey = await puneSegmentJourney(panel);
    // A scan under way that has passed every contact but the last.
    await panelData.prepare("UPDATE journeys SET scan_cursor = (SELECT MAX(id) - 1 FROM contacts WHERE panel_id = ?) WHERE id = ?").bind(panel.id, journey.id).run();
    await importCsv(panel, csvOf("EMAIL,CITY", ["moves@example.com,Pune"]));
    await cronAllAt(Date.now());
    expect(await countersOf(journey)).toMatchObject({ entered: 0 });
    await cronAllAt(Date.now());
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
    expect((await messagesOf(panel)).map((m) => m.recipient)).toEqual(["moves@example.com"]);
    await cronAllAt(Date.now());
    expect(await countRows("SELECT COUNT(*) AS n FROM journeys WHERE id = ? AND scan_cursor IS NULL AND rescan_due = 0", journey.id)).toBe(1);
  });
});
