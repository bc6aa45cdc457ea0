import type { IRequest } from "itty-router";
import { appTokenBody, appTokenDeleteBody, webSubscribeBody, webUnsubscribeBody } from "../domain/push";
import { readJsonBody } from "../lib/http/body";
import { ApiError, asApiError, notFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { envelopeFailure, envelopeSuccess, newRequestId } from "../lib/http/respond";
import { decodeOrKeep } from "../lib/uri";
import type { z } from "../lib/z";
import { panelPush } from "../services/channels/push/settings";
import { registerAppToken, subscribeBrowser, unsubscribeDevice } from "../services/channels/push/subscriptions";
import { shardOf } from "../store/shards";
import { contactPlace, panelOwningShards } from "../services/access/partitions";
import { catalogOfClient, checkAccess } from "./access";

/**
 * Where sites and apps register devices for push, addressed by the panel's client id and
 * authenticated as 4.11 is (a key, when given, must be the panel's), since they run in
 * browsers and apps that hold no secret:
 * - `GET /v1/push/web/{client_id}`: the VAPID public key to subscribe with (applicationServerKey);
 * - `POST /v1/push/web/{client_id}`: a browser's subscription; `DELETE` with its endpoint;
 * - `POST /v1/push/app/{client_id}`: an app install's FCM token; `DELETE` with the token.
 */

/**
 * The panel the path names, and what owning a device needs of it: its primary key and type,
 * and where a device's row goes by its owner's key (the key's partition, decision 0038; the
 * home for a panel without a map).
 */
async function panelOf(request: IRequest, env: Env) {
  const { panel, primaryKeyType } = await catalogOfClient(env, decodeOrKeep(request.params.client_id ?? ""));
  await checkAccess(request, env, panel);
  const home = shardOf(env, panel);
  const rowDb = panel.partitions.length ? (key: string) => contactPlace(env, panel, home, key).db : undefined;
  return { panel, owner: { id: panel.id, primaryKey: panel.primaryKey, primaryKeyType, rowDb } };
}



async function bodyOf<S extends z.ZodType>(request: IRequest, schema: S): Promise<z.output<S>> {
  return parseOrThrow(schema, await readJsonBody(request));
}

export async function handleWebPush(request: IRequest, env: Env): Promise<Response> {
  const requestId = newRequestId();
  try {
    const { panel, owner } = await panelOf(request, env);
    const db = shardOf(env, panel);
    const now = Date.now();
    switch (request.method) {
      case "GET": {
        const push = await panelPush(env, db, panel.id);
        if (!push.web) throw notFound("client_id: web push is not set up for this panel", [{ field: "client_id", message: "web push is off" }]);
        return envelopeSuccess(requestId, { public_key: push.web.publicKey });
      }
      case "POST": {
        unwrap(await subscribeBrowser(env, db, owner, await bodyOf(request, webSubscribeBody), now));
        return envelopeSuccess(requestId, { subscribed: true });
      }
      case "DELETE": {
        const { endpoint } = await bodyOf(request, webUnsubscribeBody);
        return envelopeSuccess(requestId, { removed: await unsubscribeDevice(panelOwningShards(env, panel, db), panel.id, "web", endpoint) });
      }
      default:
        throw new ApiError(405, `method: web push subscriptions take GET, POST and DELETE, not ${request.method}`);
    }
  } catch (error) {
    return envelopeFailure(requestId, asApiError(error, requestId));
  }
}

export async function handleAppPush(request: IRequest, env: Env): Promise<Response> {
  const requestId = newRequestId();
  try {
    const { panel, owner } = await panelOf(request, env);
    const db = shardOf(env, panel);
    switch (request.method) {
      case "POST": {
        unwrap(await registerAppToken(env, db, owner, await bodyOf(request, appTokenBody), Date.now()));
        return envelopeSuccess(requestId, { registered: true });
      }
      case "DELETE": {
        const { token } = await bodyOf(request, appTokenDeleteBody);
        return envelopeSuccess(requestId, { removed: await unsubscribeDevice(panelOwningShards(env, panel, db), panel.id, "app", token) });
      }
      default:
        throw new ApiError(405, `method: app tokens take POST and DELETE, not ${request.method}`);
    }
  } catch (error) {
    return envelopeFailure(requestId, asApiError(error, requestId));
  }
}

/** The /openapi.json entries of the push routes. */
export function pushOpenApiPaths(
  schemaOf: (schema: z.ZodType) => Record<string, unknown>,
  failureBody: Record<string, unknown>,
  successBody: Record<string, unknown>,
) {
  const success = { "application/json": { schema: successBody } };
  const clientId = { name: "client_id", in: "path", required: true, schema: { type: "string" }, description: "The panel's client id" };
  const failed = { "4XX": { description: "Failed", content: { "application/json": { schema: failureBody } } } };
  const withBody = (summary: string, schema: z.ZodType, answer: string) => ({
    summary,
    parameters: [clientId],
    requestBody: { required: true, content: { "application/json": { schema: schemaOf(schema) } } },
    responses: { "200": { description: answer, content: success }, ...failed },
  });
  return {
    "/v1/push/web/{client_id}": {
      get: { summary: "The panel's VAPID public key (applicationServerKey)", parameters: [clientId], responses: { "200": { description: '{"requestid","result":"Success","public_key"}', content: success }, ...failed } },
      post: withBody("Record a browser's push subscription for a contact or an anonymous visitor", webSubscribeBody, '{"requestid","result":"Success","subscribed":true}'),
      delete: withBody("Remove a browser's push subscription", webUnsubscribeBody, '{"requestid","result":"Success","removed"}'),
    },
    "/v1/push/app/{client_id}": {
      post: withBody("Register an app install's FCM token for a contact or an anonymous visitor", appTokenBody, '{"requestid","result":"Success","registered":true}'),
      delete: withBody("Remove an app install's FCM token", appTokenDeleteBody, '{"requestid","result":"Success","removed"}'),
    },
  };
}
