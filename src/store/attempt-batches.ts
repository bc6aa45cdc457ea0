import { attemptsWithin, countAttemptsStatement, type CountedAttempt } from "./operator-sessions";
import type { ControlDb } from "./shards";

/**
 * countAttempts for callers that come in crowds (signup form submissions whose input cannot
 * subscribe anyone, counted by their IP; valid ones are counted on the contact's shard, decision
 * 0049): while one batch of counts is on its way to the control database, the counts that
 * arrive meanwhile wait and go together as the next batch, one round trip for all of them. Each
 * keeps its own statement, and D1 runs a batch's statements in turn in one transaction, so every
 * caller's answer is the one countAttempts would have given it had the calls run one after
 * another in that order. Alone, a count goes at once, as countAttempts would. A round trip was
 * the largest part of a form submission's CPU beyond a contact add's (a `SELECT 1` costs about
 * as much as the count itself in local D1; bench:forms, docs/benchmarks.md).
 *
 * A batch is sent by a request whose own count is still waiting (in that batch, or, past the
 * bound, in one it sends next) and kept alive by that request's waitUntil, so a visitor who
 * leaves cannot strand the others' counts; no request sends on another's behalf once its own
 * count is answered.
 */

/**
 * A batch is bounded: its statements count against the sending request's D1 queries per
 * invocation (50 on the Workers Free plan), beside that request's own.
 */
const MOST_PER_BATCH = 20;

interface Waiting {
  statement: D1PreparedStatement;
  attempts: readonly { subject: string; limit: number }[];
  answer?: { within: boolean[] } | { failure: unknown };
}

const waiting: Waiting[] = [];
/** The batch on its way, if one is: those who arrive meanwhile wait for it to land. */
let inFlight: Promise<void> | null = null;

/** countAttempts, batched with the counts of concurrent requests of this isolate. */
export async function countAttemptsBatched(
  db: ControlDb,
  attempts: readonly { subject: string; limit: number }[],
  now: number,
  windowStart: number,
  waitUntil: (work: Promise<unknown>) => void,
): Promise<boolean[]> {
  if (attempts.length === 0) return [];
  const mine: Waiting = { statement: countAttemptsStatement(db, attempts, now, windowStart), attempts };
  waiting.push(mine);
  while (!mine.answer) {
    if (inFlight) {
      await inFlight;
      continue;
    }
    // No batch on its way and this count not sent yet: this request sends the counts waiting, in
    // arrival order up to the bound (its own among them, or in a batch it sends next).
    const batch = waiting.splice(0, MOST_PER_BATCH);
    // Cleared as the batch lands, before those waiting for it see it land (none waits on a landed batch).
    const sent: Promise<void> = send(db, batch).finally(() => {
      if (inFlight === sent) inFlight = null;
    });
    inFlight = sent;
    waitUntil(sent);
    await sent;
  }
  if ("failure" in mine.answer) throw mine.answer.failure;
  return mine.answer.within;
}

/** Sends one batch; settles each caller's answer (all fail together, as the batch's transaction does). */
async function send(db: ControlDb, batch: Waiting[]): Promise<void> {
  try {
    const results = await db.batch<CountedAttempt>(batch.map((w) => w.statement));
    batch.forEach((w, i) => (w.answer = { within: attemptsWithin(w.attempts, results[i]?.results ?? []) }));
  } catch (failure) {
    for (const w of batch) w.answer = { failure };
  }
}
