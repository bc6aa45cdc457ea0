/**
 * What the answer to a batch means (CONTRACT 6): 2xx delivered; 500 and 410 disable the
 * webhook at once; anything else (other statuses, redirects, timeouts, connection errors) is
 * retried on a fixed schedule with jitter, never sooner than a `Retry-After` asks, and
 * disables the webhook once the schedule is spent. Pure: time and randomness come in.
 */

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Waits before the 1st, 2nd, ... retry of a batch; 10 attempts in all, about 76 hours. */
export const RETRY_SCHEDULE_MS: readonly number[] = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];

/** Each wait is spread by ±20% so webhooks that failed together do not retry together. */
export const JITTER = 0.2;

/** A Retry-After longer than this is read as this (a day): the schedule's own longest wait. */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;

/** How one attempt ended: an HTTP status, or an error code when no status came back. */
export interface AttemptAnswer {
  status: number | null;
  /** timeout, connect, blocked (when status is null). */
  error: string | null;
  retryAfter: string | null;
}

export type Outcome =
  | { kind: "delivered" }
  | { kind: "retry"; at: number; reason: string }
  | { kind: "disable"; reason: string };

/** `Retry-After` as a wait in ms from `now` (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * SECOND, MAX_RETRY_AFTER_MS);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}

export function describeAnswer(answer: Pick<AttemptAnswer, "status" | "error">): string {
  if (answer.status !== null) return `HTTP ${answer.status}`;
  return `error: ${answer.error ?? "unknown"}`;
}

/**
 * The outcome of an attempt at a batch that had already failed `failuresBefore` times
 * (0 for the first attempt).
 */
export function decideOutcome(answer: AttemptAnswer, failuresBefore: number, now: number, random: () => number = Math.random): Outcome {
  const { status } = answer;
  if (status !== null && status >= 200 && status < 300) return { kind: "delivered" };
  if (status === 500) return { kind: "disable", reason: "the endpoint answered HTTP 500" };
  if (status === 410) return { kind: "disable", reason: "the endpoint answered HTTP 410 Gone" };
  const scheduled = RETRY_SCHEDULE_MS[failuresBefore];
  if (scheduled === undefined) {
    return { kind: "disable", reason: `retries spent: ${failuresBefore + 1} attempts failed, the last with ${describeAnswer(answer)}` };
  }
  const jittered = scheduled * (1 - JITTER + 2 * JITTER * random());
  const asked = parseRetryAfter(answer.retryAfter, now) ?? 0;
  return { kind: "retry", at: now + Math.round(Math.max(jittered, asked)), reason: describeAnswer(answer) };
}
