// Messages journeys send (email, and sms, apn, bpn through the outbox channel), keyed by msgid.

export interface JourneyMessage {
  msgid: string;
  panelId: string;
  journeyId: string;
  instanceId: string;
  stepId: string;
  channel: "email" | "sms" | "apn" | "bpn";
  contactId: number;
  recipient: string | null;
  content: Record<string, unknown>;
  status?: "recorded" | "sending" | "sent" | "skipped" | "failed";
  error?: string | null;
  createdAt: number;
}

interface MessageRow {
  msgid: string;
  panel_id: string;
  journey_id: string;
  instance_id: string;
  step_id: string;
  channel: JourneyMessage["channel"];
  contact_id: number;
  recipient: string | null;
  content: string;
  status: JourneyMessage["status"];
  error: string | null;
  created_at: number;
}

function messageFromRow(r: MessageRow): JourneyMessage {
  return {
    msgid: r.msgid,
    panelId: r.panel_id,
    journeyId: r.journey_id,
    instanceId: r.instance_id,
    stepId: r.step_id,
    channel: r.channel,
    contactId: r.contact_id,
    recipient: r.recipient,
    content: JSON.parse(r.content) as Record<string, unknown>,
    status: r.status,
    error: r.error,
    createdAt: r.created_at,
  };
}

export function insertMessageStatement(db: D1Database, m: JourneyMessage): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING msgid`,
    )
    .bind(m.msgid, m.panelId, m.journeyId, m.instanceId, m.stepId, m.channel, m.contactId, m.recipient, JSON.stringify(m.content), m.status ?? "recorded", m.createdAt);
}

/** Claims a message for sending: true only for the one call that recorded it. */
export async function claimMessage(db: D1Database, m: JourneyMessage): Promise<boolean> {
  return (await insertMessageStatement(db, { ...m, status: "sending" }).first()) !== null;
}

/** Hands a claim back (the provider may take the message later): the step's retry claims it again. */
export async function releaseMessage(db: D1Database, msgid: string): Promise<void> {
  await db.prepare("DELETE FROM journey_messages WHERE msgid = ? AND status = 'sending'").bind(msgid).run();
}

export async function finishMessage(
  db: D1Database,
  msgid: string,
  outcome: { status: "sent"; providerMessageId: string } | { status: "skipped" | "failed"; error: string },
): Promise<void> {
  await db
    .prepare("UPDATE journey_messages SET status = ?, error = ?, provider_msg_id = ? WHERE msgid = ?")
    .bind(outcome.status, outcome.status === "sent" ? null : outcome.error, outcome.status === "sent" ? outcome.providerMessageId : null, msgid)
    .run();
}

/** The journey email a provider reported on, found by the provider's message id (the report does not name the panel). */
export async function journeyEmailByProviderId(db: D1Database, providerMessageId: string): Promise<JourneyMessage | null> {
  const row = await db.prepare("SELECT * FROM journey_messages WHERE provider_msg_id = ? AND channel = 'email'").bind(providerMessageId).first<MessageRow>();
  return row ? messageFromRow(row) : null;
}

export async function getMessages(db: D1Database, panelId: string, msgids: readonly string[]): Promise<Map<string, JourneyMessage>> {
  if (msgids.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT * FROM journey_messages WHERE panel_id = ? AND msgid IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify([...new Set(msgids)]))
    .all<MessageRow>();
  return new Map(results.map((r) => [r.msgid, messageFromRow(r)]));
}

export async function listMessages(db: D1Database, panelId: string, channel: string | undefined, limit: number): Promise<JourneyMessage[]> {
  const { results } = await db
    .prepare("SELECT * FROM journey_messages WHERE panel_id = ? AND (? IS NULL OR channel = ?) ORDER BY created_at DESC, msgid LIMIT ?")
    .bind(panelId, channel ?? null, channel ?? null, limit)
    .all<MessageRow>();
  return results.map(messageFromRow);
}
