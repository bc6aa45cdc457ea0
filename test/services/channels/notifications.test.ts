import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CAPPED_COPIES_PER_HOUR, sendNotification } from "../../../src/services/channels/notifications";
import { admin, createPanel } from "../../support/helpers";

describe("transactional notifications", () => {
  it("sends through MAILER and records the mail", async () => {
    const panel = await createPanel();
    const outcome = await sendNotification(env, { panelId: panel.id, kind: "test", to: ["ops@example.com"], subject: "Hello", text: "Body" });
    expect(outcome).toBe("sent");
    const listed = await admin("GET", `/panels/${panel.id}/notifications`);
    expect(listed.body.notifications).toEqual([
      expect.objectContaining({ kind: "test", to: ["ops@example.com"], subject: "Hello", text: "Body", status: "sent" }),
    ]);
  });

  it("sends a deduplicated notification once", async () => {
    const panel = await createPanel();
    const first = await sendNotification(env, { panelId: panel.id, kind: "once", to: ["a@example.com"], subject: "S", text: "T", dedupeKey: `k-${panel.id}` });
    const second = await sendNotification(env, { panelId: panel.id, kind: "once", to: ["a@example.com"], subject: "S", text: "T", dedupeKey: `k-${panel.id}` });
    expect([first, second]).toEqual(["sent", "duplicate"]);
    expect((await admin("GET", `/panels/${panel.id}/notifications?kind=once`)).body.notifications).toHaveLength(1);
  });

  it("records a failed send without throwing", async () => {
    const panel = await createPanel();
    const failing = { ...env, MAILER: { send: async () => Promise.reject(new Error("relay down")) } as unknown as SendEmail };
    expect(await sendNotification(failing, { panelId: panel.id, kind: "x", to: ["a@example.com"], subject: "S", text: "T" })).toBe("failed");
    const [record] = (await admin("GET", `/panels/${panel.id}/notifications`)).body.notifications;
    expect(record).toMatchObject({ status: "failed", error: "relay down" });
  });

  it("refuses a bad limit", async () => {
    const panel = await createPanel();
    expect((await admin("GET", `/panels/${panel.id}/notifications?limit=0`)).status).toBe(400);
    expect((await admin("GET", `/panels/${panel.id}/notifications?limit=abc`)).status).toBe(400);
  });
});

const recipients = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `copy${i}-${tag}@example.com`);

describe("the hourly cap on notification copies callers ask for", () => {
  it("sends copies up to the cap, records the next as not sent, and leaves alerts alone", async () => {
    const panel = await createPanel();
    const now = Date.now();
    const per = 20;
    for (let i = 0; i < CAPPED_COPIES_PER_HOUR / per; i++) {
      const outcome = await sendNotification(env, { panelId: panel.id, kind: i % 2 ? "import_summary" : "broadcast_notify", to: recipients(per, `a${i}`), subject: "s", text: "t", capped: true }, now);
      expect(outcome).toBe("sent");
    }
    const over = await sendNotification(env, { panelId: panel.id, kind: "broadcast_notify", to: recipients(1, "over"), subject: "s", text: "t", capped: true }, now);
    expect(over).toBe("failed");
    // Alerts the panel's own settings send are not copies a caller asked for.
    expect(await sendNotification(env, { panelId: panel.id, kind: "webhook_alert", to: ["ops@example.com"], subject: "s", text: "t" }, now)).toBe("sent");

    const listed = (await admin("GET", `/panels/${panel.id}/notifications?kind=broadcast_notify`)).body.notifications;
    const refused = listed.find((mail: { to: string[] }) => mail.to[0] === "copy0-over@example.com");
    expect(refused).toMatchObject({ status: "failed" });
    expect(refused.error).toMatch(/^not sent: the panel's 100 notification copies per hour are used up/);

    // An hour later the cap has room again.
    expect(await sendNotification(env, { panelId: panel.id, kind: "broadcast_notify", to: recipients(1, "later"), subject: "s", text: "t", capped: true }, now + 61 * 60 * 1000)).toBe("sent");
  });
});
