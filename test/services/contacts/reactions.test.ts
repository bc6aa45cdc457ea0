import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { wireContactReactions } from "../../../src/jobs/contact-reactions";
import { contactReactionNames, reactAfterWrite } from "../../../src/services/contacts/reactions";
import { liveJourneys } from "../../../src/services/journeys/live-journeys";
import { panelSegments } from "../../../src/services/segments/panel-segments";
import { defineActivity, eventually } from "../../support/activity";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, panelData } from "../../support/helpers";
import { importCsv } from "../../support/imports";
import { act, countersOf, cronAllAt, puneSegmentJourney, startJourney } from "../../support/journeys";

describe("after a contact changed", () => {
  it("the Worker registers the segments' reaction, then the journeys', once per isolate", async () => {
    await import("../../../src/index");
    expect(contactReactionNames()).toEqual(["segments", "journeys"]);
    wireContactReactions();
    expect(contactReactionNames()).toEqual(["segments", "journeys"]);
  });

  it("a write hands its reactions to waitUntil unless this isolate knows the panel has no segment reading the change and no journey a contact enters", async () => {
    await import("../../../src/index");
    const panel = await createPanel();
    const handed: Array<Promise<unknown>> = [];
    const ctx = { env, panelId: panel.id, now: Date.now(), waitUntil: (work: Promise<unknown>) => void handed.push(work) };
    const contact = { id: 0, key: "nobody@example.com", attributes: { EMAIL: "nobody@example.com" } };
    /** How many writes of `changes` hand their reactions on, once this isolate holds the panel's answers. */
    const handedFor = async (...changes: Array<"attributes" | "lists">) => {
      await panelSegments(panelData, panel.id);
      await liveJourneys(panelData, panel.id);
      const before = handed.length;
      reactAfterWrite(ctx, contact, changes, false);
      await Promise.all(handed);
      return handed.length - before;
    };

    // Not known yet: the reactions run, and read the panel's answers.
    reactAfterWrite(ctx, contact, ["attributes", "lists"], false);
    expect(handed).toHaveLength(1);
    await Promise.all(handed);
    // Known, and nothing reacts: nothing is handed on.
    expect(await handedFor("attributes", "lists")).toBe(0);

    // A segment of an attribute reacts to an attribute's write, not to a list's.
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(segment.status).toBe(201);
    expect(await handedFor("attributes")).toBe(1);
    expect(await handedFor("lists")).toBe(0);
    const deleted = await call(`/admin/v1/panels/${panel.id}/segments/${segment.body.id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(deleted.status).toBe(204);
    expect(await handedFor("attributes", "lists")).toBe(0);

    // A running journey of a list: a contact write can enter it; paused, or of an activity, it cannot.
    const vip = (await apiFor(panel)("lists", "add", { listname: "VIP" })).body.listid;
    const journey = await startJourney(panel, { trigger: { type: "list", listid: vip }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect(await handedFor("attributes")).toBe(1);
    expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);
    await defineActivity(panel, "add_to_cart");
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect(await handedFor("attributes", "lists")).toBe(0);
  });

  it("every write path reaches segments and journeys: the envelope's add, the panel's edit and an import", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await api("contact", "add", { data: { EMAIL: "edited@example.com", CITY: "Delhi" } })).status).toBe(200);
    // A saved segment's membership shows the segments' reaction, a segment journey's entries the journeys'.
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(segment.status).toBe(201);
    const journey = await puneSegmentJourney(panel);
    await cronAllAt(Date.now());
    const members = async () => (await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}`)).body.members as number;
    const seen = (n: number) => async () => ((await members()) === n && (await countersOf(journey)).entered === n ? true : undefined);
    expect(await members()).toBe(0);

    expect((await api("contact", "add", { data: { EMAIL: "added@example.com", CITY: "Pune" } })).status).toBe(200);
    await eventually(seen(1));

    const edited = await admin("PATCH", `/panels/${panel.id}/contacts/edited@example.com`, { attributes: { CITY: "Pune" } });
    expect(edited.status).toBe(200);
    await eventually(seen(2));

    await importCsv(panel, "EMAIL,CITY\nimported@example.com,Pune\n");
    // An import's reactions mark the segments for a rebuild and the segment journeys for a new scan; the cron does both.
    await cronAllAt(Date.now());
    await cronAllAt(Date.now());
    await eventually(seen(3));
  });

  it("a contact the pipeline creates for a new identity reaches segments and journeys", async () => {
    const panel = await createPanel();
    const activityid = await defineActivity(panel, "visit");
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune office", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@pune." }] } });
    expect(segment.status).toBe(201);
    const journey = await startJourney(panel, {
      trigger: { type: "segment", filter: [{ attribute: "EMAIL", op: "contains", value: "@pune." }] },
      steps: [{ id: "hello", type: "sms", text: "Namaste Pune" }],
    });
    await cronAllAt(Date.now());
    const members = async () => (await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}`)).body.members as number;
    expect(await members()).toBe(0);

    // Each event names an identity the panel does not have: the pass storing it creates the contact; only one matches.
    await act(panel, activityid, "asha@pune.example.com");
    await act(panel, activityid, "ravi@delhi.example.com");
    await eventually(async () => ((await members()) === 1 && (await countersOf(journey)).entered === 1 ? true : undefined));
  });

  it("the envelope's delete from a list reaches the segments: a member of the list's segment leaves it", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = (await api("lists", "add", { listname: "VIP" })).body.listid;
    expect((await api("contact", "add", { data: { EMAIL: "vip@example.com" }, listid: vip })).status).toBe(200);
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "VIPs", match: { all: [{ list: vip, op: "in" }] } });
    expect(segment.status).toBe(201);
    const members = async () => (await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}`)).body.members as number;
    await eventually(async () => ((await members()) === 1 ? true : undefined));
    const removed = await api("contact", "delete", { data: { EMAIL: "vip@example.com" }, listid: vip });
    expect(removed.body).toMatchObject({ removed_from: [vip] });
    await eventually(async () => ((await members()) === 0 ? true : undefined));
  });
});
