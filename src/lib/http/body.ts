import { readAtMost } from "../bytes";
import { jsonFieldName, parseCallerJson } from "../json";
import { ApiError, badRequest, invalidField } from "./errors";

/** Largest request body the API reads, in bytes; larger bodies are answered 413 unread. */
export const MAX_BODY_BYTES = 1024 * 1024;

function tooLarge(limit: number): ApiError {
  return new ApiError(413, `The request body is larger than the ${limit}-byte limit`, [
    { field: "body", message: `must be at most ${limit} bytes` },
  ]);
}

/** Reads the whole body of a request, refusing (413) as soon as it grows past `limit`. */
export async function readBodyBytes(request: Pick<Request, "headers" | "body">, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (declared > limit) throw tooLarge(limit);
  const bytes = await readAtMost(request.body, limit);
  if (!bytes) throw tooLarge(limit);
  return bytes;
}

/** Caller JSON (lib/json.ts rules) or a 400 naming where it went wrong; `prefix` names the parameter that held the text. */
export function parseJsonOrThrow(text: string, prefix?: string): unknown {
  const parsed = parseCallerJson(text);
  if (!parsed.ok) throw invalidField(jsonFieldName(parsed.path, prefix), parsed.reason);
  return parsed.value;
}

export async function readJsonBody(request: Request, limit = MAX_BODY_BYTES): Promise<unknown> {
  const text = new TextDecoder().decode(await readBodyBytes(request, limit));
  if (text.trim() === "") throw badRequest("The request body is empty; a JSON body is required", [
    { field: "body", message: "is required" },
  ]);
  return parseJsonOrThrow(text);
}

export type Params = Record<string, unknown>;

function fromSearchParams(search: URLSearchParams): Params {
  const params: Params = {};
  for (const [key, value] of search) if (!(key in params)) params[key] = value;
  return params;
}

async function fromFormData(form: FormData): Promise<Params> {
  const params: Params = {};
  for (const [key, value] of form) {
    if (key in params) continue;
    params[key] = typeof value === "string" ? value : await value.text();
  }
  return params;
}

/**
 * Reads envelope parameters from the body, whatever form real clients use: form-urlencoded,
 * multipart or a JSON object. A body without a usable content type is read as JSON when it
 * looks like JSON and as form-urlencoded otherwise (what `curl -d` sends).
 */
export async function readBodyParams(request: Request, limit = MAX_BODY_BYTES): Promise<Params> {
  if (request.method === "GET" || request.method === "HEAD") return {};
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) return {};
  const contentType = (request.headers.get("content-type") ?? "").toLowerCase();
  if (contentType.startsWith("multipart/form-data")) {
    try {
      const form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
      return await fromFormData(form);
    } catch {
      throw badRequest("The multipart body could not be read", [{ field: "body", message: "is not valid multipart/form-data" }]);
    }
  }
  const text = new TextDecoder().decode(bytes);
  const looksJson = contentType.includes("json") || (!contentType.includes("form-urlencoded") && /^\s*[{[]/.test(text));
  if (!looksJson) return fromSearchParams(new URLSearchParams(text));
  const parsed = parseJsonOrThrow(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("The JSON body must be an object whose members are the parameters", [
      { field: "body", message: "must be a JSON object" },
    ]);
  }
  return parsed as Params;
}

export function readQueryParams(url: URL): Params {
  return fromSearchParams(url.searchParams);
}
