import type { ControlDb } from "./shards";
import type { Operator } from "./operators";

export interface StoredSession {
  operator: Operator;
  csrfToken: string;
  lastSeenAt: number;
}

export async function insertSession(db: ControlDb, tokenHash: string, operatorId: string, csrfToken: string, now: number): Promise<void> {
  await db
    .prepare("INSERT INTO operator_sessions (token_hash, operator_id, csrf_token, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)")
    .bind(tokenHash, operatorId, csrfToken, now, now)
    .run();
}

export async function findSession(db: ControlDb, tokenHash: string): Promise<StoredSession | null> {
  const row = await db
    .prepare(
      "SELECT s.csrf_token, s.last_seen_at, o.id, o.email, o.name, o.disabled, o.created_at FROM operator_sessions s JOIN operators o ON o.id = s.operator_id WHERE s.token_hash = ?",
    )
    .bind(tokenHash)
    .first<{ csrf_token: string; last_seen_at: number; id: string; email: string; name: string | null; disabled: number; created_at: number }>();
  if (!row) return null;
  return {
    operator: { id: row.id, email: row.email, name: row.name, disabled: row.disabled === 1, createdAt: row.created_at },
    csrfToken: row.csrf_token,
    lastSeenAt: row.last_seen_at,
  };
}

export async function touchSession(db: ControlDb, tokenHash: string, now: number): Promise<void> {
  await db.prepare("UPDATE operator_sessions SET last_seen_at = ? WHERE token_hash = ?").bind(now, tokenHash).run();
}

export async function deleteSession(db: ControlDb, tokenHash: string): Promise<void> {
  await db.prepare("DELETE FROM operator_sessions WHERE token_hash = ?").bind(tokenHash).run();
}

/** Ends every session of the operator (password changed or reset). */
export async function deleteSessionsOf(db: ControlDb, operatorId: string): Promise<void> {
  await db.prepare("DELETE FROM operator_sessions WHERE operator_id = ?").bind(operatorId).run();
}

/**
 * Sessions idle since before `idleSince`, reset links past their expiry, and failure counts of windows that started before
 * `windowStart`; the cron sweeps them so neither table grows with sessions nobody ends.
 */
export async function deleteIdleSessions(db: ControlDb, idleSince: number, windowStart: number, now: number): Promise<number> {
  const [sessions] = await db.batch([
    db.prepare("DELETE FROM operator_sessions WHERE last_seen_at < ?").bind(idleSince),
    db.prepare("DELETE FROM sign_in_failures WHERE window_start < ?").bind(windowStart),
    db.prepare("DELETE FROM password_resets WHERE expires_at < ?").bind(now),
    // Kept 30 days past their expiry so that their link can still say it expired.
    db.prepare("DELETE FROM operator_invitations WHERE expires_at < ?").bind(now - 30 * 24 * 60 * 60 * 1000),
    db.prepare("DELETE FROM sign_in_steps WHERE expires_at < ?").bind(now),
    db.prepare("DELETE FROM webauthn_challenges WHERE expires_at < ?").bind(now),
  ]);
  return sessions!.meta.changes;
}

/** Failures counted for a subject (address or account) in the window that started after `windowStart`. */
export async function recentFailures(db: ControlDb, subjects: string[], windowStart: number): Promise<number> {
  if (subjects.length === 0) return 0;
  const { results } = await db
    .prepare(`SELECT MAX(failures) AS most FROM sign_in_failures WHERE subject IN (${subjects.map(() => "?").join(", ")}) AND window_start >= ?`)
    .bind(...subjects, windowStart)
    .all<{ most: number | null }>();
  return results[0]?.most ?? 0;
}

/** Counts a failure for each subject; a window older than `windowStart` starts over. */
export async function recordFailure(db: ControlDb, subjects: string[], now: number, windowStart: number): Promise<void> {
  await db.batch(
    subjects.map((subject) =>
      db
        .prepare(
          `INSERT INTO sign_in_failures (subject, window_start, failures) VALUES (?, ?, 1)
           ON CONFLICT (subject) DO UPDATE SET
             failures = CASE WHEN window_start < ? THEN 1 ELSE failures + 1 END,
             window_start = CASE WHEN window_start < ? THEN excluded.window_start ELSE window_start END`,
        )
        .bind(subject, now, windowStart, windowStart),
    ),
  );
}

/**
 * Counts an attempt of each subject against its limit, check and record in one statement;
 * answers, per subject, whether it is within its limit. A subject is counted only while those
 * before it are within theirs (as checking them in turn, stopping at the first refused, would).
 * A refused attempt leaves the count above the limit (at most limit + 1), as a check that did not
 * record would have; a window older than `windowStart` starts over.
 */
export async function countAttempts(db: ControlDb, attempts: readonly { subject: string; limit: number }[], now: number, windowStart: number): Promise<boolean[]> {
  if (attempts.length === 0) return [];
  const { results } = await countAttemptsStatement(db, attempts, now, windowStart).all<CountedAttempt>();
  return attemptsWithin(attempts, results);
}

/** One row countAttemptsStatement returns: a subject it counted and its count now. */
export interface CountedAttempt {
  subject: string;
  failures: number;
}

/** countAttempts' statement, for a batch of several callers' counts (store/attempt-batches.ts); attemptsWithin reads its rows. */
export function countAttemptsStatement(db: ControlDb, attempts: readonly { subject: string; limit: number }[], now: number, windowStart: number): D1PreparedStatement {
  // SQLite reads the SELECT to its end before inserting (it reads the table it inserts into), so
  // "an earlier subject was at its limit before" is this attempt's refusal of it (limit + 1).
  return db
    .prepare(
      `INSERT INTO sign_in_failures (subject, window_start, failures)
       SELECT a.value ->> '$.subject', ?1, 1 FROM json_each(?2) a
       WHERE NOT EXISTS (
         SELECT 1 FROM json_each(?2) e JOIN sign_in_failures f ON f.subject = e.value ->> '$.subject'
         WHERE e.key < a.key AND f.window_start >= ?3 AND f.failures >= e.value ->> '$.limit')
       ON CONFLICT (subject) DO UPDATE SET
         failures = CASE WHEN window_start < ?3 THEN 1
           ELSE MIN(failures + 1, (SELECT l.value ->> '$.limit' FROM json_each(?2) l WHERE l.value ->> '$.subject' = excluded.subject) + 1) END,
         window_start = CASE WHEN window_start < ?3 THEN excluded.window_start ELSE window_start END
       RETURNING subject, failures`,
    )
    .bind(now, JSON.stringify(attempts.map(({ subject, limit }) => ({ subject, limit }))), windowStart);
}

/** Which of `attempts` countAttemptsStatement's rows put within their limits (none after the first refused). */
export function attemptsWithin(attempts: readonly { subject: string; limit: number }[], rows: readonly CountedAttempt[]): boolean[] {
  const counted = new Map(rows.map((r) => [r.subject, r.failures]));
  let refusedBefore = false;
  return attempts.map(({ subject, limit }) => {
    const failures = counted.get(subject);
    const within = !refusedBefore && failures !== undefined && failures <= limit;
    if (!within) refusedBefore = true;
    return within;
  });
}

/**
 * Marks a one-time subject (a sign-in challenge) used; false when it already was. The marker lives
 * in sign_in_failures so the cron sweep drops it once the window passes, after the challenge expired.
 */
export async function spendOnce(db: ControlDb, subject: string, now: number): Promise<boolean> {
  const row = await db
    .prepare("INSERT INTO sign_in_failures (subject, window_start, failures) VALUES (?, ?, 0) ON CONFLICT (subject) DO NOTHING RETURNING subject")
    .bind(subject, now)
    .first<{ subject: string }>();
  return row !== null;
}

export async function clearFailures(db: ControlDb, subject: string): Promise<void> {
  await db.prepare("DELETE FROM sign_in_failures WHERE subject = ?").bind(subject).run();
}

export async function insertPasswordReset(db: ControlDb, tokenHash: string, operatorId: string, expiresAt: number): Promise<void> {
  await db.prepare("INSERT INTO password_resets (token_hash, operator_id, expires_at) VALUES (?, ?, ?)").bind(tokenHash, operatorId, expiresAt).run();
}

/** Marks the reset link used if it is unused and unexpired; answers its operator, or null. */
export async function consumePasswordReset(db: ControlDb, tokenHash: string, now: number): Promise<string | null> {
  const row = await db
    .prepare("UPDATE password_resets SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING operator_id")
    .bind(now, tokenHash, now)
    .first<{ operator_id: string }>();
  return row?.operator_id ?? null;
}

/** Sets the operator's new password, ends every session of theirs and spends their other reset links, at once. */
export async function completePasswordReset(db: ControlDb, operatorId: string, passwordHash: string, now: number): Promise<void> {
  await db.batch([
    db.prepare("UPDATE operators SET password_hash = ?, updated_at = ? WHERE id = ?").bind(passwordHash, now, operatorId),
    db.prepare("DELETE FROM operator_sessions WHERE operator_id = ?").bind(operatorId),
    db.prepare("UPDATE password_resets SET used_at = ? WHERE operator_id = ? AND used_at IS NULL").bind(now, operatorId),
  ]);
}
