import { decodeOrKeep } from "../lib/uri";
import type { IRequest } from "itty-router";
import { ACTIVITY_SOURCES, prepareActivityEvent } from "../domain/activity";
import { MAX_GUID_LENGTH, type NewEvent } from "../domain/events";
import type { FieldProblem } from "../domain/problems";
import { catalogOfClient, checkAccess } from "./access";
import { readJsonBody } from "../lib/http/body";
import { asApiError, fieldErrorsFromZod, fromProblems, invalidField } from "../lib/http/errors";
import { envelopeFailure, envelopeSuccess, json, newRequestId } from "../lib/http/respond";
import { z } from "../lib/z";
import { recordEvents } from "../services/pipeline/record";
import { catalogKnowing, ingestPanel } from "../services/access/activity-catalogs";

/**
 * Single activity (CONTRACT 3, spec 4.11) and its batch form: a website, app or store posts
 * what a contact did; the answer is Success once the event is durably stored.
 */

export const MAX_BATCH_EVENTS = 1000;
/** A full batch of events with parameters can pass the 1 MiB limit of other calls. */
export const MAX_BATCH_BODY_BYTES = 5 * 1024 * 1024;
/** Room left in a guid for the `:<index>` a batch's Idempotency-Key gets per event. */
const MAX_IDEMPOTENCY_KEY_LENGTH = MAX_GUID_LENGTH - 5;

const activityIdParam = z
  .union([z.string(), z.number()], { error: "is required: the id of an activity defined in the panel" })
  .transform((value, ctx) => {
    const text = String(value).trim();
    if (/^\d{1,15}$/.test(text) && Number(text) >= 1) return Number(text);
    ctx.addIssue({ code: "custom", message: `must be the id of an activity defined in the panel (a positive integer), not "${value}"` });
    return z.NEVER;
  })
  .meta({ description: "Id of the activity, as defined in the panel", example: "3" });

/** The JSON shape of one activity event (spec 2.4); the panel's definitions are checked after. */
export const activityEventSchema = z.object(
  {
    activityid: activityIdParam,
    actvityid: z
      .union([z.string(), z.number()])
      .nullish()
      .meta({ description: "Misspelling of activityid that some clients send; read as activityid when that is absent" }),
    cts: z
      .union([z.string(), z.number()], { error: "must be YYMMDDhhmmss, as text or a number" })
      .nullish()
      .meta({ description: "When it happened, YYMMDDhhmmss in the panel's time zone; default now", example: "240131180500" }),
    timestamp: z
      .string({ error: "must be an ISO 8601 date-time string" })
      .nullish()
      .meta({ description: "Used when cts is absent: ISO 8601; without a zone, in the panel's time zone", example: "2024-01-31T18:05:00" }),
    identity: z
      .union([z.string(), z.number()], { error: "must be the contact's primary-key value" })
      .nullish()
      .meta({ description: "The contact's primary-key value; an unknown one creates the contact", example: "ada@example.com" }),
    uniqueid: z
      .union([z.string(), z.number()], { error: "must be text" })
      .nullish()
      .meta({ description: "Anonymous visitor id; required when identity is absent", example: "c1f4-visitor-77" }),
    activity_source: z
      .string({ error: `must be one of ${ACTIVITY_SOURCES.join(", ")}` })
      .nullish()
      .meta({ description: `One of ${ACTIVITY_SOURCES.join(", ")}`, example: "web" }),
    activity_params: z
      .union([z.record(z.string(), z.unknown()), z.array(z.unknown())], { error: "must be an object or an array of one object" })
      .nullish()
      .meta({ description: "Defined parameters, keys prefixed s^ (string), i^ (integer) or f^ (float)", example: { "s^name": "Kettle", "i^prid": 1234, "f^price": 29.5 } }),
    guid: z
      .string({ error: "must be text" })
      .nullish()
      .meta({ description: `Unique id of the event within the panel (at most ${MAX_GUID_LENGTH} characters); a second post with it stores nothing` }),
  },
  { error: "must be a JSON object: one activity event" },
);

/** `actvityid` (one spec sample's spelling) is read as `activityid`. */
function withAliases(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  const record = raw as Record<string, unknown>;
  if ((record.activityid === undefined || record.activityid === null) && record.actvityid !== undefined) {
    return { ...record, activityid: record.actvityid };
  }
  return raw;
}

function idempotencyKey(request: Request): string | undefined {
  const raw = request.headers.get("idempotency-key");
  if (raw === null) return undefined;
  const key = raw.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalidField("Idempotency-Key", `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/** What both routes settle before reading events: the panel, the caller's access, the key. */
async function openIngest(request: IRequest, env: Env) {
  const clientId = decodeOrKeep(request.params.client_id ?? "");
  const catalog = await catalogOfClient(env.DB, clientId);
  await checkAccess(request, env.DB, catalog.panel);
  return { clientId, catalog, key: idempotencyKey(request) };
}

function failure(requestId: string, error: unknown): Response {
  return envelopeFailure(requestId, asApiError(error, requestId));
}

/** POST /{v1|apiv2}/activity/singleactivity/{client_id} */
export async function handleSingleActivity(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const { clientId, catalog: cached, key } = await openIngest(request, env);
    const body = await readJsonBody(request);
    const parsed = activityEventSchema.safeParse(withAliases(body));
    if (!parsed.success) throw fromProblems(fieldErrorsFromZod(parsed.error));
    const catalog = await catalogKnowing(env.DB, clientId, cached, [parsed.data.activityid]);
    const now = Date.now();
    const prepared = prepareActivityEvent(parsed.data, catalog.activities.get(parsed.data.activityid), ingestPanel(catalog), now);
    if (!prepared.ok) throw fromProblems(prepared.problems, prepared.status);
    const event: NewEvent = { ...prepared.event, guid: prepared.event.guid ?? key };
    const recorded = await recordEvents(env, catalog.panel, [event], { now, defer: (work) => exec.waitUntil(work) });
    return envelopeSuccess(requestId, { guid: recorded.guids[0], duplicate: recorded.duplicates === 1 });
  } catch (error) {
    return failure(requestId, error);
  }
}

/** The events of a batch body: a JSON array, or an object whose `events` member is one. */
function batchItems(body: unknown): unknown[] {
  const items = Array.isArray(body) ? body : typeof body === "object" && body !== null ? (body as Record<string, unknown>).events : undefined;
  if (!Array.isArray(items)) {
    throw invalidField("events", "the body must be a JSON array of events, or an object whose events member is one");
  }
  if (items.length === 0) throw invalidField("events", "must hold at least one event");
  if (items.length > MAX_BATCH_EVENTS) throw invalidField("events", `must hold at most ${MAX_BATCH_EVENTS} events, not ${items.length}`);
  return items;
}

type EventProblem = FieldProblem & { index: number };

/**
 * POST /{v1|apiv2}/activity/batch/{client_id}: up to 1,000 events, each validated as a single
 * post is. Valid events are stored even when others are rejected; the answer names each
 * rejected event by its index: 200 Success when all were stored, 207 Partial when some were
 * rejected, 400 Failed when all were (nothing stored).
 */
export async function handleActivityBatch(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const requestId = newRequestId();
  try {
    const { clientId, catalog: cached, key } = await openIngest(request, env);
    const items = batchItems(await readJsonBody(request, MAX_BATCH_BODY_BYTES));
    const parsed = items.map((item) => activityEventSchema.safeParse(withAliases(item)));
    const catalog = await catalogKnowing(env.DB, clientId, cached, parsed.flatMap((p) => (p.success ? [p.data.activityid] : [])));

    const now = Date.now();
    const panel = ingestPanel(catalog);
    const problems: EventProblem[] = [];
    const events: NewEvent[] = [];
    parsed.forEach((result, index) => {
      if (!result.success) {
        for (const problem of fieldErrorsFromZod(result.error)) problems.push({ index, ...problem });
        return;
      }
      const prepared = prepareActivityEvent(result.data, catalog.activities.get(result.data.activityid), panel, now);
      if (!prepared.ok) {
        for (const problem of prepared.problems) problems.push({ index, ...problem });
        return;
      }
      const guid = prepared.event.guid ?? (key === undefined ? undefined : `${key}:${index}`);
      events.push({ ...prepared.event, guid });
    });

    const rejected = items.length - events.length;
    const counts = { accepted: events.length, duplicates: 0, rejected };
    if (events.length === 0) {
      const first = problems[0]!;
      return json(
        {
          requestid: requestId,
          result: "Failed",
          message: `Every event was rejected and nothing was stored; event ${first.index}: ${first.field}: ${first.message}`,
          ...counts,
          errors: problems,
        },
        400,
      );
    }
    const recorded = await recordEvents(env, catalog.panel, events, { now, defer: (work) => exec.waitUntil(work) });
    counts.duplicates = recorded.duplicates;
    if (rejected === 0) return envelopeSuccess(requestId, counts);
    return json(
      {
        requestid: requestId,
        result: "Partial",
        message: `${rejected} of ${items.length} events were rejected; the other ${events.length} were stored`,
        ...counts,
        errors: problems,
      },
      207,
    );
  } catch (error) {
    return failure(requestId, error);
  }
}

/** The OpenAPI description of both routes, from the schema that validates each event. */
export function activityOpenApiPaths(schemaOf: (schema: z.ZodType) => Record<string, unknown>, failureBody: Record<string, unknown>) {
  const event = schemaOf(activityEventSchema);
  const parameters = [
    { name: "version", in: "path", required: true, schema: { enum: ["v1", "apiv2"] } },
    { name: "client_id", in: "path", required: true, schema: { type: "string" }, description: "The panel's client id" },
    { name: "apikey", in: "query", required: false, schema: { type: "string" }, description: "Optional; when given it must be a key of this panel" },
    { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: MAX_IDEMPOTENCY_KEY_LENGTH } },
  ];
  const failed = { "4XX": { description: "Failed", content: { "application/json": { schema: failureBody } } } };
  return {
    "/{version}/activity/singleactivity/{client_id}": {
      post: {
        summary: "Record one activity of a contact (spec 4.11); Success once it is durably stored",
        parameters,
        requestBody: { required: true, content: { "application/json": { schema: event } } },
        responses: { "200": { description: '{"requestid","result":"Success","guid","duplicate"}' }, ...failed },
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
        responses: {
          "200": { description: '{"requestid","result":"Success","accepted","duplicates","rejected":0}' },
          "207": { description: '{"requestid","result":"Partial","message","accepted","duplicates","rejected","errors":[{"index","field","message"}]}; the accepted events were stored' },
          ...failed,
        },
      },
    },
  };
}
