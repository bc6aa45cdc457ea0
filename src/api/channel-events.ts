import { decodeOrKeep } from "../lib/uri";
import type { IRequest } from "itty-router";
import type { MessageChannel } from "../domain/journey";
import { requestApiKey } from "../lib/http/credentials";
import { authenticateApiKey, catalogOfClient, checkAccess } from "./access";
import { readJsonBody } from "../lib/http/body";
import { ApiError, asApiError, notFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { envelopeFailure, envelopeSuccess, newRequestId } from "../lib/http/respond";
import { z } from "../lib/z";
import { reportChannelEvent } from "../services/journeys/channel-events";
import type { Panel } from "../store/panels";

/**
 * POST /v1/events/{channel}[/{client_id}] (CONTRACT 7): an SMS gateway or push service
 * reports `delivered` or `click` of a journey message by its msgid. Authenticated like 4.11:
 * the panel's client id in the path (and a key, when given, must be the panel's), or without
 * it an API key (Bearer header or `apikey`). The event goes into the one pipeline, where it
 * ends the waits for it. `email` is accepted too (open, click, bounce): journey email records
 * its own opens and clicks through its tracking links (src/services/journeys/engagement.ts), and this
 * takes what arrives from elsewhere, such as bounces of journey mail.
 */

const CHANNELS = ["sms", "apn", "bpn", "email"] as const;

const body = z
  .object({
    msgid: z.string({ error: "is required: the msgid of the message" }).trim().min(1, { error: "must not be empty" }).max(200),
    event: z.string({ error: "is required" }).trim().toLowerCase(),
    ts: z.union([z.string(), z.number()]).optional().meta({ description: "YYMMDDhhmmss or ISO 8601 (in the panel's time zone unless it names its own), or epoch seconds or milliseconds; default now" }),
    guid: z.string().trim().min(1).max(200).optional().meta({ description: "Unique id of the report; a second report with it is ignored" }),
    ip_addr: z.string().max(100).optional(),
    user_agent: z.string().max(1000).optional(),
    token: z.string().max(1000).optional(),
    url: z.string().max(2048).optional(),
    linkid: z.number().int().optional(),
  })
  // Members it does not name (a gateway's own `status`, `operator`) are dropped, as an activity's are: a relay passes reports through whole.
  .strip();

async function panelOf(request: IRequest, env: Env): Promise<Panel> {
  const clientId = request.params.client_id;
  if (clientId) {
    const catalog = await catalogOfClient(env, decodeOrKeep(clientId));
    await checkAccess(request, env, catalog.panel);
    return catalog.panel;
  }
  const { panel } = await authenticateApiKey(env, requestApiKey(request));
  return panel;
}

export async function handleChannelEvent(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const channel = request.params.channel as MessageChannel;
    if (!(CHANNELS as readonly string[]).includes(channel)) throw notFound(`channel: "${channel}" is not one of ${CHANNELS.join(", ")}`, [{ field: "channel", message: "unknown channel" }]);
    if (request.method !== "POST") throw new ApiError(405, `method: events are reported with POST, not ${request.method}`);
    const panel = await panelOf(request, env);
    const { msgid, event, ts, guid, ...details } = parseOrThrow(body, await readJsonBody(request));
    const recorded = await reportChannelEvent(env, panel, channel, { msgid, event, ts, guid, details }, { now: Date.now(), defer: (work) => exec.waitUntil(work) });
    return envelopeSuccess(requestId, unwrap(recorded));
  } catch (error) {
    return envelopeFailure(requestId, asApiError(error, requestId));
  }
}

/** The /openapi.json entries of the channel events route. */
export function channelEventOpenApiPaths(
  schemaOf: (schema: z.ZodType) => Record<string, unknown>,
  failureBody: Record<string, unknown>,
  successBody: Record<string, unknown>,
) {
  const channel = { name: "channel", in: "path", required: true, schema: { enum: [...CHANNELS] } };
  const operation = (parameters: unknown[]) => ({
    post: {
      summary: "Report delivered or click (email: open, click, bounce) of a journey message by its msgid",
      parameters,
      requestBody: { required: true, content: { "application/json": { schema: schemaOf(body) } } },
      responses: {
        "200": { description: '{"requestid","result":"Success","guid","duplicate"}', content: { "application/json": { schema: successBody } } },
        "4XX": { description: "Failed", content: { "application/json": { schema: failureBody } } },
      },
    },
  });
  return {
    "/v1/events/{channel}/{client_id}": operation([channel, { name: "client_id", in: "path", required: true, schema: { type: "string" } }]),
    "/v1/events/{channel}": operation([channel, { name: "apikey", in: "query", required: false, schema: { type: "string" }, description: "Or Authorization: Bearer <key>" }]),
  };
}
