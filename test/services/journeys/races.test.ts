import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { journeyTimers } from "../../../src/services/journeys/timers";
import { withBindings } from "../../support/cron";
import { filesActingOnSend } from "../../support/interleave";
import { admin, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { act, cartPanel, countersOf, MINUTE, startJourney } from "../../support/journeys";

// Background journey steps against what clients do while a step is under way.

const mail = (id: string, subject: string) => ({ id, type: "email", subject, html: `<p>${subject}</p>`, sender_name: "Shop", sender_email: "shop@example.com" });

/** A delay, a nudge, a day's delay, a second nudge. */
const TWO_NUDGES = [
  { id: "later", type: "delay", for: "1h" },
  { ...mail("nudge", "Come back"), after: "later" },
  { id: "again", type: "delay", for: "1d", after: "nudge" },
  { ...mail("second", "Still there?"), after: "again" },
];

async function stepsSentTo(panel: TestPanel, email: string): Promise<string[]> {
  const { results } = await panelData
    .prepare("SELECT m.step_id FROM journey_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? AND c.pk_value = ? ORDER BY m.step_id")
    .bind(panel.id, email)
    .all<{ step_id: string }>();
  return results.map((r) => r.step_id);
}

describe("journey steps under way", () => {
  it("a contact who reaches the goal while a step of its instance runs leaves for good: the step's next delay is not left to mail it later", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      goal: { activity: "purchase" },
      steps: TWO_NUDGES,
    });
    await act(panel, cart, "buyer@example.com");
    // The delay ends; while its nudge is being sent, the contact buys (the goal).
    const racing = withBindings(env, { FILES: filesActingOnSend(async () => void (await act(panel, buy, "buyer@example.com"))) });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual(["nudge"]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 0, exited: 1, converted: 1 });
    // A day later: the converted contact gets nothing more, and waits nowhere.
    await journeyTimers.run(env, Date.now() + 2 * 24 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual(["nudge"]);
    const counters = await countersOf(journey);
    expect(counters.steps?.again?.waiting ?? 0).toBe(0);
  });

  it("a journey stopped while a step runs leaves no contact waiting in it", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: TWO_NUDGES,
    });
    await act(panel, cart, "browser@example.com");
    const racing = withBindings(env, {
      FILES: filesActingOnSend(async () => {
        expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
      }),
    });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 1, active: 0, exited: 1 });
    expect(counters.steps?.again?.waiting ?? 0).toBe(0);
    const pending = await panelData.prepare("SELECT COUNT(*) AS n FROM journey_points WHERE journey_id = ? AND outcome IS NULL").bind(journey.id).first<{ n: number }>();
    expect(pending!.n).toBe(0);
  });
});
