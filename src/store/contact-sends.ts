import type { ShardDb } from "./shards";
import { capAllowsAt, longestWindow, type FrequencyCap, type RuleChannel } from "../domain/message-rules";
import { DAY_MS } from "../domain/time";
// The marketing messages counted against frequency caps (decision 0040): a row per message,
// written by the one conditional insert that lets it go.

export interface CountedSend {
  panelId: string;
  contactId: number;
  channel: RuleChannel;
  /** The message's own key (a journey msgid, a campaign message id): a retry finds its row. */
  key: string;
}

export type CapAnswer = { allowed: true } | { allowed: false; cap: FrequencyCap; allowsAt: number };

/**
 * Counts a message against the caps if they allow it, in one statement: D1 runs a database's
 * statements one at a time, so two sends to one contact never both take the last room. A
 * message that was counted before (a retry after a crash) is allowed again without a second
 * row. Refused: the cap that is full and when the caps allow the next message.
 */
export async function countSendIfAllowed(db: ShardDb, send: CountedSend, caps: readonly FrequencyCap[], now: number): Promise<CapAnswer> {
  if (caps.length === 0) return { allowed: true };
  // ?1-?5: the send and now; then each cap's window (ms) and max.
  const within = caps.map((_, i) => `(SELECT COUNT(*) FROM contact_sends WHERE panel_id = ?1 AND contact_id = ?2 AND channel = ?3 AND at > ?5 - ?${6 + 2 * i}) < ?${7 + 2 * i}`).join(" AND ");
  const [, mine, recent] = await db.batch<{ at: number }>([
    db
      .prepare(
        `INSERT OR IGNORE INTO contact_sends (panel_id, contact_id, channel, at, send_key)
         SELECT ?1, ?2, ?3, ?5, ?4 WHERE NOT EXISTS (SELECT 1 FROM contact_sends WHERE panel_id = ?1 AND send_key = ?4) AND ${within}`,
      )
      .bind(send.panelId, send.contactId, send.channel, send.key, now, ...caps.flatMap((c) => [c.days * DAY_MS, c.max])),
    db.prepare("SELECT at FROM contact_sends WHERE panel_id = ? AND send_key = ?").bind(send.panelId, send.key),
    db
      .prepare("SELECT at FROM contact_sends WHERE panel_id = ? AND contact_id = ? AND channel = ? AND at > ? ORDER BY at")
      .bind(send.panelId, send.contactId, send.channel, now - longestWindow(caps)),
  ]);
  if (mine!.results.length > 0) return { allowed: true };
  const sentAt = recent!.results.map((r) => r.at);
  const allowsAt = capAllowsAt(caps, sentAt, now) ?? now;
  // The fullest cap names the refusal: the one that frees last.
  const cap = caps.find((c) => capAllowsAt([c], sentAt, now) === allowsAt) ?? caps[0]!;
  return { allowed: false, cap, allowsAt };
}
