import type { FieldProblem } from "../problems";
import type { z } from "../z";

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

export function fieldErrorsFromZod(error: z.ZodError, prefix?: string): FieldError[] {
  return error.issues.map((issue) => ({ field: issuePath(issue.path, prefix), message: issue.message }));
}

/** A failure listing every offending field; its message names the first. */
export function fromProblems(problems: readonly FieldError[], status = 400): ApiError {
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
  return new ApiError(status, `${first.field}: ${first.message}${more}`, [...problems]);
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

export function serviceFault(error: unknown, requestId: string): ApiError {
  console.error(`request ${requestId} failed`, error);
  return new ApiError(500, `The service failed to process the request; quote request id ${requestId} when reporting it`);
}
