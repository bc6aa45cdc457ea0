import type { ShardDb } from "../shards";
import { instanceStays } from "./instances";
import type { BucketRanges } from "../../domain/partitions";
import { inBucketRanges } from "../sql";
import { JOURNEY_LEFT_SKIP, JOURNEY_STOPPED_SKIP } from "../../domain/send-skips";
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

/** A message takes its instance's bucket (decision 0038): ?4 is the instance. */
const INSTANCE_BUCKET = "COALESCE((SELECT bucket FROM journey_instances WHERE id = ?4), 0)";
/**
 * A contact's message is recorded only while the contact is there: an erasure deletes the
 * contact and its messages in one batch, so a step that read its address before records nothing
 * after it (and so sends nothing).
 */
const CONTACT_HERE = "(?7 IS NULL OR EXISTS (SELECT 1 FROM contacts WHERE id = ?7 AND panel_id = ?2))";
/**
 * A step's message is recorded only while its instance has not left early (exited: its goal,
 * or a stop): either may land after the step read the instance and before its writes, and the
 * message would then be recorded (the outbox's SMS or push, as sent) for a contact who left,
 * or a journey email claimed and sent.
 */
const INSTANCE_STAYS = instanceStays("?4");

export function insertMessageStatement(db: ShardDb, m: JourneyMessage): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, error, created_at, bucket)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ${INSTANCE_BUCKET} WHERE ${CONTACT_HERE} AND ${INSTANCE_STAYS} RETURNING msgid`,
    )
    .bind(m.msgid, m.panelId, m.journeyId, m.instanceId, m.stepId, m.channel, m.contactId, m.recipient, JSON.stringify(m.content), m.status ?? "recorded", m.error ?? null, m.createdAt);
}

/** The error of a journey email whose send attempt died after the provider may have been called. */
export const UNKNOWN_SEND_OUTCOME = "outcome unknown: the send attempt was interrupted after the provider was called; not resent, to send at most once";

/**
 * Claims a journey email for sending under `claim`: the first claim records the message; a
 * claim not renewed since `staleBefore` (its holder died) is taken over where provably nothing
 * reached the provider (no attempt recorded, or an idempotent provider) and otherwise settled
 * as failed with an unknown outcome. "done": it was sent, skipped or failed before, or it is
 * not recorded at all, its contact or its instance having left (as insertMessageStatement's: a
 * goal or stop after the step's re-check of its instance, email-groups.ts); "held": another
 * attempt is sending it now.
 */
export async function claimMessage(
  db: ShardDb,
  m: JourneyMessage,
  claim: string,
  now: number,
  staleBefore: number,
  idempotent: boolean,
): Promise<"claimed" | "done" | "held"> {
  // A row of an older claim without a time cannot tell whether the provider was called.
  const stale = "status = 'sending' AND COALESCE(claimed_at, 0) < ?2";
  const [inserted, , takenOver, current] = await db.batch<{ msgid?: string; status?: string }>([
    db
      .prepare(
        `INSERT OR IGNORE INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, created_at, claim, claimed_at, bucket)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'sending', ?10, ?11, ?12, ${INSTANCE_BUCKET} WHERE ${CONTACT_HERE} AND ${INSTANCE_STAYS} RETURNING msgid`,
      )
      .bind(m.msgid, m.panelId, m.journeyId, m.instanceId, m.stepId, m.channel, m.contactId, m.recipient, JSON.stringify(m.content), m.createdAt, claim, now),
    db
      .prepare(`UPDATE journey_messages SET status = 'failed', error = ?4 WHERE msgid = ?1 AND ${stale} AND NOT ?3 AND (attempted_at IS NOT NULL OR claimed_at IS NULL)`)
      .bind(m.msgid, staleBefore, idempotent ? 1 : 0, UNKNOWN_SEND_OUTCOME),
    db
      .prepare(
        `UPDATE journey_messages SET claim = ?4, claimed_at = ?5, attempted_at = NULL
         WHERE msgid = ?1 AND ${stale} AND (?3 OR (attempted_at IS NULL AND claimed_at IS NOT NULL)) RETURNING msgid`,
      )
      .bind(m.msgid, staleBefore, idempotent ? 1 : 0, claim, now),
    db.prepare("SELECT status, claim FROM journey_messages WHERE msgid = ?").bind(m.msgid),
  ]);
  if (inserted!.results.length > 0 || takenOver!.results.length > 0) return "claimed";
  return current!.results[0]?.status === "sending" ? "held" : "done";
}

/**
 * Records that the claimed message is about to be handed to the provider (and renews the
 * claim); false when the claim is no longer this attempt's, which must then not send.
 */
export async function markMessageAttempt(db: ShardDb, msgid: string, claim: string, now: number): Promise<boolean> {
  const result = await db
    .prepare("UPDATE journey_messages SET attempted_at = ?, claimed_at = ? WHERE msgid = ? AND claim = ? AND status = 'sending'")
    .bind(now, now, msgid, claim)
    .run();
  return result.meta.changes > 0;
}

/** Hands a claim back (the provider may take the message later): the step's retry claims it again. */
export async function releaseMessage(db: ShardDb, msgid: string, claim: string): Promise<void> {
  await db.prepare("DELETE FROM journey_messages WHERE msgid = ? AND claim = ? AND status = 'sending'").bind(msgid, claim).run();
}

/** Records the outcome of this claim's attempt (also over an unknown outcome settled meanwhile). */
export async function finishMessage(
  db: ShardDb,
  msgid: string,
  claim: string,
  outcome: { status: "sent"; providerMessageId: string } | { status: "skipped" | "failed"; error: string },
): Promise<void> {
  await db
    .prepare("UPDATE journey_messages SET status = ?, error = ?, provider_msg_id = ? WHERE msgid = ? AND claim = ?")
    .bind(outcome.status, outcome.status === "sent" ? null : outcome.error, outcome.status === "sent" ? outcome.providerMessageId : null, msgid, claim)
    .run();
}

/** The journey email a provider reported on, found by the provider's message id (the report does not name the panel). */
export async function journeyEmailByProviderId(db: ShardDb, providerMessageId: string): Promise<JourneyMessage | null> {
  const row = await db.prepare("SELECT * FROM journey_messages WHERE provider_msg_id = ? AND channel = 'email'").bind(providerMessageId).first<MessageRow>();
  return row ? messageFromRow(row) : null;
}

export async function getMessages(db: ShardDb, panelId: string, msgids: readonly string[]): Promise<Map<string, JourneyMessage>> {
  if (msgids.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT * FROM journey_messages WHERE panel_id = ? AND msgid IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify([...new Set(msgids)]))
    .all<MessageRow>();
  return new Map(results.map((r) => [r.msgid, messageFromRow(r)]));
}

/**
 * The shard's newest messages of the panel (on `channel` when given), with `buckets` (the shard's
 * in the panel's map) only those of contacts in them: a split's source holds copies of the moved
 * contacts' messages until cleaning (decision 0047).
 */
export async function listMessages(db: ShardDb, panelId: string, channel: string | undefined, limit: number, buckets: BucketRanges | null = null): Promise<JourneyMessage[]> {
  const { results } = await db
    .prepare(`SELECT * FROM journey_messages WHERE panel_id = ?1 AND (?2 IS NULL OR channel = ?2) AND (?4 IS NULL OR ${inBucketRanges("bucket", "?4")}) ORDER BY created_at DESC, msgid LIMIT ?3`)
    .bind(panelId, channel ?? null, limit, buckets && JSON.stringify(buckets))
    .all<MessageRow>();
  return results.map(messageFromRow);
}

/**
 * Queued messages (SMS and push with a provider): recorded as `sending` without a claim, then
 * claimed by the SENDS consumer for one attempt each. A claimed message, as the send needs it.
 */
export interface ClaimedMessage {
  msgid: string;
  channel: JourneyMessage["channel"];
  contactId: number;
  journeyId: string;
  recipient: string | null;
  content: Record<string, unknown>;
}

/** The message's journey is in `status` (its copy on a partition's shard says so there too). */
const journeyIs = (status: "stopped" | "paused") => `EXISTS (SELECT 1 FROM journeys j WHERE j.id = journey_messages.journey_id AND j.status = '${status}')`;
const STOPPED = journeyIs("stopped");
const PAUSED = journeyIs("paused");
/**
 * The message's instance left the journey early (`exited`: its goal, or the stop above), read by
 * primary key. Not `completed`: the last step's message is written in the batch that completes it.
 */
const LEFT = "EXISTS (SELECT 1 FROM journey_instances i WHERE i.id = journey_messages.instance_id AND i.status = 'exited')";
/** Why the claim skips a waiting message instead (null: it is sent); the stop's reason first, as a stop exits every instance. */
const CLAIM_SKIP = `CASE WHEN ${STOPPED} THEN ?6 WHEN ${LEFT} THEN ?7 END`;

/**
 * The statements that claim queued messages of `channels` in one panel for one attempt, to run
 * in one batch (a channel may add its own reads after them): a claim its holder left since
 * `staleBefore` is settled as failed with `unknownError` first (the provider may have taken the
 * message, and no provider here takes an idempotency key), then the waiting ones are claimed
 * (the attempt recorded with the claim), then those another attempt holds are read. A waiting
 * message of a journey stopped since its step (or since a throttled attempt handed it back) is
 * settled skipped by the claim instead: a stop sends nothing more; so is one whose contact left
 * the journey since (its goal): a goal ends the contact's messages. One of a paused journey is
 * left waiting, unclaimed: a pause holds sending, and the resume nudges it again.
 * `claimedOf` reads the batch's answers.
 */
export function claimQueuedStatements(
  db: ShardDb,
  panelId: string,
  channels: readonly JourneyMessage["channel"][],
  msgids: readonly string[],
  claim: string,
  now: number,
  staleBefore: number,
  unknownError: string,
): D1PreparedStatement[] {
  // `+panel_id`: by the nudge's msgids (primary key), not the panel's index of every message it sent on the channel.
  const mine = "msgid IN (SELECT value FROM json_each(?1)) AND +panel_id = ?2 AND channel IN (SELECT value FROM json_each(?5))";
  const ids = JSON.stringify(msgids);
  const kinds = JSON.stringify(channels);
  return [
    db
      .prepare(`UPDATE journey_messages SET status = 'failed', error = ?4 WHERE ${mine} AND status = 'sending' AND claim IS NOT NULL AND claimed_at < ?3`)
      .bind(ids, panelId, staleBefore, unknownError, kinds),
    db
      .prepare(
        `UPDATE journey_messages SET claim = ?3, claimed_at = ?4, attempted_at = ?4,
           status = CASE WHEN ${CLAIM_SKIP} IS NULL THEN status ELSE 'skipped' END, error = COALESCE(${CLAIM_SKIP}, error)
         WHERE ${mine} AND status = 'sending' AND claim IS NULL AND NOT ${PAUSED}
         RETURNING msgid, channel, contact_id, journey_id, recipient, content, status`,
      )
      .bind(ids, panelId, claim, now, kinds, JOURNEY_STOPPED_SKIP, JOURNEY_LEFT_SKIP),
    db.prepare(`SELECT msgid FROM journey_messages WHERE ${mine} AND status = 'sending' AND claim IS NOT NULL AND claim <> ?3`).bind(ids, panelId, claim, null, kinds),
  ];
}

/** The claimed messages and those another attempt holds, from the answers of claimQueuedStatements' batch. */
export function claimedOf(answers: ReadonlyArray<D1Result<Record<string, any>>>): { claimed: ClaimedMessage[]; held: Set<string> } {
  const [, claimed, held] = answers;
  return {
    claimed: claimed!.results.filter((r) => r.status === "sending").map((r) => ({
      msgid: r.msgid,
      channel: r.channel,
      contactId: r.contact_id,
      journeyId: r.journey_id,
      recipient: r.recipient,
      content: JSON.parse(r.content) as Record<string, unknown>,
    })),
    held: new Set(held!.results.map((r) => r.msgid as string)),
  };
}

export type QueuedOutcome = { msgid: string } & ({ status: "sent"; providerMessageId: string } | { status: "skipped" | "failed"; error: string });

/** Records the outcomes of this claim's attempts, all in one statement. */
export function settleClaimedStatement(db: ShardDb, claim: string, outcomes: readonly QueuedOutcome[]): D1PreparedStatement {
  const rows = outcomes.map((o) => (o.status === "sent" ? { m: o.msgid, s: o.status, p: o.providerMessageId, e: null } : { m: o.msgid, s: o.status, p: null, e: o.error }));
  return db
    .prepare(
      `UPDATE journey_messages SET status = json_extract(o.value, '$.s'), error = json_extract(o.value, '$.e'), provider_msg_id = json_extract(o.value, '$.p')
       FROM json_each(?1) AS o WHERE journey_messages.msgid = json_extract(o.value, '$.m') AND journey_messages.claim = ?2`,
    )
    .bind(JSON.stringify(rows), claim);
}

/** Hands a claimed message back to the queue state; `retryAt` is when its retry is due (the cron's re-drive waits past it). */
export function releaseClaimedStatement(db: ShardDb, msgid: string, claim: string, retryAt: number): D1PreparedStatement {
  return db.prepare("UPDATE journey_messages SET claim = NULL, claimed_at = ?, attempted_at = NULL WHERE msgid = ? AND claim = ? AND status = 'sending'").bind(retryAt, msgid, claim);
}

/**
 * SQL: an SMS or push of the instance `instance` (a journey_instances row or alias) waits for its
 * provider (a journey email is claimed as it is recorded), found among its contact's messages
 * (journey_messages_by_contact).
 */
export function instanceHasWaitingMessage(instance: string): string {
  return `EXISTS (SELECT 1 FROM journey_messages m WHERE m.panel_id = ${instance}.panel_id AND m.contact_id = ${instance}.contact_id AND m.instance_id = ${instance}.id
    AND m.channel <> 'email' AND m.status = 'sending' AND m.claim IS NULL)`;
}

/**
 * Settles as skipped, for `reason`, the SMS and push of these instances (each with its contact)
 * still waiting for their provider; one claimed meanwhile is with the provider and is left to it.
 */
export async function skipWaitingOfInstances(db: ShardDb, panelId: string, instances: ReadonlyArray<{ id: string; contactId: number }>, reason: string): Promise<number> {
  if (instances.length === 0) return 0;
  const result = await db
    .prepare(
      `UPDATE journey_messages SET status = 'skipped', error = ?4
       WHERE panel_id = ?1 AND contact_id IN (SELECT value FROM json_each(?2)) AND instance_id IN (SELECT value FROM json_each(?3))
         AND channel <> 'email' AND status = 'sending' AND claim IS NULL`,
    )
    .bind(panelId, JSON.stringify([...new Set(instances.map((i) => i.contactId))]), JSON.stringify(instances.map((i) => i.id)), reason)
    .run();
  return result.meta.changes;
}

/** The waiting messages of one kind: `channel` spelled out so each channel's partial index serves the statement. */
const waitingOf = (channels: "sms" | "push") => `${channels === "sms" ? "channel = 'sms'" : "channel IN ('apn', 'bpn')"} AND status = 'sending' AND claim IS NULL`;

/**
 * Queued messages whose nudge is overdue: queued before `before` and not released to a later
 * retry. Not those a pause holds: they would fill the page every run, and their resume nudges them.
 */
export async function overdueQueued(db: ShardDb, channels: "sms" | "push", before: number, limit: number): Promise<Array<{ panelId: string; msgid: string }>> {
  const { results } = await db
    .prepare(`SELECT panel_id, msgid FROM journey_messages WHERE ${waitingOf(channels)} AND COALESCE(claimed_at, created_at) < ? AND NOT ${PAUSED} LIMIT ?`)
    .bind(before, limit)
    .all<{ panel_id: string; msgid: string }>();
  return results.map((r) => ({ panelId: r.panel_id, msgid: r.msgid }));
}

/**
 * Up to `limit` waiting messages of each kind of a journey on this shard (one round trip), for
 * its resume to nudge. `+panel_id`: the panel's index (every message it ever sent on the
 * channel) must not be chosen over the channel's partial index of the few waiting ones.
 */
export async function waitingOfJourney(db: ShardDb, panelId: string, journeyId: string, limit: number): Promise<{ sms: string[]; push: string[] }> {
  const select = (channels: "sms" | "push") =>
    db.prepare(`SELECT msgid FROM journey_messages WHERE ${waitingOf(channels)} AND journey_id = ? AND +panel_id = ? LIMIT ?`).bind(journeyId, panelId, limit);
  const [sms, push] = await db.batch<{ msgid: string }>([select("sms"), select("push")]);
  return { sms: sms!.results.map((r) => r.msgid), push: push!.results.map((r) => r.msgid) };
}

/**
 * Settles as skipped, for `reason`, up to `limit` waiting messages of each kind of a stopped
 * journey on this shard (one round trip), through the channels' partial indexes as
 * waitingOfJourney. A message claimed meanwhile is not waiting: its claim reads the stop.
 * Returns how many of each kind it settled.
 */
export async function skipWaitingOfJourney(db: ShardDb, panelId: string, journeyId: string, reason: string, limit: number): Promise<{ sms: number; push: number }> {
  const skip = (channels: "sms" | "push") =>
    db
      .prepare(
        `UPDATE journey_messages SET status = 'skipped', error = ?1
         WHERE msgid IN (SELECT msgid FROM journey_messages WHERE ${waitingOf(channels)} AND journey_id = ?2 AND +panel_id = ?3 LIMIT ?4) AND ${waitingOf(channels)}`,
      )
      .bind(reason, journeyId, panelId, limit);
  const [sms, push] = await db.batch([skip("sms"), skip("push")]);
  return { sms: sms!.meta.changes, push: push!.meta.changes };
}
