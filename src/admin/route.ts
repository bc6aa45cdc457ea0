import type { IRequest } from "itty-router";
import type { InputRules } from "../domain/fields";
import { readJsonBody } from "../lib/http/body";
import { orNotFound, parseOrThrow } from "../lib/http/errors";
import { allowsPrivateFetch } from "../lib/outbound";
import type { z } from "../lib/z";
import type { OperatorRole } from "../domain/operators";
import { getPanel, type Panel } from "../store/panels";
import { shardOf, type ShardDb } from "../store/shards";
import type { AdminCaller } from "./auth";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Who may call a route: the least operator role in the route's panel (owner > marketer >
 * viewer), or "admin" for the deployment's ADMIN_TOKEN alone. The admin token may call every route.
 */
export type AdminRole = OperatorRole | "admin";

/** The path parameters a route path names: `/panels/:panel/users/:user` gives `{ panel, user }`. */
export type PathParams<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name]: string } & PathParams<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : unknown;

export interface AdminRequest<P extends string, B, Q> {
  request: IRequest;
  env: Env;
  exec: ExecutionContext;
  caller: AdminCaller;
  /** Path parameters, percent-decoded. */
  path: PathParams<P>;
  body: B;
  query: Q;
}

/** What a route answers that is not JSON (a file, or no body): documented, not parsed. */
export interface RawAnswer {
  contentType: string | null;
  description: string;
}

/** What a route answers: a JSON answer its schema declares, or a non-JSON answer `raw` describes; never neither. */
export type AnswerSpec<R extends z.ZodType> =
  | {
      /** The JSON answer at `status` (domain/answers), which the handler must return. */
      response: R;
      raw?: never;
    }
  | {
      response?: never;
      /** A route whose answer is not JSON (a file, no body) says what it is instead. */
      raw: RawAnswer;
    };

/** A route's method, path, role and request schemas. */
export interface RouteRequestSpec<P extends string, B extends z.ZodType, Q extends z.ZodType> {
  method: HttpMethod;
  /** Path under /admin/v1, in itty-router syntax (`/panels/:panel`). */
  path: P;
  summary: string;
  role: AdminRole;
  body?: B | ((rules: InputRules) => B);
  query?: Q;
  status?: number;
}

/**
 * One admin route: its body and query schemas validate the request, its response schema is the
 * JSON answer, and all three document it in /openapi.json; a body whose rules read the
 * deployment (a URL's host) is a function of them. The handler returns the JSON answer (sent
 * with `status`), typed by `response` so the route cannot drift from what it declares, or a
 * Response (a file, a 204) that `raw` describes.
 */
export type AdminRoute<
  P extends string = string,
  B extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> = RouteRequestSpec<P, B, Q> &
  AnswerSpec<R> & {
    handle(req: AdminRequest<P, z.output<B>, z.output<Q>>): Promise<z.input<R> | Response>;
  };

export function defineAdminRoute<P extends string, B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType>(
  route: AdminRoute<P, B, Q, R>,
): AdminRoute {
  return route as unknown as AdminRoute;
}

type PanelPath = `/panels/:panel${string}`;

/** A route under `/panels/:panel`: its handler gets the loaded panel. */
export type PanelRoute<P extends PanelPath, B extends z.ZodType, Q extends z.ZodType, R extends z.ZodType> = RouteRequestSpec<P, B, Q> &
  AnswerSpec<R> & {
    handle(req: AdminRequest<P, z.output<B>, z.output<Q>> & { panel: Panel; db: ShardDb }): Promise<z.input<R> | Response>;
  };

/**
 * A panel's route: once its body and query are valid, the panel `:panel` names is loaded for
 * the handler with its shard's database (`db`, which holds every table of the panel's data);
 * an unknown id answers 404.
 */
export function definePanelRoute<P extends PanelPath, B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType>(
  route: PanelRoute<P, B, Q, R>,
): AdminRoute {
  return defineAdminRoute<P, B, Q, R>({
    ...route,
    async handle(req) {
      const { panel: panelId } = req.path as { panel: string };
      const panel = await orNotFound(getPanel(req.env.DB, panelId), `No panel with id "${panelId}"`);
      return route.handle({ ...req, panel, db: shardOf(req.env, panel) });
    },
  });
}

/** The schema of a route's body under the deployment's rules. */
export function bodySchema(route: AdminRoute, rules: InputRules): z.ZodType | undefined {
  return typeof route.body === "function" ? route.body(rules) : route.body;
}

export async function parseAdminBody(route: AdminRoute, request: Request, env: Env): Promise<unknown> {
  const schema = bodySchema(route, { allowPrivateFetch: allowsPrivateFetch(env) });
  if (!schema) return undefined;
  return parseOrThrow(schema, await readJsonBody(request));
}

/**
 * The route's query. A parameter sent empty (`?limit=&cursor=`, as a script fills a template on
 * its first page) is not given: no admin query gives "" a meaning of its own.
 */
export function parseAdminQuery(route: AdminRoute, request: IRequest): unknown {
  if (!route.query) return undefined;
  const given = [...new URL(request.url).searchParams].filter(([, value]) => value !== "");
  return parseOrThrow(route.query, Object.fromEntries(given));
}
