import type { IRequest } from "itty-router";
import { receiveSmsHook, smsHookPanel } from "../services/journeys/sms-hooks";
import { followSmsLink } from "../services/journeys/sms";
import { readBodyBytes } from "../lib/http/body";
import { ApiError } from "../lib/http/errors";
import { decodeOrKeep } from "../lib/uri";

/**
 * What SMS providers post back: delivery reports (receipts) and replies, at
 * /hooks/sms/{provider}/{panel}/{token}[/replies] (services/journeys/sms-hooks.ts). Anything
 * that does not match answers 404 (403 for a bad Twilio signature) and changes nothing.
 */

const NO_STORE = { "cache-control": "no-store, private" };

function text(status: number, body: string, type = "text/plain; charset=utf-8"): Response {
  return new Response(body, { status, headers: { "content-type": type, ...NO_STORE } });
}

export async function handleSmsHook(request: IRequest, env: Env, kind: "receipts" | "replies"): Promise<Response> {
  const provider = request.params.provider!;
  const hook = await smsHookPanel(env, provider, decodeOrKeep(request.params.panel!), request.params.token!);
  if (!hook) return text(404, "not found");
  let body: string;
  try {
    body = new TextDecoder().decode(await readBodyBytes(request));
  } catch (error) {
    if (error instanceof ApiError) return text(error.status, error.message);
    throw error;
  }
  const post = { kind, url: request.url, signature: request.headers.get("x-twilio-signature") ?? "", contentType: request.headers.get("content-type") ?? "", body };
  const outcome = await receiveSmsHook(env, hook, post, Date.now());
  switch (outcome.kind) {
    case "bad-signature":
      return text(403, "X-Twilio-Signature does not match");
    case "refused":
      return text(400, outcome.reason);
    case "reply":
      return provider === "twilio" ? text(200, "<Response/>", "text/xml") : text(200, "ok");
    case "receipts":
      return text(200, outcome.matched ? "ok" : "ok: no such message");
  }
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
