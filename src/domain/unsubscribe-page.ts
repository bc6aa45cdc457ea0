import { escapeHtml } from "./merge-tags";
import type { ChannelPreferences, PreferenceChannel } from "./preferences";

/**
 * The pages a recipient meets through an email's unsubscribe link. Plain HTML and CSS, no
 * script: the forms work in any browser and in mail clients' built-in viewers. Built for a
 * phone first (one column, 48 px buttons the full width), with the contrast and landmarks an
 * accessibility check asks for.
 */

/** Who sent the mail and to whom, as the page names them. */
export interface UnsubscribeFacts {
  /** The panel: whose mailing list the address is on. */
  panelName: string;
  senderName: string;
  senderAddress: string;
  /** The recipient's address. */
  address: string;
  /** The preference page of the same message (relative), linked from the unsubscribe page. */
  preferencesPath?: string;
  /** The topic the message was about (issue 45, item 4): the page offers leaving it alone. */
  topic?: { id: string; name: string };
}

/**
 * Where the recipient stands: asked to confirm (`subscribed`), just unsubscribed or already
 * unsubscribed, subscribed again, or stopped by bounces (nothing to choose).
 */
export type UnsubscribeState = "subscribed" | "unsubscribed" | "already_unsubscribed" | "resubscribed" | "bounced" | "left_topic";

/** What the unsubscribe page of a topic's message says leaving the topic does (the consent record keeps it as shown). */
export function leaveTopicNotice(panel: string, topic: string): string {
  return `Leave this topic: stops ${panel}'s email about ${topic} only; other email keeps coming.`;
}

/** What the unsubscribe page says unsubscribing does (the consent record keeps it as shown); `panel` as the page writes it. */
export function unsubscribeNotice(panel: string): string {
  return `Unsubscribing stops all marketing email from ${panel} to this address: this kind of mail and every other campaign or message they send.`;
}

/** What a consent record keeps as shown for a mail client's one-click unsubscribe (RFC 8058): the header's own words. */
export const ONE_CLICK_NOTICE = "List-Unsubscribe=One-Click (the mail client's unsubscribe button, RFC 8058)";

/** What a consent record keeps as shown for a channel left or taken back on the preference page. */
export function preferenceNotice(panel: string, channel: string, state: "subscribed" | "unsubscribed"): string {
  return `What ${panel} may send you: Keep me subscribed to ${channel}, ${state === "subscribed" ? "checked" : "unchecked"}; Save preferences`;
}

/** What a consent record keeps as shown for a topic joined or left on the preference page (`topic` its name). */
export function topicNotice(panel: string, topic: string, joined: boolean): string {
  return `What ${panel} may send you: Topics, ${topic}, ${joined ? "checked" : "unchecked"}; Save preferences`;
}

/** The button that takes an unsubscribe back. */
export const RESUBSCRIBE_LABEL = "Subscribe again";

/** The address with most of its local part hidden: the link may be forwarded, the address should not travel with it. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf("@");
  if (at <= 0) return address;
  const local = address.slice(0, at);
  return `${local.slice(0, Math.min(2, local.length - 1) || 1)}${"•".repeat(Math.max(1, Math.min(local.length - 2, 6)))}${address.slice(at)}`;
}

const STYLE = `
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#f3f4f6;color:#1d2330;font:17px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
header{background:#1d2330;color:#fff;padding:14px 20px}
header p{margin:0;font-weight:600;font-size:15px;letter-spacing:.01em}
main{max-width:34rem;margin:0 auto;padding:24px 20px 40px}
.card{background:#fff;border:1px solid #d5d9e0;border-radius:12px;padding:24px 20px}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 12px}
p{margin:0 0 14px}
.who{color:#3d4451}
.who strong{color:#1d2330}
form{margin:20px 0 8px}
button{display:block;width:100%;min-height:48px;padding:12px 20px;border-radius:10px;border:2px solid #1a56b8;background:#1a56b8;color:#fff;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#fff;color:#1a56b8}
button:hover{background:#15479a;border-color:#15479a;color:#fff}
button:focus-visible{outline:3px solid #f2b300;outline-offset:3px}
.note{font-size:15px;color:#4a5058;margin-top:16px}
.done{border-left:4px solid #1f7a3d;padding-left:12px}
fieldset{border:0;padding:0;margin:0 0 16px}
legend{font-weight:600;margin-bottom:8px}
.choice{display:flex;gap:12px;align-items:flex-start;padding:12px 0;border-top:1px solid #e3e6eb}
.choice input{width:24px;height:24px;margin:2px 0 0;flex:none}
.choice small{display:block;color:#4a5058;font-size:15px}
@media (min-width:600px){main{padding-top:48px}.card{padding:32px}button{width:auto;min-width:14rem}}
`;

function layout(status: number, title: string, panelName: string | null, content: string): { status: number; html: string } {
  return {
    status,
    html:
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>` +
      (panelName ? `<header><p>${escapeHtml(panelName)}</p></header>` : "") +
      `<main><div class="card">${content}</div></main></body></html>`,
  };
}

const unsubscribeForm = (label: string, secondary = false) =>
  `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit"${secondary ? ' class="secondary"' : ""}>${label}</button></form>`;
const resubscribeForm = `<form method="post"><input type="hidden" name="action" value="resubscribe"><button type="submit" class="secondary">${RESUBSCRIBE_LABEL}</button></form>`;

const preferencesLink = (facts: UnsubscribeFacts, text: string) =>
  facts.preferencesPath ? `<p class="note"><a href="${escapeHtml(facts.preferencesPath)}">${text}</a></p>` : "";

export function unsubscribePage(state: UnsubscribeState, facts: UnsubscribeFacts): { status: number; html: string } {
  const panel = escapeHtml(facts.panelName);
  const sender = facts.senderName
    ? `<strong>${escapeHtml(facts.senderName)}</strong> (${escapeHtml(facts.senderAddress)})`
    : `<strong>${escapeHtml(facts.senderAddress)}</strong>`;
  const address = `<strong>${escapeHtml(maskAddress(facts.address))}</strong>`;
  const who = `<p class="who">These emails come from ${sender}, sent to ${address} because the address is on the mailing list of ${panel}.</p>`;
  switch (state) {
    case "subscribed":
      return layout(
        200,
        `Unsubscribe from ${facts.panelName}`,
        facts.panelName,
        `<h1>Stop emails from ${panel}?</h1>${who}` +
          (facts.topic
            ? `<p>${escapeHtml(leaveTopicNotice(facts.panelName, facts.topic.name))}</p>` +
              `<form method="post"><input type="hidden" name="action" value="leave_topic"><button type="submit">Leave this topic</button></form>` +
              `<p>${unsubscribeNotice(panel)}</p>` +
              unsubscribeForm("Leave everything", true)
            : `<p>${unsubscribeNotice(panel)}</p>` + unsubscribeForm("Unsubscribe")) +
          `<p class="note">Nothing changes until you press the button.</p>` +
          preferencesLink(facts, "Or choose per channel what you receive"),
      );
    case "unsubscribed":
    case "already_unsubscribed":
      return layout(
        200,
        `Unsubscribed from ${facts.panelName}`,
        facts.panelName,
        `<h1>You are unsubscribed</h1>` +
          `<p class="done" role="status">${state === "unsubscribed" ? "Done: " : "This address was already unsubscribed: "}${panel} will not send marketing email to ${address} any more.</p>` +
          `<p class="who">The emails came from ${sender}.</p>` +
          `<p>Unsubscribed by mistake? You can subscribe again.</p>` +
          resubscribeForm +
          preferencesLink(facts, "Choose what else you receive (SMS, notifications)"),
      );
    case "resubscribed":
      return layout(
        200,
        `Subscribed to ${facts.panelName}`,
        facts.panelName,
        `<h1>You are subscribed again</h1><p class="done" role="status">${address} will receive email from ${panel} again.</p>${who}` +
          unsubscribeForm("Unsubscribe after all", true),
      );
    case "left_topic":
      return layout(
        200,
        `Left a topic of ${facts.panelName}`,
        facts.panelName,
        `<h1>You left ${escapeHtml(facts.topic?.name ?? "this topic")}</h1>` +
          `<p class="done" role="status">Done: ${panel} will not send ${address} email about ${escapeHtml(facts.topic?.name ?? "this topic")}; other email keeps coming.</p>` +
          `<p>${unsubscribeNotice(panel)}</p>` +
          unsubscribeForm("Leave everything", true) +
          preferencesLink(facts, "Choose your topics and channels"),
      );
    case "bounced":
      return layout(
        200,
        `Email from ${facts.panelName}`,
        facts.panelName,
        `<h1>No email goes to this address</h1><p>${panel} stopped sending to ${address} because earlier messages could not be delivered to it.</p>${who}`,
      );
  }
}

const CHANNEL_TEXT: Record<PreferenceChannel, { label: string; held: string }> = {
  email: { label: "Email", held: "Stopped: earlier emails could not be delivered to this address." },
  sms: { label: "Text messages (SMS)", held: "Stopped by the phone network or by the sender; reply START to a message to ask again." },
  push: { label: "App and browser notifications", held: "" },
};

/** A topic as the preference page shows it: a box, checked while the contact is in it. */
export interface PageTopic {
  id: string;
  name: string;
  description: string;
  joined: boolean;
}

/** The topics' boxes, beside the channels; each posts `topic` when checked and `shown_topic` always, so an unchecked box is a leave. */
function topicRows(topics: readonly PageTopic[]): string {
  if (!topics.length) return "";
  const rows = topics
    .map((t, i) => {
      const id = `topic-${i}`;
      return (
        `<div class="choice"><input type="checkbox" id="${id}" name="topic" value="${escapeHtml(t.id)}"${t.joined ? " checked" : ""}>` +
        `<input type="hidden" name="shown_topic" value="${escapeHtml(t.id)}"><label for="${id}"><strong>${escapeHtml(t.name)}</strong>` +
        (t.description ? `<small>${escapeHtml(t.description)}</small>` : "") +
        `</label></div>`
      );
    })
    .join("");
  return `<fieldset><legend>Topics</legend>${rows}</fieldset>`;
}

/**
 * The preference page (/t/p/{token}): one box per channel the recipient can be reached on and
 * may change; a channel the service stopped is told, not offered. Unchecking and saving
 * unsubscribes from that channel alone; checking email again takes back the recipient's own
 * spam report (a complaint), which no one else may.
 */
export function preferencesPage(facts: UnsubscribeFacts, preferences: ChannelPreferences, saved: boolean, topics: readonly PageTopic[] = []): { status: number; html: string } {
  const panel = escapeHtml(facts.panelName);
  const rows = (Object.keys(CHANNEL_TEXT) as PreferenceChannel[])
    .filter((channel) => preferences[channel] !== "unreachable")
    .map((channel) => {
      const state = preferences[channel];
      const text = CHANNEL_TEXT[channel];
      if (state === "bounced" || state === "stopped") return `<div class="choice"><span><strong>${text.label}</strong><small>${text.held}</small></span></div>`;
      const id = `channel-${channel}`;
      return (
        `<div class="choice"><input type="checkbox" id="${id}" name="${channel}" value="subscribed"${state === "subscribed" ? " checked" : ""}>` +
        `<input type="hidden" name="shown" value="${channel}"><label for="${id}"><strong>${text.label}</strong>` +
        `<small>${state === "subscribed" ? "You receive these." : state === "complained" ? "Stopped: you reported an email as spam. Check to receive these again." : "You turned these off."}</small></label></div>`
      );
    })
    .join("");
  return layout(
    200,
    `Your preferences with ${facts.panelName}`,
    facts.panelName,
    `<h1>What ${panel} may send you</h1>` +
      (saved ? `<p class="done" role="status">Saved. ${panel} sends you only what is checked below.</p>` : "") +
      `<p class="who">For ${escapeHtml(maskAddress(facts.address))} and the contact it belongs to.</p>` +
      `<form method="post"><input type="hidden" name="action" value="preferences"><fieldset><legend>Keep me subscribed to</legend>${rows}</fieldset>` +
      topicRows(topics) +
      `<button type="submit">Save preferences</button></form>`,
  );
}

export function invalidLinkPage(): { status: number; html: string } {
  return layout(404, "Link not found", null, `<h1>This link is not valid</h1><p>It may have been copied incompletely. Please use the link in the email you received.</p>`);
}
