import { randomHex } from "../random";
import { currentObservation } from "../observability/context";
import type { ApiError } from "./errors";

/** One headers object for the answers that add none (most): Response copies what it is given. */
const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  return new Response(JSON.stringify(body), { status, headers: headers ? { ...JSON_HEADERS, ...headers } : JSON_HEADERS });
}

/** The `requestid` of an envelope response: 32 hex characters; within a request, the one its log line names. */
export function newRequestId(): string {
  return currentObservation()?.requestId ?? randomHex(16);
}

/** CONTRACT 2.1 success body: the operation's own members after requestid and result. */
export function envelopeSuccess(requestId: string, members: Record<string, unknown> = {}): Response {
  return json({ requestid: requestId, result: "Success", ...members });
}

/** CONTRACT 2.1 failure body; `errors` only when something is per field. */
export function envelopeFailure(requestId: string, error: ApiError): Response {
  const body: Record<string, unknown> = { requestid: requestId, result: "Failed", message: error.message };
  if (error.errors.length) body.errors = error.errors;
  return json(body, error.status);
}

/** The admin API's failure (CONTRACT 4): `errors` always present, empty when no one field is at fault. */
export function adminFailure(error: ApiError): Response {
  return json({ error: error.message, errors: error.errors }, error.status);
}

/** A CSV file download; `size` unknown for one written while it is sent. */
export function csvAttachment(body: ReadableStream, size: number | null, fileName: string): Response {
  const headers: Record<string, string> = { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${fileName}"` };
  if (size !== null) headers["content-length"] = String(size);
  return new Response(body, { headers });
}
