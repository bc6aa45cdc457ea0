import { constantTimeEqual } from "../../lib/crypto";
import type { ShardDb } from "../../store/shards";
import { findPanelHome } from "../access/shards";
import { panelShards } from "../access/partitions";
import { msg91Receipts, msg91Reply, twilioReceipt, twilioReply, type SmsReceipt } from "../channels/sms/receipts";
import { panelSms, type PanelSms } from "../channels/sms/settings";
import { twilioSignature } from "../channels/sms/twilio";
import { recordSmsReceipts, recordSmsReply } from "./sms";

/**
 * What SMS providers post back (delivery reports and replies) to
 * /hooks/sms/{provider}/{panel}/{token}[/replies]. The path token (a secret of the panel's SMS
 * settings) authenticates MSG91, which signs nothing; Twilio's posts must also carry a valid
 * X-Twilio-Signature made with the panel's auth token.
 */

/** The panel a hook's path names, when its SMS provider is that one and the token its own. */
export interface SmsHookPanel {
  panelId: string;
  db: ShardDb;
  /**
   * The home first, then each shard holding one of the panel's partitions (decision 0038),
   * whose contacts' messages and sends are there: just the home for a panel without a map.
   */
  shards: ShardDb[];
  sms: PanelSms;
}

/** The panel whose hook the path is; null for any mismatch (no such panel, no SMS settings, another provider, a wrong token). */
export async function smsHookPanel(env: Env, provider: string, panelId: string, token: string): Promise<SmsHookPanel | null> {
  const home = await findPanelHome(env, panelId);
  const sms = home ? await panelSms(env, home.db, panelId) : null;
  if (!home || !sms || sms.record.provider !== provider || !constantTimeEqual(token, sms.hookToken)) return null;
  return { panelId, db: home.db, shards: panelShards(env, home.panel, home.db), sms };
}

/** One post to a hook, as it arrived. */
export interface SmsHookPost {
  kind: "receipts" | "replies";
  /** The URL it was posted to, which Twilio signs. */
  url: string;
  signature: string;
  contentType: string;
  body: string;
}

export type SmsHookOutcome =
  | { kind: "bad-signature" }
  /** Not a post this provider makes: `reason` says what it lacks. */
  | { kind: "refused"; reason: string }
  | { kind: "reply" }
  /** Receipts of messages the panel does not have are acknowledged (the provider would retry them forever) and ignored. */
  | { kind: "receipts"; matched: number };

/** A provider's post to the panel's hook: a reply (STOP, START) or delivery reports, recorded. */
export async function receiveSmsHook(env: Env, hook: SmsHookPanel, post: SmsHookPost, now: number): Promise<SmsHookOutcome> {
  const { shards, panelId, sms } = hook;
  const stopOrStart = (from: string, text: string) => recordSmsReply(shards, panelId, from, text, now);
  let receipts: SmsReceipt[] | null;
  if (sms.record.provider === "twilio") {
    const params = new URLSearchParams(post.body);
    if (!constantTimeEqual(post.signature, await twilioSignature(sms.credential, post.url, params))) return { kind: "bad-signature" };
    if (post.kind === "replies") {
      const reply = twilioReply(params);
      await stopOrStart(reply.from, reply.text);
      return { kind: "reply" };
    }
    const receipt = twilioReceipt(params);
    if (!receipt) return { kind: "refused", reason: "MessageSid is required" };
    receipts = [receipt];
  } else {
    if (post.kind === "replies") {
      const reply = msg91Reply(post.contentType, post.body);
      if (!reply.from) return { kind: "refused", reason: "the reply names no number (mobile or number)" };
      await stopOrStart(reply.from, reply.text);
      return { kind: "reply" };
    }
    receipts = msg91Receipts(post.contentType, post.body);
    if (!receipts) return { kind: "refused", reason: "not an MSG91 delivery report: each entry needs a requestId" };
  }
  return { kind: "receipts", ...(await recordSmsReceipts(env, shards, panelId, receipts, now)) };
}
