import { activityNameKey } from "../domain/activity";
import type { AttributeValue } from "../domain/attributes";
import type { JourneyDefinition } from "../domain/journey";

export const JOURNEY_STATUSES = ["draft", "running", "paused", "stopped"] as const;
export type JourneyStatus = (typeof JOURNEY_STATUSES)[number];

export interface Journey {
  id: string;
  panelId: string;
  name: string;
  definition: JourneyDefinition;
  status: JourneyStatus;
  scanCursor: number | null;
  createdAt: number;
  updatedAt: number;
}

interface JourneyRow {
  id: string;
  panel_id: string;
  name: string;
  definition: string;
  status: JourneyStatus;
  scan_cursor: number | null;
  created_at: number;
  updated_at: number;
}

const JOURNEY_COLUMNS = "id, panel_id, name, definition, status, scan_cursor, created_at, updated_at";

function journeyFromRow(row: JourneyRow): Journey {
  return {
    id: row.id,
    panelId: row.panel_id,
    name: row.name,
    definition: JSON.parse(row.definition) as JourneyDefinition,
    status: row.status,
    scanCursor: row.scan_cursor,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The trigger's lookup key: an activity name (lower case) or a list id. */
function triggerKey(definition: JourneyDefinition): string | null {
  const { trigger } = definition;
  if (trigger.type === "activity") return activityNameKey(trigger.activity);
  if (trigger.type === "list") return String(trigger.listid);
  return null;
}

export async function insertJourney(db: D1Database, journey: Journey): Promise<void> {
  await db
    .prepare(
      `INSERT INTO journeys (id, panel_id, name, definition, trigger_type, trigger_key, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      journey.id,
      journey.panelId,
      journey.name,
      JSON.stringify(journey.definition),
      journey.definition.trigger.type,
      triggerKey(journey.definition),
      journey.status,
      journey.createdAt,
      journey.updatedAt,
    )
    .run();
}

export async function getJourney(db: D1Database, panelId: string, id: string): Promise<Journey | null> {
  const row = await db.prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<JourneyRow>();
  return row ? journeyFromRow(row) : null;
}

export async function listJourneys(db: D1Database, panelId: string): Promise<Journey[]> {
  const { results } = await db.prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? ORDER BY created_at, id`).bind(panelId).all<JourneyRow>();
  return results.map(journeyFromRow);
}

/** Replaces a draft's definition; null when there is no such journey or it is not a draft. */
export async function updateDraftJourney(db: D1Database, panelId: string, id: string, definition: JourneyDefinition, now: number): Promise<Journey | null> {
  const row = await db
    .prepare(
      `UPDATE journeys SET name = ?, definition = ?, trigger_type = ?, trigger_key = ?, updated_at = ?
       WHERE panel_id = ? AND id = ? AND status = 'draft' RETURNING ${JOURNEY_COLUMNS}`,
    )
    .bind(definition.name, JSON.stringify(definition), definition.trigger.type, triggerKey(definition), now, panelId, id)
    .first<JourneyRow>();
  return row ? journeyFromRow(row) : null;
}

/**
 * Moves a journey from one of `from` to `to`; null when it was in none of them. Stopping ends
 * every active instance (exited) and cancels its pending waits and delays in the same batch.
 * Starting a segment journey sets its entry scan going.
 */
export async function changeJourneyStatus(
  db: D1Database,
  panelId: string,
  id: string,
  from: readonly JourneyStatus[],
  to: JourneyStatus,
  now: number,
): Promise<Journey | null> {
  const update = db
    .prepare(
      `UPDATE journeys SET status = ?1, updated_at = ?2,
         scan_cursor = CASE WHEN ?1 = 'running' AND status = 'draft' AND trigger_type = 'segment' THEN 0
                            WHEN ?1 = 'stopped' THEN NULL ELSE scan_cursor END
       WHERE panel_id = ?3 AND id = ?4 AND status IN (SELECT value FROM json_each(?5)) RETURNING ${JOURNEY_COLUMNS}`,
    )
    .bind(to, now, panelId, id, JSON.stringify(from));
  if (to !== "stopped") {
    const row = await update.first<JourneyRow>();
    return row ? journeyFromRow(row) : null;
  }
  const [updated] = await db.batch<JourneyRow>([
    update,
    db
      .prepare(
        `UPDATE journey_points SET outcome = 'cancelled', resolved_at = ?1, continued_at = ?1
         WHERE journey_id = ?2 AND panel_id = ?3 AND (outcome IS NULL OR continued_at IS NULL)
           AND EXISTS (SELECT 1 FROM journeys WHERE id = ?2 AND status = 'stopped')`,
      )
      .bind(now, id, panelId),
    db
      .prepare(
        `UPDATE journey_instances SET status = 'exited', ended_at = ?1
         WHERE journey_id = ?2 AND panel_id = ?3 AND status = 'active' AND EXISTS (SELECT 1 FROM journeys WHERE id = ?2 AND status = 'stopped')`,
      )
      .bind(now, id, panelId),
  ]);
  const row = updated!.results[0];
  return row ? journeyFromRow(row) : null;
}

export interface JourneyCounters {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  /** Per step: how many instances it acted for, and how many wait at it now. */
  steps: Record<string, { acted: number; waiting: number }>;
}

export async function journeyCounters(db: D1Database, panelId: string, journeyId: string): Promise<JourneyCounters> {
  const [instances, runs, waiting] = await db.batch<Record<string, unknown>>([
    db.prepare("SELECT status, COUNT(*) AS n FROM journey_instances WHERE panel_id = ? AND journey_id = ? GROUP BY status").bind(panelId, journeyId),
    db.prepare("SELECT step_id, COUNT(*) AS n FROM journey_step_runs WHERE journey_id = ? AND journey_id IN (SELECT id FROM journeys WHERE panel_id = ?) GROUP BY step_id").bind(journeyId, panelId),
    db
      .prepare("SELECT step_id, COUNT(*) AS n FROM journey_points WHERE panel_id = ? AND journey_id = ? AND outcome IS NULL AND kind != 'start' GROUP BY step_id")
      .bind(panelId, journeyId),
  ]);
  const counters: JourneyCounters = { entered: 0, active: 0, completed: 0, exited: 0, steps: {} };
  for (const row of instances!.results as Array<{ status: "active" | "completed" | "exited"; n: number }>) {
    counters[row.status] = row.n;
    counters.entered += row.n;
  }
  const step = (id: string) => (counters.steps[id] ??= { acted: 0, waiting: 0 });
  for (const row of runs!.results as Array<{ step_id: string; n: number }>) step(row.step_id).acted = row.n;
  for (const row of waiting!.results as Array<{ step_id: string; n: number }>) step(row.step_id).waiting = row.n;
  return counters;
}

/** Running journeys of a panel whose trigger is of `type` (and, for activity, matches one of `keys`). */
export async function runningJourneysByTrigger(db: D1Database, panelId: string, type: "activity" | "segment", keys?: readonly string[]): Promise<Journey[]> {
  const { results } = await db
    .prepare(
      `SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? AND status = 'running' AND trigger_type = ?
       AND (? IS NULL OR trigger_key IN (SELECT value FROM json_each(?)))`,
    )
    .bind(panelId, type, keys ? 1 : null, JSON.stringify(keys ?? []))
    .all<JourneyRow>();
  return results.map(journeyFromRow);
}

/** Journeys by (panel, id): the points of the cron come from every panel. */
export async function getJourneysByIds(db: D1Database, refs: ReadonlyArray<{ panelId: string; journeyId: string }>): Promise<Map<string, Journey>> {
  if (refs.length === 0) return new Map();
  const keys = [...new Map(refs.map((r) => [r.journeyId, [r.panelId, r.journeyId]])).values()];
  const { results } = await db
    .prepare(
      `SELECT ${JOURNEY_COLUMNS.split(", ").map((c) => `j.${c}`).join(", ")} FROM json_each(?) k
       JOIN journeys j ON j.panel_id = json_extract(k.value, '$[0]') AND j.id = json_extract(k.value, '$[1]')`,
    )
    .bind(JSON.stringify(keys))
    .all<JourneyRow>();
  return new Map(results.map((row) => [row.id, journeyFromRow(row)]));
}

/**
 * Moves the scan on from `from` (the cursor the page was read at; a concurrent scan of the
 * same page writes nothing). A finished scan that an upload marked meanwhile starts over.
 */
export async function setScanCursor(db: D1Database, journeyId: string, from: number, next: number | null, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = CASE WHEN ?2 IS NULL AND rescan_due = 1 THEN 0 ELSE ?2 END,
         rescan_due = CASE WHEN ?2 IS NULL THEN 0 ELSE rescan_due END, updated_at = ?3
       WHERE id = ?4 AND status = 'running' AND scan_cursor = ?1`,
    )
    .bind(from, next, now, journeyId)
    .run();
}

/**
 * After a bulk upload: the panel's running segment journeys scan every contact again, from
 * the first; one scanning now finishes its pass, then starts over (rescan_due), so uploads
 * that come often cannot keep a large panel's scan from reaching its last contacts.
 */
export async function restartSegmentScans(db: D1Database, panelId: string, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE journeys SET scan_cursor = COALESCE(scan_cursor, 0), rescan_due = CASE WHEN scan_cursor IS NULL THEN 0 ELSE 1 END, updated_at = ?
       WHERE panel_id = ? AND status = 'running' AND trigger_type = 'segment'`,
    )
    .bind(now, panelId)
    .run();
}

export async function journeysToScan(db: D1Database, limit: number): Promise<Journey[]> {
  const { results } = await db
    .prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE status = 'running' AND scan_cursor IS NOT NULL ORDER BY updated_at LIMIT ?`)
    .bind(limit)
    .all<JourneyRow>();
  return results.map(journeyFromRow);
}

// ---------------------------------------------------------------------------------------
// Contacts as journeys read them.

export interface JourneyContact {
  id: number;
  key: string;
  attributes: Record<string, AttributeValue>;
}

export async function contactsByIds(db: D1Database, panelId: string, ids: readonly number[]): Promise<Map<number, JourneyContact>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify([...new Set(ids)]))
    .all<{ id: number; pk_value: string; attrs: string }>();
  return new Map(results.map((r) => [r.id, { id: r.id, key: r.pk_value, attributes: JSON.parse(r.attrs) as Record<string, AttributeValue> }]));
}

/** A page of the panel's contacts after `afterId`, by id. */
export async function contactsPage(db: D1Database, panelId: string, afterId: number, limit: number): Promise<JourneyContact[]> {
  const { results } = await db
    .prepare("SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND id > ? ORDER BY id LIMIT ?")
    .bind(panelId, afterId, limit)
    .all<{ id: number; pk_value: string; attrs: string }>();
  return results.map((r) => ({ id: r.id, key: r.pk_value, attributes: JSON.parse(r.attrs) as Record<string, AttributeValue> }));
}

// ---------------------------------------------------------------------------------------
// Instances and their points.

export interface Entry {
  instanceId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  entryKey: string;
  /** The triggering event, carried to the steps (webhooks describe it). */
  eventId: number | null;
}

/**
 * Enters contacts into journeys: each gets an active instance and its start point, unless it
 * is already in that journey, this very trigger entered it before, or the journey was stopped
 * since the trigger (checked in the same statement, so a stop cannot slip in between). Returns
 * the instance ids created.
 */
export async function enterInstances(db: D1Database, entries: readonly Entry[], now: number): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const statements: D1PreparedStatement[] = [];
  for (const e of entries) {
    statements.push(
      db
        .prepare(
          `INSERT OR IGNORE INTO journey_instances (id, panel_id, journey_id, contact_id, entry_key, status, entered_at)
           SELECT ?1, ?2, ?3, ?4, ?5, 'active', ?6
           WHERE EXISTS (SELECT 1 FROM journeys WHERE panel_id = ?2 AND id = ?3 AND status IN ('running', 'paused')) RETURNING id`,
        )
        .bind(e.instanceId, e.panelId, e.journeyId, e.contactId, e.entryKey, now),
      db
        .prepare(
          `INSERT OR IGNORE INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, event_id, outcome, created_at, resolved_at)
           SELECT id, '', panel_id, journey_id, contact_id, 'start', ?, 'start', ?2, ?2 FROM journey_instances WHERE id = ?`,
        )
        .bind(e.eventId, now, e.instanceId),
    );
  }
  const results = await db.batch<{ id: string }>(statements);
  const created = new Set<string>();
  for (let i = 0; i < results.length; i += 2) for (const row of results[i]!.results) created.add(row.id);
  return created;
}

export type PointKind = "start" | "wait" | "delay";
export type PointOutcome = "start" | "event" | "timeout" | "elapsed" | "cancelled";

export interface JourneyPoint {
  id: number;
  instanceId: string;
  stepId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  kind: PointKind;
  channel: string | null;
  msgid: string | null;
  events: string[] | null;
  activityKey: string | null;
  eventId: number | null;
  dueAt: number | null;
  outcome: PointOutcome | null;
  matchedEventId: number | null;
  createdAt: number;
}

interface PointRow {
  id: number;
  instance_id: string;
  step_id: string;
  panel_id: string;
  journey_id: string;
  contact_id: number;
  kind: PointKind;
  channel: string | null;
  msgid: string | null;
  events: string | null;
  activity_key: string | null;
  event_id: number | null;
  due_at: number | null;
  outcome: PointOutcome | null;
  matched_event_id: number | null;
  created_at: number;
}

const POINT_COLUMNS = "id, instance_id, step_id, panel_id, journey_id, contact_id, kind, channel, msgid, events, activity_key, event_id, due_at, outcome, matched_event_id, created_at";

function pointFromRow(row: PointRow): JourneyPoint {
  return {
    id: row.id,
    instanceId: row.instance_id,
    stepId: row.step_id,
    panelId: row.panel_id,
    journeyId: row.journey_id,
    contactId: row.contact_id,
    kind: row.kind,
    channel: row.channel,
    msgid: row.msgid,
    events: row.events === null ? null : (JSON.parse(row.events) as string[]),
    activityKey: row.activity_key,
    eventId: row.event_id,
    dueAt: row.due_at,
    outcome: row.outcome,
    matchedEventId: row.matched_event_id,
    createdAt: row.created_at,
  };
}

export interface NewPoint {
  instanceId: string;
  stepId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  kind: "wait" | "delay";
  channel?: string;
  msgid?: string;
  events?: string[];
  activityKey?: string;
  eventId: number | null;
  dueAt: number;
}

/** A wait or delay; a second insert for the same (instance, step) is ignored. */
export function insertPointStatement(db: D1Database, p: NewPoint, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, channel, msgid, events, activity_key, event_id, due_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      p.instanceId,
      p.stepId,
      p.panelId,
      p.journeyId,
      p.contactId,
      p.kind,
      p.channel ?? null,
      p.msgid ?? null,
      p.events ? JSON.stringify(p.events) : null,
      p.activityKey ?? null,
      p.eventId,
      p.dueAt,
      now,
    );
}

/** Pending waits of the panel that one of these messages or contacts' activities could end. */
export async function pendingWaitsFor(db: D1Database, panelId: string, msgids: readonly string[], contactIds: readonly number[]): Promise<JourneyPoint[]> {
  if (msgids.length === 0 && contactIds.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT ${POINT_COLUMNS} FROM journey_points WHERE panel_id = ?1 AND outcome IS NULL AND msgid IN (SELECT value FROM json_each(?2))
       UNION ALL
       SELECT ${POINT_COLUMNS} FROM journey_points WHERE panel_id = ?1 AND outcome IS NULL AND activity_key IS NOT NULL
         AND contact_id IN (SELECT value FROM json_each(?3))`,
    )
    .bind(panelId, JSON.stringify(msgids), JSON.stringify(contactIds))
    .all<PointRow>();
  return results.map(pointFromRow);
}

/** Ends pending waits with the event that came; returns the points this call ended (the others were taken). */
export async function resolveWaitsWithEvents(db: D1Database, matches: ReadonlyArray<{ pointId: number; eventId: number }>, now: number): Promise<JourneyPoint[]> {
  if (matches.length === 0) return [];
  const results = await db.batch<PointRow>(
    matches.map((m) =>
      db
        .prepare(`UPDATE journey_points SET outcome = 'event', matched_event_id = ?, resolved_at = ? WHERE id = ? AND outcome IS NULL RETURNING ${POINT_COLUMNS}`)
        .bind(m.eventId, now, m.pointId),
    ),
  );
  return results.flatMap((r) => r.results.map(pointFromRow));
}

/**
 * Fires due waits (timeout) and delays (elapsed) of running journeys; each point is ended
 * once, by whichever run's UPDATE gets it. Returns the points this call ended.
 */
export async function fireDuePoints(db: D1Database, now: number, limit: number): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `UPDATE journey_points SET outcome = CASE kind WHEN 'delay' THEN 'elapsed' ELSE 'timeout' END, resolved_at = ?1
       WHERE id IN (
         SELECT p.id FROM journey_points p JOIN journeys j ON j.id = p.journey_id
         WHERE p.outcome IS NULL AND p.due_at IS NOT NULL AND p.due_at <= ?1 AND j.status = 'running'
         ORDER BY p.due_at LIMIT ?2)
       AND outcome IS NULL
       RETURNING ${POINT_COLUMNS}`,
    )
    .bind(now, limit)
    .all<PointRow>();
  return results.map(pointFromRow);
}

/** Ended points not yet continued since before `before`, in running journeys (held by a pause, or a crash). */
export async function pointsLeftBehind(db: D1Database, before: number, limit: number, journeyId?: string): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `SELECT ${POINT_COLUMNS.split(", ").map((c) => `p.${c}`).join(", ")} FROM journey_points p JOIN journeys j ON j.id = p.journey_id
       WHERE p.outcome IS NOT NULL AND p.continued_at IS NULL AND p.resolved_at <= ? AND j.status = 'running' AND (? IS NULL OR p.journey_id = ?)
       ORDER BY p.resolved_at LIMIT ?`,
    )
    .bind(before, journeyId ?? null, journeyId ?? null, limit)
    .all<PointRow>();
  return results.map(pointFromRow);
}

/**
 * Marks a point continued and completes its instance when nothing of it is pending or left to
 * continue any more.
 */
export function finishPointStatements(db: D1Database, point: JourneyPoint, now: number): D1PreparedStatement[] {
  return [
    db
      .prepare("UPDATE journey_points SET continued_at = ? WHERE panel_id = ? AND instance_id = ? AND step_id = ? AND continued_at IS NULL")
      .bind(now, point.panelId, point.instanceId, point.stepId),
    db
      .prepare(
        `UPDATE journey_instances SET status = 'completed', ended_at = ?1
         WHERE panel_id = ?3 AND id = ?2 AND status = 'active' AND NOT EXISTS (SELECT 1 FROM journey_points WHERE instance_id = ?2 AND continued_at IS NULL)`,
      )
      .bind(now, point.instanceId, point.panelId),
  ];
}

export function stepRunStatement(db: D1Database, instanceId: string, stepId: string, journeyId: string, result: string, now: number): D1PreparedStatement {
  return db
    .prepare("INSERT OR IGNORE INTO journey_step_runs (instance_id, step_id, journey_id, result, at) VALUES (?, ?, ?, ?, ?)")
    .bind(instanceId, stepId, journeyId, result, now);
}

// ---------------------------------------------------------------------------------------
// Messages.

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

export async function isAddressSuppressed(db: D1Database, panelId: string, address: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS x FROM email_suppressions WHERE panel_id = ? AND address = ?").bind(panelId, address).first()) !== null;
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
