import type { IRequest } from "itty-router";
import type { InputRules } from "../domain/fields";
import { readJsonBody } from "../lib/http/body";
import { notFound, parseOrThrow } from "../lib/http/errors";
import { allowsPrivateFetch } from "../lib/outbound";
import type { z } from "../lib/z";
import { getPanel, type Panel } from "../store/panels";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface AdminRequest<B, Q> {
  request: IRequest;
  env: Env;
  exec: ExecutionContext;
  /** Path parameters, e.g. `panel` for `/panels/:panel`. */
  path: Record<string, string>;
  body: B;
  query: Q;
}

/**
 * One admin route: its body and query schemas validate the request and document it in
 * /openapi.json; a body whose rules read the deployment (a URL's host) is a function of
 * them. The handler returns the JSON answer (sent with `status`) or a Response.
 */
export interface AdminRoute<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: HttpMethod;
  /** Path under /admin/v1, in itty-router syntax (`/panels/:panel`). */
  path: string;
  summary: string;
  body?: B | ((rules: InputRules) => B);
  query?: Q;
  status?: number;
  handle(req: AdminRequest<z.output<B>, z.output<Q>>): Promise<unknown>;
}

export function defineAdminRoute<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType>(
  route: AdminRoute<B, Q>,
): AdminRoute {
  return route as unknown as AdminRoute;
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

export function parseAdminQuery(route: AdminRoute, request: IRequest): unknown {
  if (!route.query) return undefined;
  return parseOrThrow(route.query, Object.fromEntries(new URL(request.url).searchParams));
}

/** The panel a path names; an unknown id is a 404. */
export async function requirePanel(db: D1Database, panelId: string | undefined): Promise<Panel> {
  const panel = panelId ? await getPanel(db, panelId) : null;
  if (!panel) throw notFound(`No panel with id "${panelId}"`);
  return panel;
}
