import type { InputRules } from "../domain/fields";
import type { Caller } from "../services/access/api-keys";
import type { Params } from "../lib/http/body";
import type { ApiError } from "../lib/http/errors";
import { allowsPrivateFetch } from "../lib/outbound";
import type { z } from "../lib/z";
import { config } from "../lib/config";

export interface OperationContext extends Caller {
  env: Env;
  exec: ExecutionContext;
  requestId: string;
  /** One clock reading per call, so every row a call writes carries the same time. */
  now: number;
  /** Origin of the request (`https://host`), for links the answer or background work gives out. */
  origin: string;
  /** The merged query and body parameters as sent, before `params` parsed them (4.10 echoes them). */
  params: Params;
}

/** What the parameter rules of an operation may read: the deployment, the caller's panel, the clock. */
export interface ParamsContext extends InputRules {
  /** The panel's time zone, in which schedules are read. */
  timezone: string;
  now: number;
  /** How far ahead a broadcast must be scheduled (BROADCAST_LEAD_MINUTES). */
  broadcastLeadMinutes: number;
}

export function paramsContext(ctx: Pick<OperationContext, "env" | "panel" | "now">): ParamsContext {
  return {
    allowPrivateFetch: allowsPrivateFetch(ctx.env),
    timezone: ctx.panel.timezone,
    now: ctx.now,
    broadcastLeadMinutes: config(ctx.env).broadcastLeadMinutes,
  };
}

/**
 * One envelope operation (a `type`/`activity` pair). `params` validates the merged query and
 * body parameters and documents them in /openapi.json; when its rules read the caller's
 * context (a URL's host, a schedule's lead time) it is a function of that context. `run`
 * returns the operation's own success members (CONTRACT 2.2) or throws an ApiError.
 */
export interface Operation<S extends z.ZodType = z.ZodType> {
  summary: string;
  params: S | ((context: ParamsContext) => S);
  /**
   * The common input read without zod, as `params` would output it; undefined for anything
   * else, which `params` reads (so every refusal is the schema's, in its words). For the
   * hottest calls only, each with a test running both on many inputs.
   */
  fastParams?: (params: Params) => z.output<S> | undefined;
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

/** The schema of an operation's parameters in a context. */
export function paramsSchema<S extends z.ZodType>(operation: Operation<S>, context: ParamsContext): S {
  return typeof operation.params === "function" ? operation.params(context) : operation.params;
}

/** Operations of one `type`, keyed by `activity`. */
export type OperationTable = Record<string, Operation<z.ZodType>>;
