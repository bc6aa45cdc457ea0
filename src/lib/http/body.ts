import { readAtMost } from "../bytes";
import { findInJson, jsonFieldName, parseCallerJson } from "../json";
import { ApiError, badRequest, invalidField } from "./errors";

/** Largest request body the API reads, in bytes; larger bodies are answered 413 unread. */
export const MAX_BODY_BYTES = 1024 * 1024;

function tooLarge(limit: number): ApiError {
  return new ApiError(413, `The request body is larger than the ${limit}-byte limit`, [
    { field: "body", message: `must be at most ${limit} bytes` },
  ]);
}

/** Reads the whole body of a request, refusing (413) as soon as it grows past `limit`. */
export async function readBodyBytes(request: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (declared > limit) throw tooLarge(limit);
  if (Number.isInteger(declared)) {
    // A declared length bounds what the connection delivers: one native read, much cheaper
    // than a chunk loop for the small bodies most calls send. The size is still checked.
    // No body reads as no bytes, as readAtMost reads it; `request.body` is not asked for, as
    // the runtime makes a stream object to answer it.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
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

// Bytes that are not UTF-8 would otherwise be stored as U+FFFD without a word. A body is
// decoded strictly; when that fails, it is decoded again leniently only to find the field
// whose text holds the replacement character, so the 400 can name it.
const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
const lenientDecoder = new TextDecoder("utf-8");
const hasReplacement = (text: string) => text.includes("\uFFFD");

function notUtf8(field: string): ApiError {
  return invalidField(field, "is not valid UTF-8");
}

/** The body as text, or a 400 naming the field that holds bytes that are not UTF-8 (`fieldOf` reads the lenient text). */
function bodyText(bytes: Uint8Array, fieldOf: (lenient: string) => string | null): string {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    throw notUtf8(fieldOf(lenientDecoder.decode(bytes)) ?? "body");
  }
}

function jsonFieldWithReplacement(text: string): string | null {
  const parsed = parseCallerJson(text);
  const path = parsed.ok ? findInJson(parsed.value, hasReplacement) : null;
  return path ? jsonFieldName(path) : null;
}

export async function readJsonBody(request: Request, limit = MAX_BODY_BYTES): Promise<unknown> {
  const text = bodyText(await readBodyBytes(request, limit), jsonFieldWithReplacement);
  if (text.trim() === "") throw badRequest("The request body is empty; a JSON body is required", [
    { field: "body", message: "is required" },
  ]);
  return parseJsonOrThrow(text);
}

export type Params = Record<string, unknown>;

const encoder = new TextEncoder();

/** One `application/x-www-form-urlencoded` name or value, decoded; null when its bytes are not UTF-8. */
function decodeFormComponent(raw: string): string | null {
  const text = raw.includes("+") ? raw.replace(/\+/g, " ") : raw;
  if (!text.includes("%")) return text;
  try {
    // The common case, well-formed escapes of UTF-8, in one native call; it throws on a stray
    // % and on bytes that are not UTF-8, which the byte-wise reading below then decides. A
    // leading BOM, which the strict decoder drops, is left to it too.
    const decoded = decodeURIComponent(text);
    if (decoded.charCodeAt(0) !== 0xfeff) return decoded;
  } catch {
    // read byte by byte below
  }
  const bytes: number[] = [];
  for (const [, hex, other] of text.matchAll(/%([0-9a-fA-F]{2})|([^%]+|%)/g)) {
    if (hex !== undefined) bytes.push(parseInt(hex, 16));
    else bytes.push(...encoder.encode(other));
  }
  try {
    return strictDecoder.decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
}

/**
 * Collects form fields into parameters: the first of a repeated name wins, and PHP's array
 * forms (`listid[]=4&listid[]=7`, `listid[0]=4&listid[1]=7`, what `http_build_query` writes for
 * an array) gather into one array under the bare name unless the bare name was given itself.
 */
class FormParams {
  readonly params: Params = {};
  /** Made at the first array form: most calls send none. */
  private arrays: Map<string, unknown[]> | undefined;

  add(name: string, value: unknown): void {
    // Only a name ending in `]` can be an array form: the others skip the pattern.
    const indexed = name.endsWith("]") ? /^([^[\]]+)\[(\d*)\]$/.exec(name) : null;
    if (indexed) {
      this.arrays ??= new Map();
      const items = this.arrays.get(indexed[1]!) ?? [];
      this.arrays.set(indexed[1]!, items);
      items.push(value);
      return;
    }
    if (!Object.hasOwn(this.params, name)) this.params[name] = value;
  }

  done(): Params {
    if (this.arrays) for (const [name, items] of this.arrays) if (!Object.hasOwn(this.params, name)) this.params[name] = items;
    return this.params;
  }
}

/** Form-encoded text (a query string or a body) as parameters (see FormParams). */
function fromFormText(text: string): Params {
  const params = new FormParams();
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const rawName = at < 0 ? pair : pair.slice(0, at);
    const name = decodeFormComponent(rawName);
    if (name === null) throw notUtf8([...new URLSearchParams(`${rawName}=`).keys()][0] ?? rawName);
    const value = decodeFormComponent(at < 0 ? "" : pair.slice(at + 1));
    if (value === null) throw notUtf8(name);
    params.add(name, value);
  }
  return params.done();
}

async function fromFormData(form: FormData): Promise<Params> {
  const params = new FormParams();
  for (const [key, value] of form) params.add(key, typeof value === "string" ? value : await value.text());
  return params.done();
}

function paramWithReplacement(params: Params): string | null {
  for (const [name, value] of Object.entries(params)) {
    const texts = Array.isArray(value) ? value : [value];
    if (hasReplacement(name) || texts.some((text) => typeof text === "string" && hasReplacement(text))) return name;
  }
  return null;
}

/** Text that starts with `{` and parses as caller JSON (a JSON object). */
function isJsonObjectText(text: string): boolean {
  return /^\s*\{/.test(text) && parseCallerJson(text).ok;
}

/**
 * Reads envelope parameters from the body, whatever form real clients use: form-urlencoded,
 * multipart or a JSON object. A body without a usable content type is read as JSON when it
 * looks like JSON and as form-urlencoded otherwise; one labelled form-urlencoded that is a JSON
 * object is read as JSON (what `curl -d '{...}'` sends).
 */
export async function readBodyParams(request: Request, limit = MAX_BODY_BYTES): Promise<Params> {
  if (request.method === "GET" || request.method === "HEAD") return {};
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) return {};
  const contentType = (request.headers.get("content-type") ?? "").toLowerCase();
  if (contentType.startsWith("multipart/form-data")) {
    let params: Params;
    try {
      const form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
      params = await fromFormData(form);
    } catch {
      throw badRequest("The multipart body could not be read", [{ field: "body", message: "is not valid multipart/form-data" }]);
    }
    bodyText(bytes, () => paramWithReplacement(params));
    return params;
  }
  // curl (`curl -d '{...}'`, PHP's CURLOPT_POSTFIELDS with json_encode) labels a JSON text
  // form-urlencoded; a form encoder never leaves a brace unescaped, so a form-labelled body
  // that starts with `{` and reads as JSON is read as the JSON object it is.
  const looksJson = (text: string) =>
    contentType.includes("json") || (contentType.includes("form-urlencoded") ? isJsonObjectText(text) : /^\s*[{[]/.test(text));
  const text = bodyText(bytes, (lenient) => (looksJson(lenient) ? jsonFieldWithReplacement(lenient) : paramWithReplacement(fromFormText(lenient))));
  if (!looksJson(text)) return fromFormText(text);
  const parsed = parseJsonOrThrow(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("The JSON body must be an object whose members are the parameters", [
      { field: "body", message: "must be a JSON object" },
    ]);
  }
  return parsed as Params;
}

export function readQueryParams(url: URL): Params {
  return fromFormText(url.search.slice(1));
}
