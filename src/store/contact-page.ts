import type { ShardDb } from "./shards";
import { stricterStop } from "../domain/preferences";
import { addressStopKeys, suppressionRowStatement, type SuppressionReason, type SuppressionRow } from "./suppressions";

/**
 * What the panel's contact page reads about one contact besides its attributes: the messages
 * sent to it with their opens and clicks, the journeys it entered, and whether its address is
 * suppressed. One batch, each statement on an index that starts with the contact.
 */

export interface ContactMessage {
  kind: "campaign" | "journey";
  /** The message's id: `<campaign>.<contact>` or a journey message's msgid; its copy is read by it. */
  messageId: string;
  /** The campaign's or the journey's id and name. */
  sourceId: string;
  sourceName: string;
  /** The journey step that sent it (journey messages). */
  stepId: string | null;
  channel: string;
  /** As it was sent: the filled subject (email) or title or text (push, SMS). */
  subject: string | null;
  status: string;
  error: string | null;
  at: number;
  opens: number;
  clicks: number;
  bounced: boolean;
  unsubscribed: boolean;
}

export interface ContactJourney {
  journeyId: string;
  name: string;
  journeyStatus: string;
  status: "active" | "completed" | "exited";
  enteredAt: number;
  endedAt: number | null;
}

export interface ContactSuppression {
  address: string;
  reason: SuppressionReason;
  campaignId: string | null;
  at: number;
}

export interface ContactHistory {
  messages: ContactMessage[];
  journeys: ContactJourney[];
  suppression: ContactSuppression | null;
}

interface CampaignMessageRow {
  campaign_id: string;
  contact_id: number;
  /** Null for a message kept on a shard other than its campaign's (contactHistory reads it from the home). */
  name: string | null;
  subject: string;
  status: string;
  error: string | null;
  at: number;
  opens: number;
  clicks: number;
  bounced_at: number | null;
  unsubscribed_at: number | null;
}

interface JourneyMessageRow {
  msgid: string;
  journey_id: string;
  name: string | null;
  step_id: string;
  channel: string;
  content: string;
  status: string;
  error: string | null;
  created_at: number;
}

interface EngagementRow {
  msgid: string;
  name: string;
  n: number;
}

/**
 * The newest `limit` campaign and journey messages of the contact, its journeys, and the
 * suppression of `address`. `home`: the panel's home, when `db` is the contact's partition on
 * another shard (decision 0038 step 4), where the campaign of a message kept there is, and
 * where stops by address written elsewhere are (one more read: the stricter of the two shows).
 */
export async function contactHistory(db: ShardDb, panelId: string, contactId: number, address: string | null, limit: number, home?: ShardDb): Promise<ContactHistory> {
  const keys = address ? await addressStopKeys(panelId, address) : null;
  const homeStop = keys && home && home !== db ? suppressionRowStatement(home, panelId, keys).first<SuppressionRow>() : null;
  const [[campaignRows, journeyMessageRows, journeyRows, suppressionRows], homeRow] = await Promise.all([
    db.batch<Record<string, unknown>>([
      db
        .prepare(
          `SELECT m.campaign_id, m.contact_id, c.name, COALESCE(m.subject, c.subject) AS subject, m.status, m.error, COALESCE(m.sent_at, c.published_at, c.created_at) AS at,
                  m.opens, m.clicks, m.bounced_at, m.unsubscribed_at
           FROM campaign_messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
           WHERE m.panel_id = ?1 AND m.contact_id = ?2 ORDER BY at DESC LIMIT ?3`,
        )
        .bind(panelId, contactId, limit),
      db
        .prepare(
          `SELECT m.msgid, m.journey_id, j.name, m.step_id, m.channel, m.content, m.status, m.error, m.created_at
           FROM journey_messages m LEFT JOIN journeys j ON j.id = m.journey_id
           WHERE m.panel_id = ?1 AND m.contact_id = ?2 ORDER BY m.created_at DESC LIMIT ?3`,
        )
        .bind(panelId, contactId, limit),
      db
        .prepare(
          `SELECT i.journey_id, j.name, j.status AS journey_status, i.status, i.entered_at, i.ended_at
           FROM journey_instances i JOIN journeys j ON j.id = i.journey_id
           WHERE i.panel_id = ?1 AND i.contact_id = ?2 ORDER BY i.entered_at DESC LIMIT ?3`,
        )
        .bind(panelId, contactId, limit),
      ...(keys ? [suppressionRowStatement(db, panelId, keys)] : []),
    ]),
    homeStop,
  ]);
  const journeyMessages = journeyMessageRows!.results as unknown as JourneyMessageRow[];
  const engagement = await journeyEmailEngagement(
    db,
    panelId,
    contactId,
    journeyMessages.filter((m) => m.channel === "email").map((m) => m.msgid),
  );
  const campaignMessages = campaignRows!.results as unknown as CampaignMessageRow[];
  // Messages kept on a shard other than their campaign's home: the campaign's name and subject from the home.
  const elsewhere = [...new Set(campaignMessages.filter((row) => row.name === null).map((row) => row.campaign_id))];
  if (elsewhere.length && home) {
    const { results } = await home
      .prepare("SELECT id, name, subject, COALESCE(published_at, created_at) AS at FROM campaigns WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
      .bind(panelId, JSON.stringify(elsewhere))
      .all<{ id: string; name: string; subject: string; at: number }>();
    const byId = new Map(results.map((c) => [c.id, c]));
    for (const row of campaignMessages) {
      const campaign = row.name === null ? byId.get(row.campaign_id) : undefined;
      if (campaign) Object.assign(row, { name: campaign.name, subject: row.subject ?? campaign.subject, at: row.at ?? campaign.at });
    }
  }
  const messages: ContactMessage[] = [
    ...campaignMessages.filter((row) => row.name !== null).map((row): ContactMessage => ({
      kind: "campaign",
      messageId: `${row.campaign_id}.${row.contact_id}`,
      sourceId: row.campaign_id,
      sourceName: row.name!,
      stepId: null,
      channel: "email",
      subject: row.subject,
      status: row.status,
      error: row.error,
      at: row.at,
      opens: row.opens,
      clicks: row.clicks,
      bounced: row.bounced_at !== null,
      unsubscribed: row.unsubscribed_at !== null,
    })),
    ...journeyMessages.map((row): ContactMessage => {
      const counts = engagement.get(row.msgid) ?? {};
      return {
        kind: "journey",
        messageId: row.msgid,
        sourceId: row.journey_id,
        sourceName: row.name ?? row.journey_id,
        stepId: row.step_id,
        channel: row.channel,
        subject: subjectOf(row),
        status: row.status,
        error: row.error,
        at: row.created_at,
        opens: counts.open ?? 0,
        clicks: counts.click ?? 0,
        bounced: (counts.bounce ?? 0) > 0,
        unsubscribed: (counts.unsubscribe ?? 0) > 0,
      };
    }),
  ]
    .sort((a, b) => b.at - a.at)
    .slice(0, limit);
  // A stop by address written elsewhere (decision 0038) is on the home; the stricter holds, as for its sends.
  const suppression = stricterStop(suppressionRows?.results[0] as SuppressionRow | undefined, homeRow);
  return {
    messages,
    journeys: (journeyRows!.results as Array<{ journey_id: string; name: string; journey_status: string; status: ContactJourney["status"]; entered_at: number; ended_at: number | null }>).map(
      (row) => ({ journeyId: row.journey_id, name: row.name, journeyStatus: row.journey_status, status: row.status, enteredAt: row.entered_at, endedAt: row.ended_at }),
    ),
    suppression: keys && suppression ? { address: keys.plain, reason: suppression.reason, campaignId: suppression.campaign_id, at: suppression.created_at } : null,
  };
}

function subjectOf(row: JourneyMessageRow): string | null {
  try {
    // subject_line: a journey email's filled subject (messages recorded before it was kept show the template).
    const content = JSON.parse(row.content) as { subject_line?: unknown; subject?: unknown; title?: unknown; text?: unknown; body?: unknown };
    const line = content.subject_line ?? content.subject ?? content.title ?? content.body ?? content.text;
    return typeof line === "string" ? line.slice(0, 200) : null;
  } catch {
    return null;
  }
}

/**
 * Opens, clicks, bounces and unsubscribes of journey email, counted from the contact's email
 * events (they carry the msgid), read through events_by_contact: `+panel_id` keeps the planner
 * off the panel's email events in events_by_name.
 */
async function journeyEmailEngagement(db: ShardDb, panelId: string, contactId: number, msgids: readonly string[]): Promise<Map<string, Record<string, number>>> {
  const counts = new Map<string, Record<string, number>>();
  if (msgids.length === 0) return counts;
  const { results } = await db
    .prepare(
      `SELECT msgid, name, COUNT(*) AS n FROM events
       WHERE contact_id = ?2 AND +panel_id = ?1 AND channel = 'email' AND msgid IN (SELECT value FROM json_each(?3))
       GROUP BY msgid, name`,
    )
    .bind(panelId, contactId, JSON.stringify(msgids))
    .all<EngagementRow>();
  for (const row of results) (counts.get(row.msgid) ?? counts.set(row.msgid, {}).get(row.msgid)!)[row.name] = row.n;
  return counts;
}
