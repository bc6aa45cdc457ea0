import { readAtMost } from "../bytes";
import { findInJson, jsonFieldName, parseCallerJson } from "../json";
import { ApiError, badRequest, invalidField } from "./errors";
import { multipartBoundary, MultipartError, multipartFields } from "./multipart";

/** Largest request body the API reads, in bytes; larger bodies are answered 413 unread. */
export const MAX_BODY_BYTES = 1024 * 1024;

function tooLarge(limit: number): ApiError {
  return new ApiError(413, `The request body is larger than the ${limit}-byte limit`, [
    { field: "body", message: `must be at most ${limit} bytes` },
  ]);
}

/** Content codings of a request body the runtime can decode, by their HTTP names (RFC 9110 8.4.1). */
const DECODERS = new Map<string, "gzip" | "deflate">([["gzip", "gzip"], ["x-gzip", "gzip"], ["deflate", "deflate"]]);

/**
 * The request's body as its sender wrote it before compressing: a client or SDK may gzip a large
 * upload (`Content-Encoding: gzip`), which the platform hands on as sent. No coding (or
 * `identity`): the body as it is. A coding the runtime cannot decode is refused 415 (RFC 7694);
 * bytes that are not what their coding says, 400 when read.
 */
export function decodedBody(request: Request): ReadableStream<Uint8Array> | null {
  const header = request.headers.get("content-encoding");
  const codings = header === null ? [] : header.split(",").map((coding) => coding.trim().toLowerCase()).filter((coding) => coding !== "" && coding !== "identity");
  if (codings.length === 0 || !request.body) return request.body;
  const format = codings.length === 1 ? DECODERS.get(codings[0]!) : undefined;
  if (format === undefined) throw invalidField("Content-Encoding", `must be gzip or deflate (or none), not ${header!.trim()}`, 415);
  const reader = request.body.pipeThrough(new DecompressionStream(format)).getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch {
        controller.error(invalidField("body", `is not valid ${codings[0]} data, as its Content-Encoding says`));
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** Reads the whole body of a request (decoded from its Content-Encoding), refusing (413) as soon as it grows past `limit`. */
export async function readBodyBytes(request: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  if (request.headers.has("content-encoding")) return readDecodedBytes(request, limit);
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

/** A body with a Content-Encoding: `limit` bounds what it decodes to, so a small bomb stops early. */
async function readDecodedBytes(request: Request, limit: number): Promise<Uint8Array> {
  const bytes = await readAtMost(decodedBody(request), limit);
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
 * Collects form fields into parameters as real clients encode them. A name given once is its
 * value; given again with the same value, still that value (a key appended twice by a client
 * library); with other values, all of them in order, as one array (`listid=4&listid=7`, what
 * Python's requests and URLSearchParams write for a list). PHP's and jQuery's bracket forms
 * gather under the bare name unless the bare name was given itself: `listid[]=4&listid[]=7` and
 * `listid[0]=4&listid[1]=7` an array, `data[EMAIL]=a&data[NAME]=b` an object (what
 * `http_build_query` and `$.post` write for a nested array or object).
 */
class FormParams {
  readonly params: Params = {};
  /** Names given again with another value: their values so far. */
  private repeated: Map<string, unknown[]> | undefined;
  /** Made at the first bracket form: most calls send none. Each bare name's keys and values, in order. */
  private bracketed: Map<string, Array<[key: string, value: unknown]>> | undefined;

  add(name: string, value: unknown): void {
    // Only a name ending in `]` can be a bracket form: the others skip the pattern.
    const bracket = name.endsWith("]") ? /^([^[\]]+)\[([^[\]]*)\]$/.exec(name) : null;
    if (bracket) {
      this.bracketed ??= new Map();
      const entries = this.bracketed.get(bracket[1]!) ?? [];
      this.bracketed.set(bracket[1]!, entries);
      entries.push([bracket[2]!, value]);
      return;
    }
    if (!Object.hasOwn(this.params, name)) {
      this.params[name] = value;
      return;
    }
    const values = this.repeated?.get(name);
    if (values) {
      if (!values.includes(value)) values.push(value);
    } else if (this.params[name] !== value) {
      this.repeated ??= new Map();
      const gathered = [this.params[name], value];
      this.repeated.set(name, gathered);
      this.params[name] = gathered;
    }
  }

  done(): Params {
    if (this.bracketed) {
      for (const [name, entries] of this.bracketed) if (!Object.hasOwn(this.params, name)) this.params[name] = bracketValue(entries);
    }
    return this.params;
  }
}

/** Bracket forms' value: an array when every key is empty or an index, else an object (the first of a repeated key wins). */
function bracketValue(entries: ReadonlyArray<[key: string, value: unknown]>): unknown[] | Record<string, unknown> {
  if (entries.every(([key]) => key === "" || /^\d+$/.test(key))) return entries.map(([, value]) => value);
  const first = new Map<string, unknown>();
  for (const [key, value] of entries) if (key !== "" && !first.has(key)) first.set(key, value);
  // fromEntries defines own members, so a key such as `__proto__` is a member like any other.
  return Object.fromEntries(first);
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

/** A multipart body's fields as parameters (see FormParams); a file part's value is its text. */
function fromMultipart(bytes: Uint8Array, boundary: string | null): Params {
  const params = new FormParams();
  try {
    if (boundary === null) throw new MultipartError("no boundary");
    for (const [name, value] of multipartFields(bytes, boundary)) params.add(name, lenientDecoder.decode(value));
  } catch (error) {
    if (!(error instanceof MultipartError)) throw error;
    throw badRequest("The multipart body could not be read", [{ field: "body", message: "is not valid multipart/form-data" }]);
  }
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
/** A form's first field name (brackets and escapes allowed) and its `=`. */
const FORM_TEXT_START = /^[A-Za-z_][\w.%[\]-]*=/;

export async function readBodyParams(request: Request, limit = MAX_BODY_BYTES): Promise<Params> {
  if (request.method === "GET" || request.method === "HEAD") return {};
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) return {};
  const givenType = request.headers.get("content-type") ?? "";
  const contentType = givenType.toLowerCase();
  if (contentType.startsWith("multipart/form-data")) {
    // The boundary as sent, in its case (a browser's FormData writes `----WebKitFormBoundary7MA4…`).
    const params = fromMultipart(bytes, multipartBoundary(givenType));
    bodyText(bytes, () => paramWithReplacement(params));
    return params;
  }
  // curl (`curl -d '{...}'`, PHP's CURLOPT_POSTFIELDS with json_encode) labels a JSON text
  // form-urlencoded; a form encoder never leaves a brace unescaped, so a form-labelled body
  // that starts with `{` and reads as JSON is read as the JSON object it is.
  // The mirror: jQuery's $.ajax with `contentType: "application/json"` and an object as `data`
  // sends that object form-encoded under the JSON label. No JSON text starts with a name and `=`.
  const looksJson = (text: string) =>
    contentType.includes("json") ? !FORM_TEXT_START.test(text) : contentType.includes("form-urlencoded") ? isJsonObjectText(text) : /^\s*[{[]/.test(text);
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
