import { decodeOrKeep } from "../lib/uri";
import type { IRequest } from "itty-router";
import { ACTIVITY_SOURCE_RULE, MAX_ACTIVITY_NAME_LENGTH, prepareActivityEvent } from "../domain/activity";
import { JOURNEYS_SKIPPED_OLD, MAX_GUID_LENGTH, startsJourneys, type NewEvent } from "../domain/events";
import { idFromText } from "../domain/fields";
import { ActivityBatch, MAX_CSV_BYTES, MAX_CSV_ROWS, type BatchSource } from "./activity-batch";
import { accessKnown, authenticateApiKey, catalogOfClient, checkAccess } from "./access";
import { readJsonBody } from "../lib/http/body";
import { requestApiKey } from "../lib/http/credentials";
import { asApiError, fieldErrorsFromZod, fromProblems, invalidField, unwrap } from "../lib/http/errors";
import { envelopeFailure, envelopeSuccess, newRequestId } from "../lib/http/respond";
import { z } from "../lib/z";
import { recordEvents } from "../services/pipeline/record";
import { catalogKnowing, definitionOf, ingestPanel, knownActivityCatalog } from "../services/access/activity-catalogs";
import type { ActivityCatalog } from "../store/activities";

/**
 * Single activity (CONTRACT 3, spec 4.11), its batch form, and Activity API v2's upload
 * (CONTRACT 8): a website, app or store posts what a contact did; the answer is Success once
 * the event is durably stored.
 */

export const MAX_BATCH_EVENTS = 1000;
/** A full batch of events with parameters can pass the 1 MiB limit of other calls. */
export const MAX_BATCH_BODY_BYTES = 5 * 1024 * 1024;
/** Room left in a guid for the `:<index>` a batch's Idempotency-Key gets per event. */
const MAX_IDEMPOTENCY_KEY_LENGTH = MAX_GUID_LENGTH - 5;


const activityIdParam = z
  .union([z.string(), z.number()], { error: "is required: the id of an activity defined in the panel" })
  .transform((value, ctx) => {
    const id = idFromText(value);
    if (id !== undefined) return id;
    ctx.addIssue({ code: "custom", message: `must be the id of an activity defined in the panel (a positive integer), not "${value}"` });
    return z.NEVER;
  })
  .meta({ description: "Id of the activity, as defined in the panel", example: "3" });

/** What every activity event may carry, however it names its activity. */
const eventFields = {
  cts: z
    .union([z.string(), z.number()], { error: "must be YYMMDDhhmmss, as text or a number" })
    .nullish()
    .meta({ description: "When it happened, YYMMDDhhmmss in the panel's time zone; default now. At most 24 hours ahead", example: "240131180500" }),
  timestamp: z
    .union([z.string(), z.number()], { error: "must be an ISO 8601 date-time, or epoch seconds or milliseconds" })
    .nullish()
    .meta({
      description:
        "Used when cts is absent: ISO 8601 (without a zone, in the panel's time zone), or epoch seconds or milliseconds (a number or digits). At most 24 hours ahead; older than 24 hours starts no journey",
      example: "2024-01-31T18:05:00+05:30",
    }),
  identity: z
    .union([z.string(), z.number()], { error: "must be the contact's primary-key value" })
    .nullish()
    .meta({ description: "The contact's primary-key value; an unknown one creates the contact", example: "ada@example.com" }),
  uniqueid: z
    .union([z.string(), z.number()], { error: "must be text" })
    .nullish()
    .meta({ description: "Anonymous visitor id; required when identity is absent", example: "c1f4-visitor-77" }),
  activity_source: z
    .string({ error: `must be ${ACTIVITY_SOURCE_RULE}` })
    .nullish()
    .meta({ description: `Where it happened: ${ACTIVITY_SOURCE_RULE}`, example: "web" }),
  activity_params: z
    .union([z.record(z.string(), z.unknown()), z.array(z.unknown())], { error: "must be an object or an array of one object" })
    .nullish()
    .meta({
      description: "Defined parameters by name; a key may carry its type prefix s^ (string), i^ (integer) or f^ (float), which must agree with the definition",
      example: { name: "Kettle", "i^prid": 1234, price: 29.5 },
    }),
  asset_id: z
    .union([z.string(), z.number()], { error: "must be text" })
    .nullish()
    .meta({ description: "The web or app property of the panel the event came from; stored with the event", example: "ast_web_1" }),
  guid: z
    .union([z.string(), z.number()], { error: "must be text" })
    .nullish()
    .meta({ description: `Unique id of the event within the panel (at most ${MAX_GUID_LENGTH} characters); a second post with it stores nothing` }),
};

/** The JSON shape of one activity event (spec 2.4); the panel's definitions are checked after. */
export const activityEventSchema = z.object(
  {
    activityid: activityIdParam,
    actvityid: z
      .union([z.string(), z.number()])
      .nullish()
      .meta({ description: "Misspelling of activityid that some clients send; read as activityid when that is absent" }),
    ...eventFields,
  },
  { error: "must be a JSON object: one activity event" },
);

/** One event of Activity API v2 (CONTRACT 8): the activity is named, not numbered. */
export const uploadEventSchema = z.object(
  {
    activity_name: z
      .string({ error: "is required: the name of an activity defined in the panel" })
      .trim()
      .min(1, { error: "must not be empty" })
      .max(MAX_ACTIVITY_NAME_LENGTH, { error: `must be at most ${MAX_ACTIVITY_NAME_LENGTH} characters` })
      .meta({ description: "Name of an activity defined in the panel (any case)", example: "add_to_cart" }),
    ...eventFields,
  },
  { error: "must be a JSON object: one activity event" },
);

/** `actvityid` (one spec sample's spelling) is read as `activityid`. */
export function withAliases(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  const record = raw as Record<string, unknown>;
  if ((record.activityid === undefined || record.activityid === null) && record.actvityid !== undefined) {
    return { ...record, activityid: record.actvityid };
  }
  return raw;
}

/*
 * Fast paths of the batch and upload endpoints' per-event validation. zod's object parsing runs
 * jitless in Workers (no code generation there), and for a 1,000-event batch it was the largest
 * single CPU cost of the call (bench:profile, issue 15). The common event, a plain object whose
 * members have exactly the accepted JS types, is read here into what the schema would output
 * (the same members in the schema's order, unknown ones dropped, activityid read as a number,
 * activity_name trimmed); anything else goes to the schema, so every refusal is zod's, in its
 * words. test/api/activity-fast-parse.test.ts runs both on many inputs.
 */

/** What the schema of a member accepts: text or a number, text, or an object or array (activity_params). */
type MemberKind = "text-or-number" | "text" | "params";

/** What each of eventFields' members accepts besides null (typed: a member added there must be added here). */
const MEMBER_KINDS: Record<keyof typeof eventFields, MemberKind> = {
  cts: "text-or-number",
  timestamp: "text-or-number",
  identity: "text-or-number",
  uniqueid: "text-or-number",
  activity_source: "text",
  activity_params: "params",
  asset_id: "text-or-number",
  guid: "text-or-number",
};

/** eventFields' members in the schema's order, which is the order of the schema's output. */
const EVENT_MEMBERS = (Object.keys(eventFields) as Array<keyof typeof eventFields>).map((key) => [key, MEMBER_KINDS[key]] as const);

/** Returned when only the schema can say what a value is. */
const ASK_ZOD = Symbol("ask zod");

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** A copy, as z.record(z.string(), z.unknown()) or z.array(z.unknown()) makes it. */
function copyOfParams(value: unknown): unknown {
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = value[i];
    return copy;
  }
  // An own `constructor` or symbol member, or `__proto__`, would take zod's record check down another road.
  if (!isPlainRecord(value) || Object.hasOwn(value, "constructor") || Object.getOwnPropertySymbols(value).length) return ASK_ZOD;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === "__proto__") return ASK_ZOD;
    copy[key] = value[key];
  }
  return copy;
}

/** What a nullish member's schema outputs for a present `value`, or ASK_ZOD. */
function memberValue(kind: MemberKind, value: unknown): unknown {
  if (value === null) return null;
  if (typeof value === "string") return kind === "params" ? ASK_ZOD : value;
  if (typeof value === "number") return kind === "text-or-number" && Number.isFinite(value) ? value : ASK_ZOD;
  return kind === "params" ? copyOfParams(value) : ASK_ZOD;
}

/** Adds eventFields' members of `item` to `out` as the schema outputs them; false when only the schema can. */
function readEventMembers(item: Record<string, unknown>, out: Record<string, unknown>): boolean {
  // Indexed, not destructured: unoptimised code made an iterator and its results per member.
  for (let i = 0; i < EVENT_MEMBERS.length; i++) {
    const key = EVENT_MEMBERS[i]![0];
    if (!(key in item)) continue;
    const kind = EVENT_MEMBERS[i]![1];
    const value = memberValue(kind, item[key]);
    if (value === ASK_ZOD) return false;
    out[key] = value;
  }
  return true;
}

type ActivityEvent = z.output<typeof activityEventSchema>;
type UploadEvent = z.output<typeof uploadEventSchema>;

/** activityEventSchema's output for a common well-formed event (aliases applied), else undefined. */
export function fastActivityEvent(item: unknown): ActivityEvent | undefined {
  if (!isPlainRecord(item)) return undefined;
  const raw = item.activityid;
  if (typeof raw !== "string" && !(typeof raw === "number" && Number.isFinite(raw))) return undefined;
  const activityid = idFromText(raw);
  if (activityid === undefined) return undefined;
  const out: Record<string, unknown> = { activityid };
  if ("actvityid" in item) {
    const alias = memberValue("text-or-number", item.actvityid);
    if (alias === ASK_ZOD) return undefined;
    out.actvityid = alias;
  }
  return readEventMembers(item, out) ? (out as ActivityEvent) : undefined;
}

/** uploadEventSchema's output for a common well-formed event, else undefined. */
export function fastUploadEvent(item: unknown): UploadEvent | undefined {
  if (!isPlainRecord(item) || typeof item.activity_name !== "string") return undefined;
  const name = item.activity_name.trim();
  if (name.length < 1 || name.length > MAX_ACTIVITY_NAME_LENGTH) return undefined;
  const out: Record<string, unknown> = { activity_name: name };
  return readEventMembers(item, out) ? (out as UploadEvent) : undefined;
}

/** activityEventSchema.safeParse of one batch event, `actvityid` read as `activityid`. */
export function parseActivityEvent(raw: unknown): z.ZodSafeParseResult<ActivityEvent> {
  const item = withAliases(raw);
  const data = fastActivityEvent(item);
  return data ? { success: true, data } : activityEventSchema.safeParse(item);
}

/** uploadEventSchema.safeParse of one upload event. */
export function parseUploadEvent(item: unknown): z.ZodSafeParseResult<UploadEvent> {
  const data = fastUploadEvent(item);
  return data ? { success: true, data } : uploadEventSchema.safeParse(item);
}

export function idempotencyKey(request: Request): string | undefined {
  const raw = request.headers.get("idempotency-key");
  if (raw === null) return undefined;
  const key = raw.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalidField("Idempotency-Key", `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/** The panel a route's client id names, once the caller's access to it is checked. */
export async function catalogForClient(request: IRequest, env: Env) {
  const clientId = decodeOrKeep(request.params.client_id ?? "");
  const catalog = await catalogOfClient(env, clientId);
  await checkAccess(request, env, catalog.panel);
  return catalog;
}

/**
 * catalogForClient without a wait, when this isolate knows the panel and the key the call
 * gives, if any (most posts); undefined when catalogForClient has to look. Its promises were
 * a few % of a single post's allocations (HEAP=1 bench:profile).
 */
function knownCatalogForClient(request: IRequest, env: Env): ActivityCatalog | undefined {
  const catalog = knownActivityCatalog(decodeOrKeep(request.params.client_id ?? ""));
  return catalog && accessKnown(request, env, catalog.panel) ? catalog : undefined;
}

export function failure(requestId: string, error: unknown): Response {
  return envelopeFailure(requestId, asApiError(error, requestId));
}

/** POST /{v1|apiv2}/activity/singleactivity/{client_id} */
export async function handleSingleActivity(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const cached = knownCatalogForClient(request, env) ?? (await catalogForClient(request, env));
    const key = idempotencyKey(request);
    const body = await readJsonBody(request);
    const parsed = parseActivityEvent(body);
    if (!parsed.success) throw fromProblems(fieldErrorsFromZod(parsed.error));
    const { activityid } = parsed.data;
    const catalog = definitionOf(cached, activityid) ? cached : await catalogKnowing(env, cached.panel.clientId, cached, [activityid]);
    const now = Date.now();
    // prepareActivityEvent's event is this call's own: the key is set on it, not on a copy.
    const event: NewEvent = unwrap(prepareActivityEvent(parsed.data, definitionOf(catalog, activityid), ingestPanel(catalog), now));
    event.guid ??= key;
    const recorded = await recordEvents(env, catalog.panel, [event], { now, defer: (work) => exec.waitUntil(work) });
    const answer: Record<string, unknown> = { guid: recorded.guids[0], duplicate: recorded.duplicates === 1 };
    if (!startsJourneys(event, now)) answer.journeys = JOURNEYS_SKIPPED_OLD;
    return envelopeSuccess(requestId, answer);
  } catch (error) {
    return failure(requestId, error);
  }
}

/** The events of a batch body: a JSON array, or (when `wrapped` is allowed) an object whose `events` member is one. */
function batchItems(body: unknown, wrapped: boolean): unknown[] {
  const record = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const items = Array.isArray(body) ? body : wrapped ? record?.events : undefined;
  if (!Array.isArray(items)) {
    throw invalidField("events", wrapped ? "the body must be a JSON array of events, or an object whose events member is one" : "the body must be a JSON array of events");
  }
  if (items.length === 0) throw invalidField("events", "must hold at least one event");
  if (items.length > MAX_BATCH_EVENTS) throw invalidField("events", `must hold at most ${MAX_BATCH_EVENTS} events, not ${items.length}`);
  return items;
}

/**
 * The batch answer (CONTRACT 10), shared by /activity/batch and /activity/upload (and the CSV
 * batch, which feeds the collector group by group): api/activity-batch.ts.
 */
async function recordBatch(requestId: string, env: Env, exec: ExecutionContext, call: BatchSource & { items: unknown[] }): Promise<Response> {
  const batch = new ActivityBatch(env, call);
  await batch.add(call.items, 0);
  return batch.answer(requestId, exec);
}

/** POST /{v1|apiv2}/activity/batch/{client_id}: up to 1,000 events of spec 2.4's shape. */
export async function handleActivityBatch(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const catalog = await catalogForClient(request, env);
    const key = idempotencyKey(request);
    const items = batchItems(await readJsonBody(request, MAX_BATCH_BODY_BYTES), true);
    return await recordBatch(requestId, env, exec, {
      catalog,
      items,
      key,
      parse: parseActivityEvent,
      ref: (input) => input.activityid!,
    });
  } catch (error) {
    return failure(requestId, error);
  }
}

/** The asset a whole upload comes from, when its events do not name one. */
const ASSET_HEADER = "x-netcore-asset-id";

/**
 * POST /v1/activity/upload (Activity API v2, CONTRACT 8): the panel's API key as
 * `Authorization: Bearer` or `apikey` in the query; a JSON array of 1 to 1,000 events naming
 * their activity by `activity_name`, answered as the batch endpoint answers.
 */
export async function handleActivityUpload(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const caller = await authenticateApiKey(env, requestApiKey(request));
    const catalog = await catalogOfClient(env, caller.panel.clientId);
    const key = idempotencyKey(request);
    const asset = request.headers.get(ASSET_HEADER)?.trim() || undefined;
    const items = batchItems(await readJsonBody(request, MAX_BATCH_BODY_BYTES), false);
    return await recordBatch(requestId, env, exec, {
      catalog,
      items,
      key,
      parse(item) {
        const parsed = parseUploadEvent(item);
        if (parsed.success && asset !== undefined) parsed.data.asset_id ??= asset;
        return parsed;
      },
      ref: (input) => input.activity_name!,
    });
  } catch (error) {
    return failure(requestId, error);
  }
}

/** The OpenAPI description of the activity routes, from the schemas that validate each event. */
export function activityOpenApiPaths(
  schemaOf: (schema: z.ZodType) => Record<string, unknown>,
  failureBody: Record<string, unknown>,
  successBody: Record<string, unknown>,
) {
  const success = { "application/json": { schema: successBody } };
  const event = schemaOf(activityEventSchema);
  const version = { name: "version", in: "path", required: true, schema: { enum: ["v1", "apiv2"] } };
  const idempotency = { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: MAX_IDEMPOTENCY_KEY_LENGTH } };
  const parameters = [
    version,
    { name: "client_id", in: "path", required: true, schema: { type: "string" }, description: "The panel's client id" },
    { name: "apikey", in: "query", required: false, schema: { type: "string" }, description: "Optional; when given it must be a key of this panel" },
    idempotency,
  ];
  const failed = { "4XX": { description: "Failed", content: { "application/json": { schema: failureBody } } } };
  const batchResponses = {
    "200": {
      description:
        'At least one event was stored: {"requestid","result":"Success","recorded","accepted","duplicates","rejected","errors":[{"index","field","message"}]} (rejected 0 and errors empty when every event was stored, a "message" otherwise); with "journeys":"skipped: older than 24 hours" and "journeys_skipped":[index] when some events are that old',
    },
    "400": { description: "Failed: every event was rejected (errors by index) or the call itself was refused; nothing was stored", content: { "application/json": { schema: failureBody } } },
    "401": { description: "The caller could not be authenticated", content: { "application/json": { schema: failureBody } } },
    ...failed,
  };
  return {
    "/{version}/activity/singleactivity/{client_id}": {
      post: {
        summary: "Record one activity of a contact (spec 4.11); Success once it is durably stored",
        parameters,
        requestBody: { required: true, content: { "application/json": { schema: event } } },
        responses: { "200": { description: '{"requestid","result":"Success","guid","duplicate"}, with "journeys":"skipped: older than 24 hours" for an event that old', content: success }, ...failed },
      },
    },
    "/{version}/activity/batch/{client_id}": {
      post: {
        summary: `Record up to ${MAX_BATCH_EVENTS} activities; each is validated on its own`,
        parameters,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: {
                oneOf: [
                  { type: "array", items: event, maxItems: MAX_BATCH_EVENTS },
                  { type: "object", required: ["events"], properties: { events: { type: "array", items: event, maxItems: MAX_BATCH_EVENTS } } },
                ],
              },
            },
          },
        },
        responses: batchResponses,
      },
    },
    "/{version}/activity/batchactivity/{client_id}": {
      post: {
        summary: `CSV batch activity (CONTRACT 10): up to ${MAX_CSV_ROWS} rows, one event each, answered as the batch endpoint with index = the data row's number`,
        parameters,
        requestBody: {
          required: true,
          content: {
            "multipart/form-data": {
              schema: {
                type: "object",
                properties: {
                  data: {
                    type: "string",
                    format: "binary",
                    description: `A CSV of at most ${MAX_CSV_BYTES} bytes: header activity_name or activityid, identity and/or uniqueid, optional timestamp, cts, activity_source, asset_id; every other column a parameter (an empty cell is absent; an array parameter's cell holds the array's JSON, e.g. [{"prid":12}]). Also accepted as the field file`,
                  },
                },
              },
            },
          },
        },
        responses: { ...batchResponses, "413": { description: "The file is larger than the limit", content: { "application/json": { schema: failureBody } } } },
      },
    },
    "/v1/activity/upload": {
      post: {
        summary: `Activity API v2: record up to ${MAX_BATCH_EVENTS} activities named by activity_name; answered as the batch endpoint`,
        security: [{ apiKey: [] }, { apiKeyQuery: [] }],
        parameters: [
          { name: "apikey", in: "query", required: false, schema: { type: "string" }, description: "The panel's API key, when not sent as Authorization: Bearer" },
          { name: "X-Netcore-Asset-Id", in: "header", required: false, schema: { type: "string" }, description: "asset_id of the events that name none" },
          idempotency,
        ],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "array", items: schemaOf(uploadEventSchema), minItems: 1, maxItems: MAX_BATCH_EVENTS } } },
        },
        responses: batchResponses,
      },
    },
  };
}
