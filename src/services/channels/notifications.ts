import { panelDb } from "../access/shards";
import { newId } from "../../lib/random";
import { claimNotification, finishNotification } from "../../store/notifications";

/**
 * Transactional email (import summaries, notify_me copies, webhook failure alerts) goes
 * through the `MAILER` send_email binding; marketing mail does not (DESIGN). Every send is
 * recorded in D1, so an operator and the tests can see what went out.
 */
export interface Notification {
  panelId: string;
  /** What the mail is about, e.g. "import_summary", "webhook_alert", "broadcast_notify". */
  kind: string;
  to: string[];
  subject: string;
  text: string;
  /** Makes the send at-most-once: a second notification with the same key is skipped. */
  dedupeKey?: string;
}

export type NotificationOutcome = "sent" | "failed" | "duplicate";

export async function sendNotification(env: Env, notification: Notification, now = Date.now()): Promise<NotificationOutcome> {
  const db = await panelDb(env, notification.panelId);
  const id = newId("ntf");
  const claimed = await claimNotification(
    db,
    {
      id,
      panelId: notification.panelId,
      kind: notification.kind,
      recipients: notification.to,
      subject: notification.subject,
      body: notification.text,
      status: "sending",
      error: null,
      createdAt: now,
    },
    notification.dedupeKey ?? null,
  );
  if (!claimed) return "duplicate";
  try {
    await env.MAILER.send({ from: env.MAIL_FROM, to: notification.to, subject: notification.subject, text: notification.text });
    await finishNotification(db, id, "sent", null);
    return "sent";
  } catch (error) {
    // A failed notification never fails the work it reports on; it is recorded instead.
    await finishNotification(db, id, "failed", error instanceof Error ? error.message : String(error));
    return "failed";
  }
}
