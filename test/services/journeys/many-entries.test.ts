import { describe, expect, it } from "vitest";
import { admin, createPanel, type TestPanel } from "../../support/helpers";
import { pipelineSettled, postBatch } from "../../support/activity";
import { cartPanel, countersOf, createWebhook, cronAllAt, delivered, startJourney } from "../../support/journeys";

/** Recipients of the panel's journey SMS (no MOBILE: the contact's key), sorted. */
async function smsTo(panel: TestPanel): Promise<string[]> {
  const answer = await admin("GET", `/panels/${panel.id}/journey-messages?channel=sms&limit=1000`);
  return answer.body.messages.map((message: { recipient: string }) => message.recipient).sort();
}

// Points are continued many at a time: webhook events go to the webhook in one hand-over per
// page and the D1 writes of many points share a batch. What each contact gets must not change.

describe("a batch of activities entering a journey together", () => {
  it("gives each of 300 contacts one message and one webhook event, and a re-run of the cron doubles nothing", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "hi", type: "sms", text: "Still thinking about it?" },
        { id: "hook", type: "webhook", after: "hi", webhook: hook.id, attributes: ["EMAIL"] },
      ],
    });
    const emails = Array.from({ length: 300 }, (_, i) => `buyer${i}@example.com`);
    const posted = await postBatch(
      panel.clientId,
      emails.map((identity) => ({ activityid: cart, identity })),
    );
    expect(posted.status).toBe(200);
    await pipelineSettled(panel.id, 60_000);

    expect(await countersOf(journey)).toMatchObject({ entered: 300, completed: 300, active: 0, steps: { hi: { acted: 300 }, hook: { acted: 300 } } });
    const events = await delivered(hook);
    expect(events.map((event) => event.att_params.EMAIL).sort()).toEqual([...emails].sort());
    expect(await smsTo(panel)).toEqual([...emails].sort());

    await cronAllAt(Date.now() + 5 * 60_000);
    expect(await countersOf(journey)).toMatchObject({ entered: 300, completed: 300 });
    expect((await smsTo(panel)).length).toBe(300);
    expect((await delivered(hook)).length).toBe(300);
  });
});
