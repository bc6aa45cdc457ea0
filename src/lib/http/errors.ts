import type { FieldProblem, Problem, ProblemKind, Result } from "../problems";
import { EXPECTED, type z } from "../z";
import { isPanelMovingError, panelMovingMet } from "../moving";

export type FieldError = FieldProblem;

/**
 * A failure the caller caused or may see. Handlers throw it; the envelope and the admin
 * router render it in their own body shapes. Anything else thrown is a fault of the service (500).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
  }
}

export const badRequest = (message: string, errors: FieldError[] = []) => new ApiError(400, message, errors);
export const notFound = (message: string, errors: FieldError[] = []) => new ApiError(404, message, errors);
export const conflict = (message: string, errors: FieldError[] = []) => new ApiError(409, message, errors);

/**
 * What `lookup` found, or a 404 with `message`. Lookups of a panel's objects are scoped by the
 * panel, so another panel's object answers exactly as one that does not exist.
 */
export async function orNotFound<T>(lookup: Promise<T | null> | null, message: string, errors: FieldError[] = []): Promise<T> {
  const found = await lookup;
  if (found === null) throw notFound(message, errors);
  return found;
}

/** Validation failure for one named field. */
export function invalidField(field: string, message: string, status = 400): ApiError {
  return new ApiError(status, `${field}: ${message}`, [{ field, message }]);
}

function issuePath(path: readonly PropertyKey[], prefix?: string): string {
  const parts = prefix ? [prefix, ...path.map(String)] : path.map(String);
  return parts.length ? parts.join(".") : (prefix ?? "body");
}

type Issue = z.core.$ZodIssue;

/** The expected types when an alternative failed only because the input had another type (nested unions included); else null. */
function typesExpected(issues: Issue[]): string[] | null {
  // The root's type decides: zod may report checks of the other type beside it (a string's
  // maximum length measured on an array).
  const root = issues.filter((issue) => issue.path.length === 0);
  const wrongType = root.find((issue) => issue.code === "invalid_type");
  if (wrongType?.code === "invalid_type") return [EXPECTED[wrongType.expected] ?? wrongType.expected];
  const union = root.length === 1 && root[0]!.code === "invalid_union" ? root[0]! : null;
  if (union?.code === "invalid_union") {
    const inner = union.errors.map(typesExpected);
    if (inner.every((types) => types !== null)) return inner.flat() as string[];
  }
  return null;
}

/**
 * A union's failure in terms a caller can act on: when the input had the type of exactly one
 * alternative, that alternative's problems (an array of 5,000 values: "must hold at most 100
 * items"); when it had none of them, the types that are accepted.
 */
function unionErrors(issue: Extract<Issue, { code: "invalid_union" }>, path: PropertyKey[], prefix?: string): FieldError[] {
  const matched = issue.errors.filter((branch) => typesExpected(branch) === null);
  if (matched.length === 1) return matched[0]!.flatMap((inner) => issueErrors(inner, path, prefix));
  const expected = [...new Set(issue.errors.flatMap((branch) => typesExpected(branch) ?? []))];
  const generic = issue.message === "does not match any of the accepted forms";
  const message = generic && matched.length === 0 && expected.length ? `must be ${expected.slice(0, -1).join(", ")}${expected.length > 1 ? " or " : ""}${expected.at(-1)}` : issue.message;
  return [{ field: issuePath(path, prefix), message }];
}

function issueErrors(issue: Issue, base: PropertyKey[], prefix?: string): FieldError[] {
  const path = [...base, ...issue.path];
  if (issue.code === "unrecognized_keys") return issue.keys.map((key) => ({ field: issuePath([...path, key], prefix), message: "is not an accepted member" }));
  if (issue.code === "invalid_union" && issue.errors.length) return unionErrors(issue, path, prefix);
  return [{ field: issuePath(path, prefix), message: issue.message }];
}

/** Each problem of a zod failure as a field and a reason. */
export function fieldErrorsFromZod(error: z.ZodError, prefix?: string): FieldError[] {
  return error.issues.flatMap((issue) => issueErrors(issue, [], prefix));
}

/** A failure listing every offending field; its message names the first. */
export function fromProblems(problems: readonly FieldError[], status = 400): ApiError {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
  return new ApiError(status, `${first.field}: ${first.message}${more}`, [...problems]);
}

/** The one place a service's problem kind becomes an HTTP status (docs/architecture.md: errors). */
const STATUS_OF: Record<ProblemKind, number> = { invalid: 400, not_found: 404, conflict: 409, upstream: 502, unauthenticated: 401, rate_limited: 429, too_large: 413 };

/** The answer to a service's refusal; the envelope and the admin router render it in their body shapes. */
export function problemError(problem: Problem): ApiError {
  const status = STATUS_OF[problem.kind];
  return problem.message === undefined ? fromProblems(problem.fields, status) : new ApiError(status, problem.message, [...problem.fields]);
}

/** The value of a service's result, or its refusal thrown as the answer (caught by the edge). */
export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw problemError(result.problem);
}

export function fromZodError(error: z.ZodError, prefix?: string): ApiError {
  return fromProblems(fieldErrorsFromZod(error, prefix));
}

/** Parses with a zod schema, throwing an ApiError that names each offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, prefix?: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw fromZodError(result.error, prefix);
  return result.data;
}

/** What any handler answers for a thrown value: the ApiError itself, or a logged 500. */
export function asApiError(error: unknown, requestId: string): ApiError {
  return error instanceof ApiError ? error : serviceFault(error, requestId);
}

// The edge listens (lib/observability: the request's log line names the fault's class); set
// there, not imported here, because the panel's bundle imports this module too.
let faultListener: ((error: unknown) => void) | undefined;

export function onServiceFault(listener: (error: unknown) => void): void {
  faultListener = listener;
}

export function serviceFault(error: unknown, requestId: string): ApiError {
  if (isPanelMovingError(error)) {
    // The write changed nothing; the retry reads the directory afresh and finds the new shard.
    panelMovingMet();
    return new ApiError(503, "The panel is switching databases; nothing was changed. Retry in a few seconds");
  }
  faultListener?.(error);
  console.error(`request ${requestId} failed`, error);
  return new ApiError(500, `The service failed to process the request; quote request id ${requestId} when reporting it`);
}
