import { describe, expect, it } from "vitest";
import { liveJourneys } from "../../../src/services/journeys/live-journeys";
import { admin, apiFor, createPanel, panelData } from "../../support/helpers";
import { act, cartPanel, countersOf, puneSegmentJourney, startJourney } from "../../support/journeys";

// The per-isolate answer to "which journeys of this panel run or are paused" (live-journeys.ts).
describe("live journeys of a panel", () => {
  it("is read once and kept, and read again at once when a journey's status changes in this isolate", async () => {
    const panel = await createPanel();
    expect(await liveJourneys(panelData, panel.id)).toEqual([]);
    // A change behind the service's back is not seen while the answer is kept...
    await panelData.prepare(
      `INSERT INTO journeys (id, panel_id, name, definition, trigger_type, trigger_key, status, created_at, updated_at)
       VALUES ('jny_behind', ?, 'Behind', '{"trigger":{"type":"segment","filter":[]},"steps":[]}', 'segment', NULL, 'running', 0, 0)`,
    )
      .bind(panel.id)
      .run();
    expect(await liveJourneys(panelData, panel.id)).toEqual([]);
    // ...a status change through the admin API is.
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Goa" }] }, steps: [{ id: "hi", type: "apn", text: "Hi" }] });
    expect((await liveJourneys(panelData, panel.id)).map((j) => j.id).sort()).toEqual([journey.id, "jny_behind"].sort());
    await admin("POST", `${journey.path}/status`, { status: "paused" });
    expect((await liveJourneys(panelData, panel.id)).find((j) => j.id === journey.id)?.status).toBe("paused");
    await admin("POST", `${journey.path}/status`, { status: "stopped" });
    expect((await liveJourneys(panelData, panel.id)).map((j) => j.id)).toEqual(["jny_behind"]);
  });

  it("a contact written after the panel's answer was kept enters a segment journey started since", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "first@example.com", CITY: "Delhi" } });
    expect(await liveJourneys(panelData, panel.id)).toEqual([]);
    const journey = await puneSegmentJourney(panel);
    await api("contact", "add", { data: { EMAIL: "later@example.com", CITY: "Pune" } });
    // The entry runs after the answer (waitUntil); well inside the cache's 10 s.
    const deadline = Date.now() + 3_000;
    while ((await countersOf(journey)).entered < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
  });

  it("an activity recorded after a journey started through another isolate enters it, while this isolate still keeps its answer", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Still thinking?" }] }, null);
    // The pipeline reads and keeps the panel's answer: no journey runs yet.
    await act(panel, cart, "before@example.com");
    // Started through another isolate: this one is not told, and its answer stays.
    await panelData.prepare("UPDATE journeys SET status = 'running' WHERE panel_id = ? AND id = ?").bind(panel.id, journey.id).run();
    expect(await liveJourneys(panelData, panel.id)).toEqual([]);
    await act(panel, cart, "after@example.com");
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
  });
});
