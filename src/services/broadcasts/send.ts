import { TOPIC_SKIP } from "../../domain/topics";
import { panelDb } from "../access/shards";
import { hasContactsBeyondHome, namedPanelShard, panelHomeNaming } from "../access/partitions";
import { erasedIdentifier } from "../../domain/erasure";
import { suppressionsOf } from "../../store/suppressions";
import { settleCampaignShard } from "./campaign-shards";
import type { EmailProvider, OutgoingEmail, ProviderEnv } from "../channels/email/provider";
import { emailProvider } from "../channels/email/providers";
import { planSender } from "../channels/email/signing";
import { TrackingSigner, trackedMime } from "../channels/email/tracking";
import { trackingBaseUrl } from "../channels/email/tracking-domains";
import { isEmailAddress } from "../../domain/email";
import { campaignMessageId } from "../../domain/email-message";
import { SUPPRESSION_SKIPS } from "../../domain/preferences";
import { compileTemplate, hasMergeTags, mergeTagNames, mergeValuesOf, personalize, type Template } from "../../domain/merge-tags";
import { textOfHtml } from "../../domain/email-text";
import { capsOf, contactTimeZone, describeCap, localTimeOnDay, NO_RULES, quietUntil } from "../../domain/message-rules";
import { wallClockAt } from "../../domain/time";
import { countSendsIfAllowed } from "../../store/contact-sends";
import { randomHex } from "../../lib/random";
import { config } from "../../lib/config";
import { sendAll } from "../../lib/tasks";
import { TtlCache } from "../../lib/ttl-cache";
import { segmentsAfterSends } from "../segments/contact-writes";
import { getPanel } from "../../store/panels";
import { isPushNudge, sendQueuedPushBatch } from "../journeys/push";
import { sendRetryDelaySeconds, type NudgeDelivery } from "../journeys/queued-sends";
import { isSmsNudge, sendQueuedSmsBatch } from "../journeys/sms";
import type { ShardDb } from "../../store/shards";
import { metrics, type DataPointWriter } from "../../lib/observability/metrics";
import { CANCELLED_SKIP, campaignStatus, getCampaign, type Campaign } from "../../store/campaigns/definitions";
import { touchSendingCampaign } from "../../store/campaigns/parts";
import { claimBatch, completeCampaignIfDone, deferClaimed, finishClaims, markSendAttempts, releaseClaim, type ClaimedRecipient, type MessageOutcome } from "../../store/campaigns/sends";

/** Recipients per send nudge (one queue message). */
export const SEND_BATCH_SIZE = 100;
/**
 * A claim not renewed for this long belongs to an attempt that died. A sender renews its claim
 * before each group it hands to a provider without idempotency; a group takes seconds (SES
 * answers or times out within 15 s).
 */
export const CLAIM_LEASE_MS = 60_000;
/**
 * Recipients handed to a provider without idempotency at a time: each group's attempt is
 * recorded right before the call and its outcomes right after, so a crash leaves at most one
 * group's outcome unknown.
 */
export const ATTEMPT_GROUP = 8;

/** The nudge on the sends queue: send this batch of this campaign; the work itself is in D1. */
export interface SendNudge {
  kind: "campaign_batch";
  panelId: string;
  campaignId: string;
  /** Numbered per shard: the batch of the shard `shard` (decision 0038 step 4); without it, of the panel's home. */
  batch: number;
  shard?: number;
}

export function isSendNudge(body: unknown): body is SendNudge {
  const b = body as SendNudge | null;
  return (
    typeof b === "object" && b !== null && b.kind === "campaign_batch" && typeof b.campaignId === "string" && typeof b.panelId === "string" && Number.isInteger(b.batch) &&
    (b.shard === undefined || Number.isInteger(b.shard))
  );
}

/** Nudges the campaign's `batches` of the shard `shard` (absent: the home, whose nudges name none, as before partitions). */
export async function enqueueSendBatches(env: Pick<Env, "SENDS">, campaign: { id: string; panelId: string }, batches: readonly number[], delaySeconds = 0, shard?: number): Promise<void> {
  await sendAll(
    env.SENDS,
    batches.map((batch): SendNudge => (shard === undefined ? { kind: "campaign_batch", panelId: campaign.panelId, campaignId: campaign.id, batch } : { kind: "campaign_batch", panelId: campaign.panelId, campaignId: campaign.id, batch, shard })),
    delaySeconds,
  );
}

/**
 * Recipients claimed on a shard other than the home are checked against the home's suppressions
 * too (the panel-wide ones: an operator's, an address's kept hashed after an erasure), in one read;
 * the claim's own statement checked its shard's, where the contact's own unsubscribe and bounces are.
 */
async function homeSuppressions(home: ShardDb, panelId: string, recipients: ClaimedRecipient[]): Promise<void> {
  const open = recipients.flatMap((r) => (r.suppressed === null && typeof r.attributes.EMAIL === "string" ? [{ r, address: r.attributes.EMAIL.trim().toLowerCase() }] : []));
  if (open.length === 0) return;
  const hashed = await Promise.all(open.map((o) => erasedIdentifier(panelId, o.address)));
  const found = await suppressionsOf(home, panelId, [...new Set([...open.map((o) => o.address), ...hashed])]);
  open.forEach((o, i) => (o.r.suppressed = found.get(o.address) ?? found.get(hashed[i]!) ?? null));
}

/**
 * The campaign's compiled bodies and subject, kept per isolate: every batch of a campaign needs
 * them. Keyed by body and subject, as an edit before sending (a test copy, then a change) gives
 * the body a fresh key.
 */
const templates = new TtlCache<Promise<CampaignTemplates>>(10 * 60_000, 50);

export interface CampaignTemplates {
  html: Template;
  text: Template;
  subject: Template;
  /** The attributes the subject and body read: what each message keeps of its recipient's (mergeValuesOf). */
  tagNames: string[];
}

export function campaignTemplates(files: R2Bucket, campaign: Pick<Campaign, "id" | "bodyKey" | "subject">): Promise<CampaignTemplates> {
  const key = `${campaign.bodyKey}\n${campaign.subject}`;
  let entry = templates.get(key);
  if (!entry) {
    entry = (async () => {
      const object = await files.get(campaign.bodyKey);
      if (!object) throw new Error(`campaign ${campaign.id}: body ${campaign.bodyKey} is missing from R2`);
      const source = await object.text();
      const html = compileTemplate(source);
      const subject = compileTemplate(campaign.subject);
      return { html, text: compileTemplate(textOfHtml(source)), subject, tagNames: mergeTagNames(subject, html) };
    })();
    entry.catch(() => templates.clear());
    templates.set(key, entry);
  }
  return entry;
}

/**
 * What a recipient of `variant` gets: the A/B test variant's subject and body where it has its
 * own, the campaign's otherwise (also outside a test, variant null).
 */
export function contentOf(campaign: Pick<Campaign, "id" | "bodyKey" | "subject" | "abTest">, variant: number | null): Pick<Campaign, "id" | "bodyKey" | "subject"> {
  const own = variant === null ? undefined : campaign.abTest?.variants[variant];
  return { id: campaign.id, bodyKey: own?.body_key ?? campaign.bodyKey, subject: own?.subject ?? campaign.subject };
}

export type SendEnv = ProviderEnv & Pick<Env, "DB" | "FILES" | "SECRETS_KEY" | "PUBLIC_BASE_URL"> & { METRICS?: DataPointWriter };

/**
 * Sends one batch of a campaign, exactly once per recipient whatever the redeliveries: the
 * recipients are claimed in D1 first (queued -> sending under a fresh claim token), and a
 * redelivered nudge finds nothing left to claim. Suppressed addresses and contacts without a
 * valid EMAIL are skipped. Throws when some recipients should be tried again later (the
 * provider was throttled or down), after handing them back to the queue state.
 *
 * A claim whose holder died is taken again once it is stale (CLAIM_LEASE_MS): with the outbox,
 * which is idempotent by message id, whole; with SES only where no attempt was recorded, the
 * rest being settled as failed with an unknown outcome (at most once; see claimBatch).
 */
export async function sendCampaignBatch(env: SendEnv, provider: EmailProvider, nudge: SendNudge, now = Date.now()): Promise<void> {
  const { panel: place, db: home } = await panelHomeNaming(env, nudge.panelId, nudge.shard);
  const campaign = await getCampaign(home, nudge.panelId, nudge.campaignId);
  if (!campaign || campaign.status !== "sending") return;
  // The batch's recipients are on the shard the nudge names (decision 0038 step 4), the campaign on the home.
  const shard = namedPanelShard(env, place, nudge.shard);
  const db = shard.db;
  const claim = randomHex(8);
  const started = Date.now();
  const clock = () => now + (Date.now() - started);
  const recipients = await claimBatch(db, campaign, nudge.batch, claim, now, now - CLAIM_LEASE_MS, provider.idempotent, !shard.home);
  if (!shard.home) await homeSuppressions(home, campaign.panelId, recipients);
  if (recipients.length > 0) {
    const skipped: MessageOutcome[] = [];
    const deferred: Array<{ contactId: number; dueAt: number }> = [];
    const outgoing: Array<{ contactId: number; address: string; email: OutgoingEmail; rendered: Pick<MessageOutcome, "subject" | "mergeValues"> }> = [];
    try {
      // One set of templates per A/B variant in the batch (a campaign without a test has one).
      const variants = [...new Set(recipients.map((r) => r.variant))];
      const compiled = new Map(await Promise.all(variants.map(async (v) => [v, await campaignTemplates(env.FILES, contentOf(campaign, v))] as const)));
      const [panel, sender, baseUrl] = await Promise.all([
        getPanel(env.DB, campaign.panelId),
        planSender(env, home, provider, campaign.panelId, campaign.senderEmail),
        trackingBaseUrl(env, home, campaign.panelId),
      ]);
      const signer = new TrackingSigner(config(env).secretsKey);
      // A campaign is marketing: every message counts against the panel's email caps (decision 0040).
      const rules = panel?.messageRules ?? NO_RULES;
      // Send at local time: the campaign's send date, on the panel's clock, is every recipient's date.
      const sendDay = wallClockAt(campaign.sendAt, panel?.timezone ?? "UTC");
      const caps = capsOf(rules, "email");
      const facts = { senderName: campaign.senderName, senderAddress: campaign.senderEmail, panelName: panel?.name ?? campaign.senderName };
      const skip = (contactId: number, address: string, error: string) => skipped.push({ contactId, status: "skipped", address: address || null, providerMessageId: null, error });
      const due: Array<{ recipient: (typeof recipients)[number]; address: string; id: string }> = [];
      for (const recipient of recipients) {
        const rawAddress = recipient.attributes.EMAIL;
        const address = typeof rawAddress === "string" ? rawAddress.trim().toLowerCase() : "";
        if (recipient.suppressed) skip(recipient.contactId, address, SUPPRESSION_SKIPS[recipient.suppressed]);
        else if (recipient.leftTopic) skip(recipient.contactId, address, TOPIC_SKIP);
        else if (!isEmailAddress(address)) skip(recipient.contactId, address, "the contact has no valid EMAIL");
        else if (!sender.ok) skipped.push({ contactId: recipient.contactId, status: "failed", address, providerMessageId: null, error: sender.error });
        else {
          // Its time on its own clock: send at local time (at once where that time of the send date
          // has passed; a deferred recipient's has come), then quiet hours.
          const zone = contactTimeZone(recipient.attributes, panel?.timezone ?? "UTC");
          const localAt = campaign.localTime && recipient.dueAt === null ? localTimeOnDay(campaign.localTime, sendDay, zone) : null;
          const dueAt = localAt !== null && localAt > now ? localAt : quietUntil(rules, "email", now, zone);
          if (dueAt !== null) deferred.push({ contactId: recipient.contactId, dueAt });
          else due.push({ recipient, address, id: campaignMessageId(campaign.id, recipient.contactId) });
        }
      }
      // The batch's messages counted against the caps in one round trip; a refused one is skipped.
      const answers = await countSendsIfAllowed(db, { panelId: campaign.panelId, channel: "email" }, due.map((d) => ({ contactId: d.recipient.contactId, key: d.id })), caps, now);
      const allowed = due.filter((d, i) => {
        const answer = answers[i]!;
        if (!answer.allowed) skip(d.recipient.contactId, d.address, describeCap(answer.cap));
        return answer.allowed;
      });
      // (None is allowed where the sender could not be planned: each failed above.)
      if (sender.ok) await Promise.all(
        allowed.map(async ({ recipient, address, id }) => {
          const { html, text, subject, tagNames } = compiled.get(recipient.variant)!;
          const ownSubject = recipient.variant !== null && campaign.abTest?.variants[recipient.variant]?.subject != null;
          const subjectLine = personalize(subject, recipient.attributes, "plain");
          const unsigned = await trackedMime(signer, baseUrl, { panelId: campaign.panelId, campaignId: campaign.id, contactId: recipient.contactId }, facts, {
            from: { name: campaign.senderName, address: campaign.senderEmail },
            to: address,
            subject: subjectLine,
            html: personalize(html, recipient.attributes, "html"),
            text: personalize(text, recipient.attributes, "text"),
            messageId: id,
            date: now,
            replyTo: campaign.replyTo,
            headers: { "X-Campaign-ID": campaign.id },
          });
          const raw = await sender.sign(unsigned, now);
          const email: OutgoingEmail = { id, panelId: campaign.panelId, campaignId: campaign.id, from: campaign.senderEmail, to: address, subject: subjectLine, raw, contact: { id: recipient.contactId, db } };
          if (sender.note) email.note = sender.note;
          // What the message log shows and its copy is rendered again from (message-copies.ts).
          // A variant's own subject is kept too: the campaign's is not what it got.
          const rendered = { subject: hasMergeTags(subject) || ownSubject ? subjectLine : null, mergeValues: mergeValuesOf(recipient.attributes, tagNames) };
          outgoing.push({ contactId: recipient.contactId, address, email, rendered });
        }),
      );
    } catch (error) {
      // Nothing was sent: the recipients go back to the queue state for the retry.
      await releaseClaim(db, campaign.id, nudge.batch, claim);
      throw error;
    }
    await deferClaimed(db, campaign.id, nudge.batch, claim, deferred);
    await finishClaims(db, campaign.id, nudge.batch, claim, skipped, now);
    const groupSize = provider.idempotent ? outgoing.length : ATTEMPT_GROUP;
    let retryLater = 0;
    const sent: number[] = [];
    for (let from = 0; from < outgoing.length; from += groupSize) {
      let group = outgoing.slice(from, from + groupSize);
      // Paused or cancelled since the batch was claimed: what is not yet handed over stays back.
      const stopped = await stoppedSince(home, db, campaign, outgoing.slice(from), nudge.batch, claim, clock());
      if (stopped) return;
      if (!provider.idempotent) {
        const held = await markSendAttempts(db, campaign.id, nudge.batch, claim, group.map((o) => o.contactId), clock());
        group = group.filter((o) => held.has(o.contactId));
        // The claim went stale and another attempt took it: what is left is that attempt's.
        if (group.length === 0) break;
      }
      const results = await provider.send(group.map((o) => o.email), now);
      const outcomes = results.map((result, i): MessageOutcome => {
        const { contactId, address, rendered } = group[i]!;
        if (result.ok) {
          sent.push(contactId);
          return { contactId, status: "sent", address, providerMessageId: result.providerMessageId, error: null, ...rendered };
        }
        if (result.retryable) retryLater++;
        return { contactId, status: result.retryable ? "queued" : "failed", address, providerMessageId: null, error: result.error, ...rendered };
      });
      await finishClaims(db, campaign.id, nudge.batch, claim, outcomes, clock());
      const counter = metrics(env);
      for (const outcome of outcomes) if (outcome.status !== "queued") counter.message("email", outcome.status === "sent" ? "sent" : "failed");
    }
    // Segments on `received` follow the sends at once.
    if (sent.length) await segmentsAfterSends(env, campaign.panelId, sent, clock(), shard);
    if (retryLater > 0) throw new Error(`campaign ${campaign.id} batch ${nudge.batch}: ${retryLater} message(s) to retry`);
  }
  if (shard.home) await completeCampaignIfDone(db, campaign.panelId, campaign.id, now, hasContactsBeyondHome(place));
  else {
    // The stalled-campaign re-drive reads the home's campaign: this shard's progress counts there.
    await touchSendingCampaign(home, campaign.id, clock());
    await settleCampaignShard(home, shard, campaign, now);
  }
}

/**
 * Whether the campaign stopped sending since its batch was claimed: a cancelled one settles the
 * claimed recipients not yet handed over as skipped (its report counts them unsent), a paused
 * one hands them back to the queue for its resume.
 */
async function stoppedSince(
  home: ShardDb,
  db: ShardDb,
  campaign: Campaign,
  left: ReadonlyArray<{ contactId: number; address: string }>,
  batch: number,
  claim: string,
  now: number,
): Promise<boolean> {
  const status = await campaignStatus(home, campaign.panelId, campaign.id);
  if (status === "sending") return false;
  if (status === "paused") await releaseClaim(db, campaign.id, batch, claim);
  else {
    const skipped = left.map((o): MessageOutcome => ({ contactId: o.contactId, status: "skipped", address: o.address, providerMessageId: null, error: CANCELLED_SKIP }));
    await finishClaims(db, campaign.id, batch, claim, skipped, now);
  }
  return true;
}

/** A dead-lettered batch is sent again after this pause (the provider was down or throttling through all its retries). */
const DEAD_LETTER_PAUSE_S = 60;

/** A dead-lettered nudge of a batch: nudged again after a pause while its campaign still sends. */
export async function redriveDeadSend(env: Env, nudge: SendNudge): Promise<string> {
  const db = await panelDb(env, nudge.panelId);
  const campaign = await getCampaign(db, nudge.panelId, nudge.campaignId);
  if (!campaign || campaign.status !== "sending") return "nothing left: the campaign is not sending";
  await enqueueSendBatches(env, campaign, [nudge.batch], DEAD_LETTER_PAUSE_S, nudge.shard);
  return `nudged again in ${DEAD_LETTER_PAUSE_S} s`;
}

/**
 * Journey SMS or push nudges of one batch, sent together: each nudge acknowledged once its
 * messages are done with, retried (with backoff) otherwise.
 */
async function sendQueuedNudges<K extends "sms" | "push">(
  messages: readonly Message<unknown>[],
  send: (deliveries: NudgeDelivery<K>[]) => Promise<Array<number | null>>,
): Promise<void> {
  if (messages.length === 0) return;
  try {
    const retries = await send(messages.map((m) => ({ nudge: m.body as NudgeDelivery<K>["nudge"], attempt: m.attempts })));
    messages.forEach((message, i) => (retries[i] === null ? message.ack() : message.retry({ delaySeconds: retries[i]! })));
  } catch (error) {
    console.error("sends queue: journey messages failed, retried", error);
    for (const message of messages) message.retry({ delaySeconds: sendRetryDelaySeconds(message.attempts) });
  }
}

/**
 * The sends queue consumer: campaign batches, each acknowledged once done and retried
 * otherwise, and journey SMS and push (services/journeys/queued-sends.ts), retried with backoff.
 */
export async function handleSendsQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const sms = batch.messages.filter((m) => isSmsNudge(m.body));
  const push = batch.messages.filter((m) => isPushNudge(m.body));
  const campaigns = batch.messages.filter((m) => !isSmsNudge(m.body) && !isPushNudge(m.body));
  await Promise.all([
    sendQueuedNudges<"sms">(sms, (deliveries) => sendQueuedSmsBatch(env, deliveries)),
    sendQueuedNudges<"push">(push, (deliveries) => sendQueuedPushBatch(env, deliveries)),
  ]);
  if (campaigns.length === 0) return;
  const provider = emailProvider(env);
  await Promise.all(
    campaigns.map(async (message) => {
      if (!isSendNudge(message.body)) {
        console.error("sends queue: unknown message dropped", message.body);
        message.ack();
        return;
      }
      try {
        await sendCampaignBatch(env, provider, message.body);
        message.ack();
      } catch (error) {
        console.error("sends queue: batch failed, retried", error);
        message.retry();
      }
    }),
  );
}
