import { sendTransactional } from "./mailer";
import { panelDb } from "../access/shards";
import { newId } from "../../lib/random";
import { claimNotification, finishNotification, recentNotificationCopies } from "../../store/notifications";
import { config } from "../../lib/config";

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
  /** A copy an API caller asked for (notify_me, notifyemail): counts against the panel's hourly cap. */
  capped?: boolean;
}

/**
 * Copies (one per recipient) of caller-requested notifications a panel may send per hour. Past
 * it a notification is recorded as failed and not sent: an API key must not be a mail relay.
 */
export const CAPPED_COPIES_PER_HOUR = 100;
const HOUR_MS = 60 * 60 * 1000;
const CAPPED_KINDS = ["broadcast_notify", "import_summary"];

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
  if (notification.capped) {
    // Counted after the claim, which this copy is part of, so two racing claims cannot both slip under.
    const copies = await recentNotificationCopies(db, notification.panelId, CAPPED_KINDS, now - HOUR_MS);
    if (copies > CAPPED_COPIES_PER_HOUR) {
      await finishNotification(db, id, "failed", `not sent: the panel's ${CAPPED_COPIES_PER_HOUR} notification copies per hour are used up`);
      return "failed";
    }
  }
  try {
    await sendTransactional(env, { from: config(env).mailFrom, to: notification.to, subject: notification.subject, text: notification.text });
    await finishNotification(db, id, "sent", null);
    return "sent";
  } catch (error) {
    // A failed notification never fails the work it reports on; it is recorded instead.
    await finishNotification(db, id, "failed", error instanceof Error ? error.message : String(error));
    return "failed";
  }
}
