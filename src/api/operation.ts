import type { Caller } from "../services/access/api-keys";
import type { Params } from "../lib/http/body";
import type { ApiError } from "../lib/http/errors";
import type { z } from "../lib/z";

export interface OperationContext extends Caller {
  env: Env;
  exec: ExecutionContext;
  requestId: string;
  /** One clock reading per call, so every row a call writes carries the same time. */
  now: number;
  /** Origin of the request (`https://host`), for links the answer or background work gives out. */
  origin: string;
}

/**
 * One envelope operation (a `type`/`activity` pair). `params` validates the merged query and
 * body parameters and documents them in /openapi.json; `run` returns the operation's own
 * success members (CONTRACT 2.2) or throws an ApiError.
 */
export interface Operation<S extends z.ZodType = z.ZodType> {
  summary: string;
  params: S;
  run(ctx: OperationContext, input: z.output<S>): Promise<Record<string, unknown>>;
  /** Operations whose answers are not the envelope's (4.10 answers spec 2.6) render their own. */
  render?: {
    success(requestId: string, members: Record<string, unknown>, params: Params): Response;
    failure(requestId: string, error: ApiError, params: Params): Response;
  };
}

export function defineOperation<S extends z.ZodType>(operation: Operation<S>): Operation<S> {
  return operation;
}

/** Operations of one `type`, keyed by `activity`. */
export type OperationTable = Record<string, Operation<z.ZodType>>;
