import type { ShardDb } from "./shards";
import { capAnswerOf, longestWindow, type CapAnswer, type FrequencyCap, type RuleChannel } from "../domain/message-rules";
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

/**
 * Counts a message against the caps if they allow it, in one statement: D1 runs a database's
 * statements one at a time, so two sends to one contact never both take the last room. A
 * message that was counted before (a retry after a crash) is allowed again without a second
 * row. Refused: the cap that is full and when the caps allow the next message.
 */
export async function countSendIfAllowed(db: ShardDb, send: CountedSend, caps: readonly FrequencyCap[], now: number): Promise<CapAnswer> {
  const [answer] = await countSendsIfAllowed(db, send, [send], caps, now);
  return answer!;
}

/**
 * countSendIfAllowed for messages of one panel and channel (a campaign's batch), in one round
 * trip: the statements of a batch run in order, so each message's insert sees the rows of
 * those before it. Answers in the order of `sends`.
 */
export async function countSendsIfAllowed(
  db: ShardDb,
  of: { panelId: string; channel: RuleChannel },
  sends: ReadonlyArray<{ contactId: number; key: string }>,
  caps: readonly FrequencyCap[],
  now: number,
): Promise<CapAnswer[]> {
  if (caps.length === 0 || sends.length === 0) return sends.map(() => ({ allowed: true }));
  // ?1-?5: the send and now; then each cap's window (ms) and max.
  const within = caps.map((_, i) => `(SELECT COUNT(*) FROM contact_sends WHERE panel_id = ?1 AND contact_id = ?2 AND channel = ?3 AND at > ?5 - ?${6 + 2 * i}) < ?${7 + 2 * i}`).join(" AND ");
  const insert = db.prepare(
    `INSERT OR IGNORE INTO contact_sends (panel_id, contact_id, channel, at, send_key)
     SELECT ?1, ?2, ?3, ?5, ?4 WHERE NOT EXISTS (SELECT 1 FROM contact_sends WHERE panel_id = ?1 AND send_key = ?4) AND ${within}`,
  );
  const windows = caps.flatMap((c) => [c.days * DAY_MS, c.max]);
  const results = await db.batch<Record<string, unknown>>([
    ...sends.map((send) => insert.bind(of.panelId, send.contactId, of.channel, send.key, now, ...windows)),
    db.prepare("SELECT send_key FROM contact_sends WHERE panel_id = ?1 AND send_key IN (SELECT value FROM json_each(?2))").bind(of.panelId, JSON.stringify(sends.map((s) => s.key))),
    db
      .prepare("SELECT contact_id, at FROM contact_sends WHERE panel_id = ?1 AND channel = ?2 AND at > ?3 AND contact_id IN (SELECT value FROM json_each(?4)) ORDER BY at")
      .bind(of.panelId, of.channel, now - longestWindow(caps), JSON.stringify(sends.map((s) => s.contactId))),
  ]);
  const counted = new Set((results[sends.length]!.results as Array<{ send_key: string }>).map((r) => r.send_key));
  const recent = new Map<number, number[]>();
  for (const row of results[sends.length + 1]!.results as Array<{ contact_id: number; at: number }>) {
    const times = recent.get(row.contact_id);
    if (times) times.push(row.at);
    else recent.set(row.contact_id, [row.at]);
  }
  return sends.map((send): CapAnswer => {
    if (counted.has(send.key)) return { allowed: true };
    const answer = capAnswerOf(caps, recent.get(send.contactId) ?? [], now);
    // The insert refused it, so the caps are full; the rows read say which one (allowed: a row gone since, try again now).
    return answer.allowed ? { allowed: false, cap: caps[0]!, allowsAt: now } : answer;
  });
}

/**
 * The times of these contacts' counted sends of `channels` from `from` to `to`, per contact and
 * channel (a journey simulation counts them against the caps), leaving out the messages of
 * `journeyId` itself: a simulated version stands in for them.
 */
export async function recordedSends(
  db: ShardDb,
  panelId: string,
  contactIds: readonly number[],
  channels: readonly RuleChannel[],
  range: { from: number; to: number },
  journeyId: string,
): Promise<Map<number, Partial<Record<RuleChannel, number[]>>>> {
  const sends = new Map<number, Partial<Record<RuleChannel, number[]>>>();
  if (contactIds.length === 0 || channels.length === 0) return sends;
  const { results } = await db
    .prepare(
      `SELECT s.contact_id, s.channel, s.at FROM contact_sends s
       WHERE s.panel_id = ?1 AND s.contact_id IN (SELECT value FROM json_each(?2)) AND s.channel IN (SELECT value FROM json_each(?3)) AND s.at > ?4 AND s.at <= ?5
         AND NOT EXISTS (SELECT 1 FROM journey_messages m WHERE m.msgid = s.send_key AND m.journey_id = ?6)
       ORDER BY s.at`,
    )
    .bind(panelId, JSON.stringify(contactIds), JSON.stringify(channels), range.from, range.to, journeyId)
    .all<{ contact_id: number; channel: RuleChannel; at: number }>();
  for (const row of results) {
    const byChannel = sends.get(row.contact_id) ?? {};
    (byChannel[row.channel] ??= []).push(row.at);
    sends.set(row.contact_id, byChannel);
  }
  return sends;
}
