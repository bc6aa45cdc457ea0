import { describe, expect, it } from "vitest";
import { instancesGoing } from "../../src/store/journeys/instances";
import { claimQueuedStatements, insertMessageStatement, overdueQueued, skipWaitingOfInstances, skipWaitingOfJourney, waitingOfJourney } from "../../src/store/journeys/messages";
import { goalInstancesOf } from "../../src/store/journeys/splits";
import { panelData } from "../support/helpers";
import { planOf, recording } from "../support/plans";

// What a stop, a pause or a goal costs the sends: the email groups' re-check reads its
// instances and journeys by primary key, and the waiting SMS and push are found through their
// channels' partial indexes, never through a panel's index of every instance or message.

describe("the reads that hold a journey's sends", () => {
  it("the re-check before a group of journey emails reads instances and journeys by primary key", async () => {
    const { db, caught } = recording(panelData);
    await instancesGoing(db, "pnl_plan", ["jin_a", "jin_b"]);
    const plan = await planOf(panelData, caught[0]!);
    expect(plan).toContain("SCAN k VIRTUAL TABLE");
    expect(plan).toMatch(/SEARCH i USING INDEX sqlite_autoindex_journey_instances_1 \(id=\?\)/);
    expect(plan).toMatch(/SEARCH j USING (COVERING )?INDEX sqlite_autoindex_journeys_1 \(id=\?\)/);
  });

  it("the claim of queued SMS and push reads its messages, and each one's journey and instance, by primary key", async () => {
    const { db, caught } = recording(panelData);
    claimQueuedStatements(db, "pnl_plan", ["sms"], ["jin_a.sms", "jin_b.sms"], "claim", Date.now(), Date.now(), "unknown");
    const plans = await Promise.all(caught.map((c) => planOf(panelData, c)));
    for (const plan of plans) expect(plan).toMatch(/^SEARCH journey_messages USING INDEX sqlite_autoindex_journey_messages_1 \(msgid=\?\)/);
    const plan = plans[caught.findIndex((c) => c.sql.includes("SET claim = ?3"))]!;
    expect(plan).toMatch(/SEARCH i USING INDEX sqlite_autoindex_journey_instances_1 \(id=\?\)/);
    expect(plan).not.toContain("journey_instances_by_journey");
  });

  it("a step's message reads its instance by primary key: its bucket, and whether it left", async () => {
    const { db, caught } = recording(panelData);
    const message = { msgid: "jin_a.sms", panelId: "pnl_plan", journeyId: "jrn_plan", instanceId: "jin_a", stepId: "sms", channel: "sms" as const, contactId: 1, recipient: null, content: {}, createdAt: 0 };
    insertMessageStatement(db, message);
    const plan = await planOf(panelData, caught[0]!);
    expect(plan.match(/SEARCH journey_instances USING (COVERING )?INDEX sqlite_autoindex_journey_instances_1 \(id=\?\)/g)).toHaveLength(2);
    expect(plan).not.toContain("journey_instances_by_journey");
  });

  it("a goal finds its contacts' instances, and the waiting messages of the completed ones, through the contacts' indexes", async () => {
    const { db, caught } = recording(panelData);
    await goalInstancesOf(db, "pnl_plan", ["jrn_plan"], [1, 2]);
    await skipWaitingOfInstances(db, "pnl_plan", [{ id: "jin_a", contactId: 1 }], "goal");
    const [instances, skip] = await Promise.all(caught.map((c) => planOf(panelData, c)));
    expect(instances).toMatch(/SEARCH m USING INDEX journey_messages_by_contact \(panel_id=\? AND contact_id=\?\)/);
    expect(instances).toMatch(/SEARCH i USING INDEX journey_instances_by_contact/);
    expect(instances).not.toContain("journey_messages_by_panel");
    expect(skip).toMatch(/SEARCH journey_messages USING INDEX journey_messages_by_contact \(panel_id=\? AND contact_id=\?\)/);
  });

  it("a resume finds its journey's waiting SMS and push, a stop settles them, and the re-drive finds the overdue ones, through the waiting indexes", async () => {
    const { db, caught } = recording(panelData);
    await waitingOfJourney(db, "pnl_plan", "jrn_plan", 10);
    await overdueQueued(db, "sms", Date.now(), 10);
    await overdueQueued(db, "push", Date.now(), 10);
    await skipWaitingOfJourney(db, "pnl_plan", "jrn_plan", "stopped", 10);
    const plans = await Promise.all(caught.map((c) => planOf(panelData, c)));
    expect(plans).toEqual([
      expect.stringContaining("journey_messages_sms_waiting"),
      expect.stringContaining("journey_messages_push_waiting"),
      expect.stringContaining("journey_messages_sms_waiting"),
      expect.stringContaining("journey_messages_push_waiting"),
      expect.stringMatching(/msgid=\?.*journey_messages_sms_waiting/),
      expect.stringMatching(/msgid=\?.*journey_messages_push_waiting/),
    ]);
    for (const plan of plans) expect(plan).not.toContain("journey_messages_by_panel");
  });
});
