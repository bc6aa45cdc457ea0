/** What is wrong with one named field of an input; rendered by the HTTP layer as `errors[]`. */
export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * Why a service refused a request, in the service's words: `kind` says what the caller can do
 * about it (the edge alone turns a kind into a status: src/lib/http/errors.ts `problemError`).
 * - invalid: the input breaks a rule (fix the input)
 * - not_found: what the input names does not exist in the panel
 * - conflict: the input collides with what exists (a name taken, a device registered elsewhere)
 * - upstream: a provider the service called refused or failed (retry later, or fix the provider)
 * - unauthenticated: the credentials given prove no one (sign in again)
 * - rate_limited: too many attempts lately (wait, then retry)
 * - too_large: the input is bigger than the service takes (send less)
 */
export type ProblemKind = "invalid" | "not_found" | "conflict" | "upstream" | "unauthenticated" | "rate_limited" | "too_large";

export interface Problem {
  kind: ProblemKind;
  /** Each offending field and why; the first names the failure unless `message` is given. */
  fields: FieldProblem[];
  /** The failure's sentence, when no field says it (e.g. `No segment with id "7" in this panel`). */
  message?: string;
}

/**
 * What a service answers for an expected failure: a value, never a throw. Unexpected failures
 * (a bug, D1 or R2 down, a broken invariant) still throw and become the edge's logged 500.
 */
export type Result<T> = { ok: true; value: T } | { ok: false; problem: Problem };

export const succeeded = <T>(value: T): Result<T> => ({ ok: true, value });

export function refused<T = never>(kind: ProblemKind, fields: FieldProblem[], message?: string): Result<T> {
  return { ok: false, problem: message === undefined ? { kind, fields } : { kind, fields, message } };
}

/** A refusal for one named field. */
export const refusedField = <T = never>(kind: ProblemKind, field: string, message: string): Result<T> => refused(kind, [{ field, message }]);

