import { parseCallerJson } from "../../../lib/json";

/**
 * What providers post about sent SMS, read into one shape. Only final states matter:
 * delivered, or failed (undelivered, rejected, blocked); intermediate ones (queued, sent,
 * accepted) are acknowledged and ignored.
 */
export interface SmsReceipt {
  providerMessageId: string;
  outcome: "delivered" | "failed" | null;
  /** The provider's own words: status, error code, description. */
  detail: Record<string, string>;
  /** The provider refused the number because it opted out (Twilio 21610). */
  optedOut: boolean;
}

/** A Twilio StatusCallback (form fields MessageSid, MessageStatus, ErrorCode). */
export function twilioReceipt(params: URLSearchParams): SmsReceipt | null {
  const sid = params.get("MessageSid") ?? params.get("SmsSid");
  const status = (params.get("MessageStatus") ?? params.get("SmsStatus") ?? "").toLowerCase();
  if (!sid) return null;
  const errorCode = params.get("ErrorCode");
  const outcome = status === "delivered" ? "delivered" : status === "undelivered" || status === "failed" ? "failed" : null;
  const detail: Record<string, string> = { provider: "twilio", status };
  if (errorCode) detail.error_code = errorCode;
  return { providerMessageId: sid, outcome, detail, optedOut: errorCode === "21610" };
}

// MSG91's numeric report codes: 1 delivered; 2 failed, 9 NDNC, 16 rejected, 17 blocked, 25/26 rejected by the operator or DLT.
const MSG91_FAILED = new Set(["2", "9", "16", "17", "25", "26", "FAILED", "REJECTED", "NDNC", "BLOCKED", "UNDELIVERED"]);

/** A report's status or description as text: a string or a number as written, anything else none (an object's own `toString` is never called). */
const wordOf = (value: unknown): string => (typeof value === "string" || typeof value === "number" ? String(value) : "");

/**
 * An MSG91 delivery report. MSG91 posts `data` (a form field or the JSON body) holding a list of
 * requests, each with its `requestId` and a `report` per number (`status` code and `desc`);
 * newer accounts post flat objects (`requestId`, `status`, `number`). Both are read.
 */
export function msg91Receipts(contentType: string, text: string): SmsReceipt[] | null {
  let data: unknown;
  if (/^application\/x-www-form-urlencoded/i.test(contentType)) {
    const form = new URLSearchParams(text);
    const field = form.get("data");
    if (field === null) data = Object.fromEntries(form);
    else {
      const parsed = parseCallerJson(field);
      if (!parsed.ok) return null;
      data = parsed.value;
    }
  } else {
    const parsed = parseCallerJson(text);
    if (!parsed.ok) return null;
    data = parsed.value;
    if (typeof data === "object" && data !== null && !Array.isArray(data) && "data" in data) data = (data as { data: unknown }).data;
  }
  const requests = Array.isArray(data) ? data : [data];
  const receipts: SmsReceipt[] = [];
  for (const request of requests) {
    if (typeof request !== "object" || request === null) return null;
    const r = request as Record<string, unknown>;
    const id = r.requestId ?? r.request_id;
    if (typeof id !== "string" || !id) return null;
    const reports = Array.isArray(r.report) ? (r.report as unknown[]) : [r];
    for (const report of reports) {
      const p = (typeof report === "object" && report !== null ? report : {}) as Record<string, unknown>;
      const status = wordOf(p.status).toUpperCase();
      const desc = wordOf(p.desc ?? p.description);
      const outcome = status === "1" || status === "DELIVERED" ? "delivered" : MSG91_FAILED.has(status) ? "failed" : null;
      receipts.push({ providerMessageId: id, outcome, detail: { provider: "msg91", status, ...(desc ? { description: desc } : {}) }, optedOut: status === "9" || status === "NDNC" });
    }
  }
  return receipts;
}

/** Who replied and what, as a provider passes a reply on. */
export interface SmsReply {
  from: string;
  text: string;
}

/** A Twilio reply (form fields From, Body); Twilio's Advanced Opt-Out names the keyword's kind, and without it the body is read. */
export function twilioReply(params: URLSearchParams): SmsReply {
  const optOut = (params.get("OptOutType") ?? "").toUpperCase();
  return { from: params.get("From") ?? "", text: optOut === "STOP" || optOut === "START" ? optOut : (params.get("Body") ?? "") };
}

/** An MSG91 reply, posted as a form or as JSON: the number in mobile, number or sender; the text in message, keyword or content. */
export function msg91Reply(contentType: string, body: string): SmsReply {
  const fields = replyFields(contentType, body);
  return { from: fields.mobile ?? fields.number ?? fields.sender ?? "", text: fields.message ?? fields.keyword ?? fields.content ?? "" };
}

/** A reply's fields, their names in lower case. */
function replyFields(contentType: string, body: string): Record<string, string | undefined> {
  if (/json/i.test(contentType)) {
    try {
      const value = JSON.parse(body) as unknown;
      if (typeof value === "object" && value !== null && !Array.isArray(value)) {
        return Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (typeof v === "string" || typeof v === "number" ? [[k.toLowerCase(), String(v)]] : [])));
      }
    } catch {
      return {};
    }
    return {};
  }
  return Object.fromEntries([...new URLSearchParams(body)].map(([k, v]) => [k.toLowerCase(), v]));
}
