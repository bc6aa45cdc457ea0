import { fetchOutbound, OutboundError } from "../../lib/outbound";
import { R2Upload } from "../../lib/r2-upload";
import { limitTransfer, type TransferLimits } from "../../lib/transfer-limits";
import type { ImportSource } from "../../store/imports";
import { ImportFailure, TransientImportError } from "./errors";

/**
 * Largest file an import accepts: 1 GiB, about 15 million rows of NAME, EMAIL, MOBILE, AGE,
 * CITY. The file is streamed into R2 (never held in memory), so the cap is about R2 storage
 * and import time, not the Worker's memory.
 */
export const MAX_IMPORT_BYTES = 1024 * 1024 * 1024;

// Content types a CSV is commonly served with; anything else (an image, a zip, a PDF, a web page
// such as a sign-in form in place of the file) is refused before a byte is stored. Files of
// these types are still checked for binary content.
const TEXT_TYPES = /^(text\/(?!html\b)|application\/(csv|x-csv|vnd\.ms-excel|octet-stream|binary|download|force-download)\b|binary\/octet-stream)/i;

function mib(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}

/**
 * Downloads one source into R2 under `source.key`, streaming, within `limits` (a deadline and
 * a minimum rate, so a hostile source holds a consumer a bounded time): with a Content-Length
 * the body goes to R2 through a FixedLengthStream (R2 needs a known length), without one
 * through R2Upload in bounded parts. Returns the stored size.
 */
export async function downloadSource(env: Env, source: ImportSource, limits: TransferLimits): Promise<number> {
  const url = source.url!;
  const startedAt = Date.now();
  let response: Response;
  try {
    response = await fetchOutbound(
      env,
      url,
      { headers: { accept: "text/csv, text/plain;q=0.9, */*;q=0.5" } },
      { timeoutMs: limits.deadlineMs, headersTimeoutMs: limits.headersMs, maxRedirects: 3 },
    );
  } catch (error) {
    if (error instanceof OutboundError && error.code === "timeout") throw new TransientImportError(`The file could not be downloaded: ${error.message}`);
    const message = error instanceof Error ? error.message : String(error);
    throw new ImportFailure(`The file could not be downloaded: ${message}`);
  }
  const host = new URL(url).host;
  if (response.status >= 500 || response.status === 429 || response.status === 408) {
    await response.body?.cancel();
    throw new TransientImportError(`The file could not be downloaded: ${host} answered HTTP ${response.status}`);
  }
  if (response.status < 200 || response.status > 299) {
    await response.body?.cancel();
    const what = response.status >= 300 && response.status < 400 ? "redirected too often or without a location" : `answered HTTP ${response.status}`;
    throw new ImportFailure(`The file could not be downloaded: ${host} ${what}`);
  }
  const contentType = response.headers.get("content-type")?.trim() ?? "";
  if (contentType !== "" && !TEXT_TYPES.test(contentType)) {
    await response.body?.cancel();
    throw new ImportFailure(`The file is not a CSV file: it is served as ${contentType.split(";")[0]}`);
  }
  const declared = response.headers.get("content-length");
  const encoded = (response.headers.get("content-encoding") ?? "identity").toLowerCase() !== "identity";
  const length = declared !== null && /^\d+$/.test(declared) && !encoded ? Number(declared) : null;
  if (length !== null && length > MAX_IMPORT_BYTES) {
    await response.body?.cancel();
    throw new ImportFailure(`The file is too large: ${mib(length)}; the limit is ${mib(MAX_IMPORT_BYTES)}`);
  }
  const options = { httpMetadata: { contentType: "text/csv" } };
  if (!response.body || length === 0) {
    await env.FILES.put(source.key, new Uint8Array(0), options);
    return 0;
  }
  const body = limitTransfer(response.body, limits, host, startedAt);
  try {
    if (length !== null) return await putKnownLength(env, source.key, body, length, options);
    return await streamUnknownLength(env, source.key, body, options);
  } catch (error) {
    if (error instanceof ImportFailure) throw error;
    // The connection broke or R2 failed mid-transfer: worth another try.
    throw new TransientImportError(`The file could not be downloaded completely: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function putKnownLength(env: Env, key: string, body: ReadableStream<Uint8Array>, length: number, options: R2PutOptions): Promise<number> {
  const fixed = new FixedLengthStream(length);
  // A failure of the source (too slow, broken) aborts the put; the pipe's rejection says why.
  let failure: unknown;
  const piped = body.pipeTo(fixed.writable).catch((error: unknown) => void (failure = error));
  try {
    const stored = await env.FILES.put(key, fixed.readable, options);
    await piped;
    if (failure !== undefined) throw failure;
    return stored.size;
  } catch (error) {
    await piped;
    throw failure ?? error;
  }
}

async function streamUnknownLength(env: Env, key: string, body: ReadableStream<Uint8Array>, options: R2PutOptions): Promise<number> {
  const upload = new R2Upload(env.FILES, key, options);
  try {
    for await (const bytes of body) {
      if (upload.size + bytes.length > MAX_IMPORT_BYTES) {
        throw new ImportFailure(`The file is too large: more than ${mib(MAX_IMPORT_BYTES)}, the limit`);
      }
      await upload.write(bytes);
    }
    await upload.close();
    return upload.size;
  } catch (error) {
    await upload.abort().catch(() => undefined);
    await body.cancel().catch(() => undefined);
    throw error;
  }
}
