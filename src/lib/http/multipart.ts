import { concatBytes } from "../bytes";

/**
 * One file field of a multipart/form-data body, read as a stream: the bytes of the first part
 * whose name is among `names`, handed on as they arrive, so a large upload is never held whole
 * (request.formData() reads the entire body first). Other parts are skipped.
 */

const CRLF_CRLF = new Uint8Array([13, 10, 13, 10]);
const headerDecoder = new TextDecoder();
/** Headers of one part longer than this are refused (they are a few lines). */
const MAX_PART_HEADER_BYTES = 16 * 1024;

export class MultipartError extends Error {}

/** The boundary of a multipart/form-data content type, or null when it is not one. */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return match ? (match[1] ?? match[2])! : null;
}

/** Where `needle` first occurs in `haystack` at or after `from`, or -1. */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (let i = haystack.indexOf(first, from); i !== -1 && i <= last; i = haystack.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/**
 * The `name` of a part's Content-Disposition, from its header text: quoted, or a bare token as
 * .NET's MultipartFormDataContent writes it (`form-data; name=data; filename=events.csv`).
 */
function partName(headers: string): string | undefined {
  const disposition = headers.split("\r\n").find((line) => /^content-disposition\s*:/i.test(line));
  const match = disposition && /;\s*name=(?:"([^"]*)"|([^\s;"]+))/i.exec(disposition);
  return match ? (match[1] ?? match[2]) : undefined;
}

/**
 * The bytes of the first part named one of `names` (in the body's order), chunk by chunk;
 * throws MultipartError when the body is not well-formed or holds no such part. Bytes held at
 * a time: one chunk of the body and a boundary's length.
 */
export async function* multipartFileBytes(body: ReadableStream<Uint8Array>, boundary: string, names: readonly string[]): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  // Every delimiter but the first follows a CRLF: the body is read as if it began with one.
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const reader = body.getReader();
  let buffer: Uint8Array = encoder.encode("\r\n");
  let done = false;
  const more = async (): Promise<boolean> => {
    if (done) return false;
    const read = await reader.read();
    if (read.done) done = true;
    else buffer = concatBytes(buffer, read.value);
    return !read.done;
  };
  try {
    // Skips to the first delimiter (a preamble before it is ignored).
    for (;;) {
      const at = indexOfBytes(buffer, delimiter, 0);
      if (at !== -1) {
        buffer = buffer.subarray(at + delimiter.length);
        break;
      }
      buffer = buffer.subarray(Math.max(0, buffer.length - delimiter.length + 1));
      if (!(await more())) throw new MultipartError("the body holds no part");
    }
    for (;;) {
      // After a delimiter: `--` ends the body, else the part's headers up to a blank line.
      while (buffer.length < 2 && (await more()));
      if (buffer[0] === 45 && buffer[1] === 45) break;
      let end = indexOfBytes(buffer, CRLF_CRLF, 0);
      while (end === -1) {
        if (buffer.length > MAX_PART_HEADER_BYTES || !(await more())) throw new MultipartError("a part's headers do not end");
        end = indexOfBytes(buffer, CRLF_CRLF, 0);
      }
      const name = partName(headerDecoder.decode(buffer.subarray(0, end)));
      buffer = buffer.subarray(end + 4);
      const wanted = name !== undefined && names.includes(name);
      // The part's content runs to the next delimiter; bytes that may begin one are kept back.
      for (;;) {
        const at = indexOfBytes(buffer, delimiter, 0);
        if (at !== -1) {
          if (wanted && at > 0) yield buffer.subarray(0, at);
          buffer = buffer.subarray(at + delimiter.length);
          break;
        }
        const safe = buffer.length - delimiter.length + 1;
        if (safe > 0) {
          if (wanted) yield buffer.subarray(0, safe);
          buffer = buffer.subarray(safe);
        }
        if (!(await more())) throw new MultipartError("the body ends inside a part");
      }
      if (wanted) return;
    }
    throw new MultipartError(`the body holds no part named ${names.join(" or ")}`);
  } finally {
    reader.releaseLock();
  }
}

/**
 * Every field of a whole multipart/form-data body held in memory (the envelope's, at most 1 MiB),
 * in the body's order: each part's name and bytes. The runtime's formData() refuses a name
 * without quotes, which .NET's HttpClient writes. Throws MultipartError when the body is not
 * well-formed or a part has no name.
 */
export function multipartFields(bytes: Uint8Array, boundary: string): Array<[name: string, value: Uint8Array]> {
  const delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  // Every delimiter follows a CRLF except one that opens the body (no preamble before it).
  const opening = delimiter.subarray(2);
  const opens = bytes.length >= opening.length && opening.every((byte, i) => bytes[i] === byte);
  const first = opens ? 0 : indexOfBytes(bytes, delimiter, 0);
  if (first === -1) throw new MultipartError("the body holds no part");
  const fields: Array<[string, Uint8Array]> = [];
  // Past each delimiter: `--` ends the body, else a part's headers up to a blank line.
  for (let start = first + (opens ? opening.length : delimiter.length); ; ) {
    if (bytes[start] === 45 && bytes[start + 1] === 45) return fields;
    const headersEnd = indexOfBytes(bytes, CRLF_CRLF, start);
    if (headersEnd === -1 || headersEnd - start > MAX_PART_HEADER_BYTES) throw new MultipartError("a part's headers do not end");
    const name = partName(headerDecoder.decode(bytes.subarray(start, headersEnd)));
    if (name === undefined) throw new MultipartError("a part has no name");
    const next = indexOfBytes(bytes, delimiter, headersEnd + 4);
    if (next === -1) throw new MultipartError("the body ends inside a part");
    fields.push([name, bytes.subarray(headersEnd + 4, next)]);
    start = next + delimiter.length;
  }
}
