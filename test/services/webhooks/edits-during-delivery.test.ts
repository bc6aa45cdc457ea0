import { describe, expect, it } from "vitest";
import { admin, createPanel, receiver } from "../../support/helpers";
import { advance, createWebhook, deliveries, drive, eventObject, numbersOf, queue, range } from "../../support/webhooks";

/** Polls until the receiver's bucket got `n` delivery requests. */
async function arrived(bucket: string, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await deliveries(bucket)).length >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no delivery reached ${bucket}`);
}

describe("webhook edited while a delivery run goes on", () => {
  it("a new URL takes effect from the next batch: nothing more goes to the old one, the rest waits for the test and goes to the new", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await queue(hook, range(0, 250).map((n) => eventObject(n)));
    await advance(hook.id, 6_000);
    // The old endpoint holds its first answer while the operator moves the webhook elsewhere.
    await receiver.script(hook.bucket, [{ status: 200, delayMs: 1_500 }, { status: 200 }]);
    const running = drive(hook.id);
    await arrived(hook.bucket, 1);
    const moved = receiver.bucket("moved");
    expect((await admin("PATCH", hook.path, { url: receiver.hookUrl(moved) })).status).toBe(200);
    await running;
    expect(numbersOf(await deliveries(hook.bucket))).toEqual(range(0, 100));
    // Configured again until its test passes, then the rest goes to the new URL, in order.
    expect((await admin("GET", hook.path)).body.state).toBe("configured");
    expect((await admin("POST", `${hook.path}/enable`)).body.state).toBe("operational");
    await drive(hook.id);
    expect(numbersOf(await deliveries(moved))).toEqual(range(100, 250));
    expect(numbersOf(await deliveries(hook.bucket))).toEqual(range(0, 100));
  });

  it("a changed signing secret signs the next batch", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, { signing_secret: `whsec_${btoa("old secret, 24 bytes....")}` });
    await queue(hook, range(0, 200).map((n) => eventObject(n)));
    await receiver.script(hook.bucket, [{ status: 200, delayMs: 1_500 }, { status: 200 }]);
    const running = drive(hook.id);
    await arrived(hook.bucket, 1);
    expect((await admin("PATCH", hook.path, { signing_secret: null })).status).toBe(200);
    await running;
    const sent = await deliveries(hook.bucket);
    expect(sent.map((r) => r.headers["webhook-signature"] !== undefined)).toEqual([true, false]);
  });
});
