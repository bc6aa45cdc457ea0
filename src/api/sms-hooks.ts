import type { IRequest } from "itty-router";
import { findPanelHome } from "../services/access/shards";
import { msg91Receipts, twilioReceipt, type SmsReceipt } from "../services/channels/sms/receipts";
import { panelSms } from "../services/channels/sms/settings";
import { twilioSignature } from "../services/channels/sms/twilio";
import { followSmsLink, recordSmsReceipts, recordSmsReply } from "../services/journeys/sms";
import { constantTimeEqual } from "../lib/crypto";
import { readBodyBytes } from "../lib/http/body";
import { ApiError } from "../lib/http/errors";
import { decodeOrKeep } from "../lib/uri";

/**
 * What SMS providers post back: delivery reports (receipts) and replies, at
 * /hooks/sms/{provider}/{panel}/{token}[/replies]. The path token (a secret of the panel's SMS
 * settings) authenticates MSG91, which signs nothing; Twilio's requests must also carry a valid
 * X-Twilio-Signature made with the panel's auth token. Anything that does not match answers
 * 404 (403 for a bad signature) and changes nothing.
 */

const NO_STORE = { "cache-control": "no-store, private" };

function text(status: number, body: string, type = "text/plain; charset=utf-8"): Response {
  return new Response(body, { status, headers: { "content-type": type, ...NO_STORE } });
}

export async function handleSmsHook(request: IRequest, env: Env, kind: "receipts" | "replies"): Promise<Response> {
  const provider = request.params.provider!;
  const panelId = decodeOrKeep(request.params.panel!);
  const home = await findPanelHome(env, panelId);
  const sms = home ? await panelSms(env, home.db, panelId) : null;
  if (!home || !sms || sms.record.provider !== provider || !constantTimeEqual(request.params.token!, sms.hookToken)) return text(404, "not found");
  let body: string;
  try {
    body = new TextDecoder().decode(await readBodyBytes(request));
  } catch (error) {
    if (error instanceof ApiError) return text(error.status, error.message);
    throw error;
  }
  const now = Date.now();
  if (provider === "twilio") {
    const params = new URLSearchParams(body);
    const signature = request.headers.get("x-twilio-signature") ?? "";
    if (!constantTimeEqual(signature, await twilioSignature(sms.credential, request.url, params))) return text(403, "X-Twilio-Signature does not match");
    if (kind === "replies") {
      // Twilio's Advanced Opt-Out names the keyword's kind; without it the body is read.
      const optOut = (params.get("OptOutType") ?? "").toUpperCase();
      await recordSmsReply(home.db, panelId, params.get("From") ?? "", optOut === "STOP" || optOut === "START" ? optOut : (params.get("Body") ?? ""), now);
      return text(200, "<Response/>", "text/xml");
    }
    const receipt = twilioReceipt(params);
    if (!receipt) return text(400, "MessageSid is required");
    return receiptsAnswer(await recordSmsReceipts(env, home.db, panelId, [receipt], now));
  }
  const contentType = request.headers.get("content-type") ?? "";
  if (kind === "replies") {
    const fields = readFields(contentType, body);
    const from = fields.mobile ?? fields.number ?? fields.sender ?? "";
    const message = fields.message ?? fields.keyword ?? fields.content ?? "";
    if (!from) return text(400, "the reply names no number (mobile or number)");
    await recordSmsReply(home.db, panelId, from, message, now);
    return text(200, "ok");
  }
  const receipts: SmsReceipt[] | null = msg91Receipts(contentType, body);
  if (!receipts) return text(400, "not an MSG91 delivery report: each entry needs a requestId");
  return receiptsAnswer(await recordSmsReceipts(env, home.db, panelId, receipts, now));
}

/** A receipt of a message the panel does not have is acknowledged (the provider would retry it forever) and ignored. */
function receiptsAnswer(result: { matched: number }): Response {
  return text(200, result.matched ? "ok" : "ok: no such message");
}

/** A reply's fields, posted as a form or as JSON. */
function readFields(contentType: string, body: string): Record<string, string | undefined> {
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

/** GET (and HEAD) /s/{code}: redirects to the link the SMS carried, never elsewhere; a visit records a click. */
export async function handleShortLink(request: IRequest, env: Env): Promise<Response> {
  const reader: { ip_addr?: string; user_agent?: string } = {};
  const ip = request.headers.get("cf-connecting-ip");
  const agent = request.headers.get("user-agent");
  if (ip) reader.ip_addr = ip;
  if (agent) reader.user_agent = agent.slice(0, 1000);
  const url = await followSmsLink(env, request.params.code!, reader, request.method === "HEAD", Date.now());
  if (!url) return text(404, "This link is not valid.");
  return new Response(null, { status: 302, headers: { location: url, ...NO_STORE } });
}
