import { recordBounce, recordComplaint, trackClick, trackOpen, unsubscribeRecipient } from "../services/broadcasts/engagement";
import type { EmailProviderSecrets } from "../services/channels/email/provider";
import { readSesNotification } from "../services/channels/email/ses-notifications";
import { recipientOf, recipientPreferences, resubscribe } from "../services/channels/email/recipient-choice";
import { isJourneyClaim, TrackingSigner } from "../services/channels/email/tracking";
import { invalidLinkPage, ONE_CLICK_NOTICE, preferenceNotice, preferencesPage, RESUBSCRIBE_LABEL, unsubscribeNotice, unsubscribePage } from "../domain/unsubscribe-page";
import { emailLinkConsentStatements, type ConsentClient } from "../services/consent/record";
import { recipientTopics } from "../services/topics/choices";
import { PREFERENCE_CHANNELS, type PreferenceChannel, type PreferencesChange } from "../domain/preferences";
import { escapeHtml } from "../domain/merge-tags";
import { recordJourneyBounce, recordJourneyComplaint, trackJourneyClick, trackJourneyOpen, unsubscribeJourneyRecipient, type ReaderDetails } from "../services/journeys/engagement";
import { constantTimeEqual } from "../lib/crypto";
import { readBodyBytes } from "../lib/http/body";
import { ApiError } from "../lib/http/errors";
import { config } from "../lib/config";

/** The 1x1 transparent GIF of the open pixel. */
const PIXEL = Uint8Array.from(atob("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"), (c) => c.charCodeAt(0));
const NO_STORE = { "cache-control": "no-store, private" };

function page(status: number, title: string, body: string): Response {
  return new Response(
    `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>` +
      `<body style="font-family:sans-serif;max-width:32rem;margin:3rem auto"><h1>${escapeHtml(title)}</h1>${body}</body></html>`,
    { status, headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE } },
  );
}

/** The reader's address and mail client, which journey webhooks report (spec 2.8). */
function readerOf(request: Request): ReaderDetails {
  const reader: ReaderDetails = {};
  const ip = request.headers.get("cf-connecting-ip");
  const agent = request.headers.get("user-agent");
  if (ip) reader.ip_addr = ip;
  if (agent) reader.user_agent = agent.slice(0, 1000);
  return reader;
}

/**
 * HEAD of a tracking or unsubscribe link (link checkers, mail scanners): the answer GET would
 * give, without its body, and nothing recorded.
 */
export async function handleTrackingHead(kind: string, token: string, request: Request, env: Env): Promise<Response> {
  const handler = kind === "o" ? handleOpen : kind === "c" ? handleClick : kind === "p" ? handlePreferences : handleUnsubscribe;
  const answer = await handler(token, request, env);
  await answer.body?.cancel();
  return new Response(null, { status: answer.status, headers: answer.headers });
}

/** A request that reads a link without following it: nothing is recorded for it. */
function onlyLooks(request: Request): boolean {
  return request.method === "HEAD";
}

/**
 * GET /t/o/{token}: the pixel, always; only a genuine token of a sent message counts. A
 * campaign token counts on the campaign; a journey token records the open of its msgid.
 */
export async function handleOpen(token: string, request: Request, env: Env): Promise<Response> {
  const claim = await new TrackingSigner(config(env).secretsKey).verify(token, "open");
  if (claim && !onlyLooks(request)) await (isJourneyClaim(claim) ? trackJourneyOpen(env, claim, readerOf(request), Date.now()) : trackOpen(env, claim, Date.now()));
  return new Response(PIXEL, { headers: { "content-type": "image/gif", ...NO_STORE } });
}

/** GET /t/c/{token}: redirects only to the link signed into the token, never to one from outside. */
export async function handleClick(token: string, request: Request, env: Env): Promise<Response> {
  const claim = await new TrackingSigner(config(env).secretsKey).verify(token, "click");
  if (!claim?.url) return page(404, "Link not found", "<p>This link is not valid.</p>");
  if (!onlyLooks(request)) await (isJourneyClaim(claim) ? trackJourneyClick(env, claim, readerOf(request), Date.now()) : trackClick(env, claim, Date.now()));
  return new Response(null, { status: 302, headers: { location: claim.url, ...NO_STORE } });
}

function htmlPage(page: { status: number; html: string }): Response {
  return new Response(page.html, { status: page.status, headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE } });
}

/** The page of a link that is not valid, for a visitor's link no route takes (a mail client cut it short). */
export function invalidLinkAnswer(): Response {
  return htmlPage(invalidLinkPage());
}

/** Form bodies larger than this are not read: an unsubscribe form holds one field. */
const MAX_FORM_BYTES = 16 * 1024;

/**
 * What a POST to an unsubscribe link asks for: `action=resubscribe` from the page's "Subscribe
 * again" form; anything else (the page's button, the RFC 8058 one-click POST whatever its body)
 * unsubscribes.
 */
async function postedAction(request: Request): Promise<"resubscribe" | "unsubscribe" | "leave_topic"> {
  const type = request.headers.get("content-type") ?? "";
  const length = Number(request.headers.get("content-length") ?? "0");
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type) || !(length <= MAX_FORM_BYTES)) return "unsubscribe";
  try {
    const action = (await request.formData()).get("action");
    return action === "resubscribe" || action === "leave_topic" ? action : "unsubscribe";
  } catch {
    return "unsubscribe";
  }
}

/** The visitor's address and browser, for a consent record (kept as the panel's form settings say). */
function consentClientOf(request: Request): ConsentClient {
  return { ip: request.headers.get("cf-connecting-ip"), userAgent: request.headers.get("user-agent") };
}

/**
 * Whether an unsubscribe POST came from the page's button (a browser's navigation) or from a mail
 * client's one-click POST (RFC 8058, sent by the mailbox provider's servers, no Fetch metadata):
 * both post `List-Unsubscribe=One-Click`, so only the request's own headers tell them apart.
 */
function unsubscribeVia(request: Request): "unsubscribe_page" | "one_click" {
  return request.headers.get("sec-fetch-mode") === "navigate" || request.headers.has("sec-fetch-site") ? "unsubscribe_page" : "one_click";
}

/**
 * /t/u/{token}: GET shows the page that names the sender and asks to confirm, or the state the
 * address is in (already unsubscribed, with the way back; stopped by bounces). Link scanners
 * follow GETs, so a GET changes nothing. POST unsubscribes, from the page's button and as the
 * RFC 8058 one-click POST of List-Unsubscribe-Post; `action=resubscribe` takes it back.
 */
export async function handleUnsubscribe(token: string, request: Request, env: Env): Promise<Response> {
  const claim = await new TrackingSigner(config(env).secretsKey).verify(token, "unsubscribe");
  const found = claim ? await recipientOf(env, claim) : null;
  if (!claim || !found) return htmlPage(invalidLinkPage());
  const view = { ...found, facts: { ...found.facts, preferencesPath: `/t/p/${token}` } };
  if (request.method === "POST") {
    const action = await postedAction(request);
    // A topic's message: leaving the topic alone keeps the address subscribed to everything else.
    // Without a topic (deleted since) it changes nothing: the page is shown again, never an unsubscribe from everything.
    if (action === "leave_topic") {
      if (!view.facts.topic) return htmlPage(unsubscribePage(view.suppressed === "hard_bounce" ? "bounced" : view.suppressed ? "already_unsubscribed" : "subscribed", view.facts));
      const wanted = new Map([[view.facts.topic.id, false]]);
      await recipientTopics(env, claim.panelId, view, { wanted, via: "unsubscribe_page", client: consentClientOf(request), panelName: view.facts.panelName });
      return htmlPage(unsubscribePage("left_topic", view.facts));
    }
    if (action === "resubscribe") {
      const lifts = view.suppressed !== "hard_bounce" && view.suppressed !== null;
      const client = consentClientOf(request);
      await resubscribe(view, claim.panelId, lifts ? (db) => emailLinkConsentStatements(db, claim.panelId, view.contactId, "unsubscribe_page", client, [{ kind: "subscribe", text: RESUBSCRIBE_LABEL }]) : undefined);
      return htmlPage(unsubscribePage(view.suppressed === "hard_bounce" ? "bounced" : "resubscribed", view.facts));
    }
    const via = unsubscribeVia(request);
    const act = { kind: "unsubscribe" as const, text: via === "one_click" ? ONE_CLICK_NOTICE : unsubscribeNotice(view.facts.panelName) };
    const client = consentClientOf(request);
    // The consent record only of an address that was not stopped already, written with the stop.
    const proof = view.suppressed === null ? (db: Parameters<typeof emailLinkConsentStatements>[0]) => emailLinkConsentStatements(db, claim.panelId, view.contactId, via, client, [act]) : undefined;
    // On the shard holding the message and its contact (its partition's; the home for a panel without a map).
    const done = await (isJourneyClaim(claim) ? unsubscribeJourneyRecipient(env, claim, Date.now(), proof, view.contactDb) : unsubscribeRecipient(env, claim, Date.now(), proof, view.contactDb));
    if (!done) return htmlPage(invalidLinkPage());
    return htmlPage(unsubscribePage(view.suppressed === "unsubscribe" || view.suppressed === "complaint" ? "already_unsubscribed" : "unsubscribed", view.facts));
  }
  const state = view.suppressed === "hard_bounce" ? "bounced" : view.suppressed ? "already_unsubscribed" : "subscribed";
  return htmlPage(unsubscribePage(state, view.facts));
}

/** What a preference form showed: its channels and topics, each set as its box was left. */
interface PostedPreferences {
  channels: PreferencesChange | null;
  topics: Map<string, boolean>;
}

async function postedPreferences(request: Request): Promise<PostedPreferences | null> {
  const type = request.headers.get("content-type") ?? "";
  const length = Number(request.headers.get("content-length") ?? "0");
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type) || !(length <= MAX_FORM_BYTES)) return null;
  try {
    const form = await request.formData();
    const change: PreferencesChange = {};
    for (const shown of form.getAll("shown")) {
      if ((PREFERENCE_CHANNELS as readonly unknown[]).includes(shown)) change[shown as PreferenceChannel] = form.get(shown as string) === "subscribed" ? "subscribed" : "unsubscribed";
    }
    const checked = new Set(form.getAll("topic").filter((v) => typeof v === "string"));
    const topics = new Map<string, boolean>();
    for (const shown of form.getAll("shown_topic")) if (typeof shown === "string") topics.set(shown, checked.has(shown));
    const channels = Object.keys(change).length ? change : null;
    return channels || topics.size ? { channels, topics } : null;
  } catch {
    return null;
  }
}

/**
 * /t/p/{token} (the unsubscribe link's token): GET shows the contact's channels and the panel's
 * topics with a box each; POST saves the boxes. Like the unsubscribe page, a GET changes nothing.
 */
export async function handlePreferences(token: string, request: Request, env: Env): Promise<Response> {
  const claim = await new TrackingSigner(config(env).secretsKey).verify(token, "unsubscribe");
  const view = claim ? await recipientOf(env, claim) : null;
  if (!claim || !view) return htmlPage(invalidLinkPage());
  const posted = request.method === "POST" ? await postedPreferences(request) : null;
  const change = posted?.channels ?? null;
  const client = consentClientOf(request);
  // Each channel the post changed, as a consent record written in the batch that changes it.
  const proof = (db: Parameters<typeof emailLinkConsentStatements>[0], changed: PreferencesChange) =>
    emailLinkConsentStatements(db, claim.panelId, view.contactId, "preference_page", client, preferenceActs(changed, view.facts.panelName));
  // Email left from this page counts as the message's unsubscribe, as the link's does (counter, event, journeys' waits).
  if (change?.email === "unsubscribed" && view.suppressed === null) {
    const leaveEmail = (db: Parameters<typeof proof>[0]) => proof(db, { email: "unsubscribed" });
    await (isJourneyClaim(claim) ? unsubscribeJourneyRecipient(env, claim, Date.now(), leaveEmail, view.contactDb) : unsubscribeRecipient(env, claim, Date.now(), leaveEmail, view.contactDb));
  }
  // The contact's channels are read once, after that unsubscribe: the email it stopped is no change here.
  const preferences = await recipientPreferences(env, claim, view, change ?? undefined, proof);
  if (!preferences) return htmlPage(invalidLinkPage());
  const topicChange = posted?.topics.size ? { wanted: posted.topics, via: "preference_page" as const, client: consentClientOf(request), panelName: view.facts.panelName } : undefined;
  const topics = await recipientTopics(env, claim.panelId, view, topicChange);
  const pageTopics = topics.map(({ topic, joined }) => ({ id: topic.id, name: topic.name, description: topic.description, joined }));
  return htmlPage(preferencesPage(view.facts, preferences, posted !== null, pageTopics));
}

/** The consent acts of the channels a preference post changed to subscribed or unsubscribed. */
function preferenceActs(changed: PreferencesChange, panelName: string): Array<{ kind: "subscribe" | "unsubscribe"; text: string }> {
  return (Object.entries(changed) as Array<[PreferenceChannel, "subscribed" | "unsubscribed"]>).map(([channel, state]) => ({
    kind: state === "subscribed" ? "subscribe" : "unsubscribe",
    text: preferenceNotice(panelName, channel, state),
  }));
}

/**
 * Confirms an SNS subscription: a GET of SNS's own URL (readSesNotification refused any other),
 * nothing else fetched. SNS unreachable, slow past 10 s or refusing is "not confirmed" (SNS asks
 * again), never a fault of ours.
 */
async function confirmSnsSubscription(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * POST /hooks/email/ses/{token}: Amazon SNS notifications of SES bounces and complaints. The path token
 * (secret SES_SNS_TOKEN) keeps the endpoint to those who know it, and SNS's signature on each
 * message proves SNS sent it: a bad one is 403, a certificate that could not be fetched 502 (SNS
 * retries). Without the secret the endpoint is off.
 */
export async function handleSesNotification(token: string, request: Request, env: Env & EmailProviderSecrets): Promise<Response> {
  const { snsToken } = config(env).ses;
  if (snsToken === undefined || !constantTimeEqual(token, snsToken)) return new Response("not found", { status: 404 });
  let body: Uint8Array;
  try {
    body = await readBodyBytes(request);
  } catch (error) {
    if (error instanceof ApiError) return new Response(error.message, { status: error.status });
    throw error;
  }
  const parsed = await readSesNotification(env, new TextDecoder().decode(body));
  if (parsed.kind === "invalid") return new Response(parsed.reason, { status: 400 });
  if (parsed.kind === "refused") return new Response(`the SNS signature is refused: ${parsed.reason}`, { status: 403 });
  if (parsed.kind === "unverifiable") return new Response(`the SNS signature could not be checked: ${parsed.reason}`, { status: 502 });
  if (parsed.kind === "subscribe") {
    const confirmed = await confirmSnsSubscription(parsed.subscribeUrl);
    return new Response(confirmed ? "subscribed" : "subscription not confirmed", { status: confirmed ? 200 : 502 });
  }
  const now = Date.now();
  for (const bounce of parsed.bounces) {
    if (!(await recordBounce(env, bounce, now))) await recordJourneyBounce(env, bounce, now);
  }
  for (const complaint of parsed.complaints) {
    if (!(await recordComplaint(env, complaint, now))) await recordJourneyComplaint(env, complaint, now);
  }
  return new Response("ok");
}
