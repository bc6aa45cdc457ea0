import { ADMIN_BASE, ADMIN_ROUTES } from "../admin";
import { bodySchema, type AdminRoute } from "../admin/route";
import { activityOpenApiPaths } from "../api/activity";
import { channelEventOpenApiPaths } from "../api/channel-events";
import { pushOpenApiPaths } from "../api/push";
import { paramsSchema, type ParamsContext } from "../api/operation";
import { OPERATIONS } from "../api/registry";
import { z } from "../lib/z";

type JsonSchema = Record<string, unknown>;

/** The context documented schemas are built in; what they read of it does not show in JSON Schema. */
const DOCUMENTED_CONTEXT: ParamsContext = { allowPrivateFetch: false, timezone: "UTC", now: 0, broadcastLeadMinutes: 90 };

/**
 * Schemas named with `.meta({ id })` (the email editor's source, used by several routes) are
 * written once under components.schemas and referred to; the request side of one is named with
 * an `Input` suffix, since defaults make members optional there.
 */
let sharedSchemas: Record<string, JsonSchema> = {};

function documented(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _ignored, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  if (!$defs) return rest;
  const name = (id: string) => `${id}${io === "input" ? "Input" : ""}`;
  const relink = (value: JsonSchema) => JSON.parse(JSON.stringify(value).replace(/"#\/\$defs\/([^"]+)"/g, (_, id: string) => `"#/components/schemas/${name(id)}"`)) as JsonSchema;
  for (const [id, def] of Object.entries($defs as Record<string, JsonSchema>)) sharedSchemas[name(id)] = relink(def);
  return relink(rest);
}

/** The request side of a schema: what a client sends, before transforms. */
function inputSchema(schema: z.ZodType): JsonSchema {
  return documented(schema, "input");
}

/** The answer side of a schema: what a client reads. */
function outputSchema(schema: z.ZodType): JsonSchema {
  return documented(schema, "output");
}

/** The success answer a route declares: its JSON schema, or what its non-JSON answer is. */
function successResponse(route: AdminRoute): JsonSchema {
  if (route.response) return { description: "Success", content: { "application/json": { schema: outputSchema(route.response) } } };
  return { description: route.raw.description, ...(route.raw.contentType ? { content: { [route.raw.contentType]: {} } } : {}) };
}

const fieldErrors = { type: "array", items: { type: "object", properties: { field: { type: "string" }, message: { type: "string" } } } };

const failureBody = {
  type: "object",
  required: ["requestid", "result", "message"],
  properties: {
    requestid: { type: "string", pattern: "^[0-9a-f]{32}$" },
    result: { const: "Failed" },
    message: { type: "string" },
    errors: fieldErrors,
  },
};

/** An envelope success: the members each operation adds are named in its description, so typed clients read them as unknown. */
const successBody = {
  type: "object",
  required: ["requestid", "result"],
  properties: { requestid: { type: "string", pattern: "^[0-9a-f]{32}$" }, result: { const: "Success" } },
  additionalProperties: true,
};

/** CONTRACT 4: an admin route's failure. */
const adminFailureBody = { type: "object", required: ["error", "errors"], properties: { error: { type: "string" }, errors: fieldErrors } };

/** Each envelope operation as one alternative of the request: type and activity are constants. */
function envelopeAlternatives(): JsonSchema[] {
  const alternatives: JsonSchema[] = [];
  for (const [type, table] of Object.entries(OPERATIONS)) {
    for (const [activity, operation] of Object.entries(table)) {
      const params = inputSchema(paramsSchema(operation, DOCUMENTED_CONTEXT));
      const properties = (params.properties ?? {}) as JsonSchema;
      alternatives.push({
        title: `${type}/${activity}`,
        description: operation.summary,
        type: "object",
        required: ["type", "activity", "apikey", ...((params.required as string[] | undefined) ?? [])],
        properties: { type: { const: type }, activity: { const: activity }, apikey: { type: "string" }, ...properties },
      });
    }
  }
  return alternatives;
}

function adminPaths(): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ADMIN_ROUTES) {
    const path = ADMIN_BASE + route.path.replace(/:(\w+)/g, "{$1}");
    const parameters = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    if (route.query) {
      const query = inputSchema(route.query);
      for (const [name, schema] of Object.entries((query.properties ?? {}) as JsonSchema)) {
        parameters.push({ name, in: "query", required: ((query.required as string[]) ?? []).includes(name), schema: schema as { type: string } });
      }
    }
    const body = bodySchema(route, DOCUMENTED_CONTEXT);
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase()] = {
      summary: route.summary,
      description:
        route.role === "admin"
          ? "Admin token only."
          : `Admin token, or a panel session (cookie, same origin, X-CSRF-Token on writes) whose role in the panel is ${route.role} or above.`,
      "x-role": route.role,
      security: [{ adminToken: [] }, { panelSession: [] }],
      parameters,
      ...(body ? { requestBody: { required: true, content: { "application/json": { schema: inputSchema(body) } } } } : {}),
      responses: {
        [String(route.status ?? 200)]: successResponse(route),
        "4XX": { description: "Failure: {error, errors}", content: { "application/json": { schema: adminFailureBody } } },
      },
    };
  }
  return paths;
}

/** /openapi.json, generated from the zod schemas that validate each request. */
export function openApiDocument(origin: string): JsonSchema {
  sharedSchemas = {};
  const document = documentWithoutSharedSchemas(origin);
  (document.components as JsonSchema).schemas = sharedSchemas;
  return document;
}

function documentWithoutSharedSchemas(origin: string): JsonSchema {
  const envelope = { oneOf: envelopeAlternatives() };
  const envelopeResponses = {
    "200": { description: '{"requestid","result":"Success", ...operation members}', content: { "application/json": { schema: successBody } } },
    "401": { description: "The caller could not be authenticated", content: { "application/json": { schema: failureBody } } },
    "4XX": { description: "Failed, naming each offending field", content: { "application/json": { schema: failureBody } } },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "apiv2 marketing-automation service",
      version: "1.0.0",
      description:
        "The apiv2 envelope: every operation is `{base_url}/apiv2` with `type`, `activity` and `apikey`; parameters may come from the query string and the body in any mix (the body wins). GET and POST are both accepted.",
    },
    servers: [{ url: origin }],
    components: {
      securitySchemes: {
        adminToken: { type: "http", scheme: "bearer" },
        panelSession: { type: "apiKey", in: "cookie", name: "panel_session" },
        apiKey: { type: "http", scheme: "bearer", description: "The panel's API key" },
        apiKeyQuery: { type: "apiKey", in: "query", name: "apikey" },
      },
    },
    paths: {
      "/apiv2": {
        post: {
          summary: "Envelope operation (parameters in the body and/or the query)",
          requestBody: {
            content: {
              "application/x-www-form-urlencoded": { schema: envelope },
              "multipart/form-data": { schema: envelope },
              "application/json": { schema: envelope },
            },
          },
          responses: envelopeResponses,
        },
        get: {
          summary: "Envelope operation with every parameter in the query string",
          parameters: [
            { name: "type", in: "query", required: true, schema: { enum: Object.keys(OPERATIONS) } },
            { name: "activity", in: "query", required: true, schema: { type: "string" } },
            { name: "apikey", in: "query", required: true, schema: { type: "string" } },
          ],
          "x-operations": envelope,
          responses: envelopeResponses,
        },
      },
      ...activityOpenApiPaths(inputSchema, failureBody, successBody),
      ...channelEventOpenApiPaths(inputSchema, failureBody, successBody),
      ...pushOpenApiPaths(inputSchema, failureBody, successBody),
      "/health": { get: { summary: "Liveness", responses: { "200": { description: "OK" } } } },
      "/health/deep": {
        get: {
          summary: "Readiness: the control database, each shard and R2 each answer a probe that changes nothing",
          responses: {
            "200": { description: "Every binding answered", content: { "application/json": {} } },
            "503": { description: "A binding did not answer: `errors[].field` names it", content: { "application/json": {} } },
          },
        },
      },
      "/apiv2/jobs/{job}/errors.csv": {
        get: {
          summary: "Error report of a bulk upload job (CSV: row, column, reason, then the refused row), for the job's own panel",
          parameters: [
            { name: "job", in: "path", required: true, schema: { type: "string" } },
            { name: "apikey", in: "query", required: false, description: "The panel's API key (or Authorization: Bearer)", schema: { type: "string" } },
          ],
          responses: {
            "200": { description: "The report", content: { "text/csv": {} } },
            "401": { description: "The caller could not be authenticated", content: { "application/json": { schema: failureBody } } },
            "404": { description: "No such job in the key's panel, or no report (yet)", content: { "application/json": { schema: failureBody } } },
          },
        },
      },
      ...adminPaths(),
    },
  };
}
