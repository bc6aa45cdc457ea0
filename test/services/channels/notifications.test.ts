import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sendNotification } from "../../../src/services/channels/notifications";
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
