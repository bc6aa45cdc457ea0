import { escapeHtml } from "../../domain/merge-tags";
import { config, type ConfigSource } from "../../lib/config";
import { newId } from "../../lib/random";

/** A transactional mail as the MAILER binding takes it. */
export interface TransactionalMail {
  from: string;
  to: string | string[];
  subject: string;
  text: string;
}

/** What sending reads: the bindings, and the vars config() reads. */
export type MailerEnv = Pick<Env, "MAILER" | "FILES"> & ConfigSource;

const MAILBOX_PREFIX = "local-mailbox/";
export const LOCAL_MAILBOX_PATH = "/dev/mailbox/";

/**
 * Sends a transactional mail through MAILER. With LOCAL_MAILBOX on (`npm start` only) the mail
 * is also kept in R2 and the log gets a link to it: locally, wrangler only prints the path of
 * a file it wrote, and a reset link has to be dug out of it. Answers the link (null when off).
 */
export async function sendTransactional(env: MailerEnv, mail: TransactionalMail): Promise<string | null> {
  await env.MAILER.send(mail);
  const settings = config(env);
  if (!settings.localMailbox) return null;
  const id = newId("mail");
  await env.FILES.put(`${MAILBOX_PREFIX}${id}.json`, JSON.stringify({ ...mail, sent_at: new Date().toISOString() }), { httpMetadata: { contentType: "application/json" } });
  const link = `${settings.publicBaseUrl}${LOCAL_MAILBOX_PATH}${id}`;
  console.log(`Local mailbox: "${mail.subject}" to ${[mail.to].flat().join(", ")}: ${link}`);
  return link;
}

/** GET /dev/mailbox/{id}: a kept mail as a page, or null (404) when LOCAL_MAILBOX is off or there is no such mail. */
export async function localMailboxPage(env: Env, id: string): Promise<string | null> {
  if (!config(env).localMailbox || !/^mail_[A-Za-z0-9]{1,40}$/.test(id)) return null;
  const object = await env.FILES.get(`${MAILBOX_PREFIX}${id}.json`);
  if (!object) return null;
  const mail = (await object.json()) as TransactionalMail & { sent_at: string };
  // Links in the text (the reset link) made clickable; everything else is escaped text.
  const body = escapeHtml(mail.text).replace(/https?:\/\/[^\s<]+/g, (url) => `<a href="${url}">${url}</a>`);
  return [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(mail.subject)}</title></head><body>`,
    "<p><strong>Local mailbox</strong> (LOCAL_MAILBOX is on: this deployment is a local one)</p>",
    `<dl><dt>From</dt><dd>${escapeHtml(mail.from)}</dd><dt>To</dt><dd>${escapeHtml([mail.to].flat().join(", "))}</dd>`,
    `<dt>Subject</dt><dd>${escapeHtml(mail.subject)}</dd><dt>Sent</dt><dd>${escapeHtml(mail.sent_at)}</dd></dl>`,
    `<pre style="white-space:pre-wrap">${body}</pre>`,
    "</body></html>",
  ].join("\n");
}
