import { recordAudit, type Auditor } from "../audit/record";
import type { EmailProvider } from "../channels/email/provider";
import { emailProvider } from "../channels/email/providers";
import { planSender } from "../channels/email/signing";
import { EMAIL_ATTRIBUTE, normaliseEmail } from "../../domain/email";
import { buildMime, withoutLinkMarks } from "../../domain/email-message";
import { personalize } from "../../domain/merge-tags";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { randomHex } from "../../lib/random";
import { getCampaign, type Campaign } from "../../store/campaigns/definitions";
import type { Panel } from "../../store/panels";
import { getContactByKey } from "../../store/contacts";
import type { ShardDb } from "../../store/shards";
import { variantIndex, variantLabel } from "../../domain/ab-test";
import { campaignTemplates, contentOf } from "./send";
import { contactDb } from "../access/partitions";

export type TestSendOutcome = Result<{ messageId: string }>;

export const TEST_SUBJECT_PREFIX = "[Test] ";

/**
 * Sends one copy of a campaign to `to`, through the campaign's own templates, personalisation,
 * sender checks, DKIM signing and email provider. It is not a recipient's message: no row in
 * the campaign's recipients (so no counter moves), links left as written, no open pixel and no
 * unsubscribe link. Filled with the attributes of the contact `to` names when the panel's
 * primary key is EMAIL and it exists (read on its key's partition, decision 0038), else with
 * each merge tag's fallback.
 */
export async function sendCampaignTest(
  env: Env,
  provider: EmailProvider,
  db: ShardDb,
  panel: Pick<Panel, "id" | "primaryKey" | "shard" | "partitions">,
  campaign: Campaign,
  to: string,
  now = Date.now(),
  variant: number | null = null,
): Promise<TestSendOutcome> {
  const address = normaliseEmail(to);
  if (!address.ok) return refusedField("invalid", "email", address.reason);
  const sender = await planSender(env, db, provider, panel.id, campaign.senderEmail);
  if (!sender.ok) return refusedField("invalid", "sender_email", sender.error);
  const contact = panel.primaryKey === EMAIL_ATTRIBUTE ? await getContactByKey(contactDb(env, panel, db, address.value), panel.id, address.value) : null;
  const attributes = { ...contact?.attributes, [EMAIL_ATTRIBUTE]: address.value };
  // An A/B variant's copy is what its recipients get: its own subject and body where it has them.
  const { html, text, subject } = await campaignTemplates(env.FILES, contentOf(campaign, variant));
  const id = `${campaign.id}.test.${randomHex(6)}`;
  const subjectLine = (variant === null ? TEST_SUBJECT_PREFIX : `[Test ${variantLabel(variant)}] `) + personalize(subject, attributes, "plain");
  const unsigned = buildMime({
    from: { name: campaign.senderName, address: campaign.senderEmail },
    to: address.value,
    subject: subjectLine,
    html: withoutLinkMarks(personalize(html, attributes, "html"), "#"),
    text: withoutLinkMarks(personalize(text, attributes, "text"), "(no unsubscribe link in a test copy)"),
    messageId: id,
    date: now,
    replyTo: campaign.replyTo,
    headers: { "X-Campaign-ID": campaign.id, "X-Test-Send": variant === null ? "1" : variantLabel(variant) },
  });
  const raw = await sender.sign(unsigned, now);
  const [result] = await provider.send(
    [{ id, panelId: panel.id, campaignId: campaign.id, from: campaign.senderEmail, to: address.value, subject: subjectLine, raw, note: sender.note ? `test send; ${sender.note}` : "test send" }],
    now,
  );
  if (!result?.ok) return refusedField("upstream", "email", `the email provider did not take the message: ${result?.error ?? "no answer"}`);
  return succeeded({ messageId: id });
}

/**
 * The panel's "send a test copy" of its campaign `campaignId` (or of its A/B test's `variant`, by
 * letter) to each of `to`, recorded in the audit log once per address sent. Every address is checked before the first copy goes.
 */
export async function sendTestCopy(
  env: Env,
  db: ShardDb,
  panel: Panel,
  campaignId: string,
  to: readonly string[],
  by: Auditor,
  variant: string | null = null,
): Promise<Result<{ messageIds: string[] }>> {
  const campaign = await getCampaign(db, panel.id, campaignId);
  if (!campaign) return refused("not_found", [], `No campaign with id "${campaignId}" in this panel`);
  const field = (i: number) => (to.length === 1 ? "email" : `emails.${i}`);
  const bad = to.flatMap((address, i) => {
    const checked = normaliseEmail(address);
    return checked.ok ? [] : [{ field: field(i), message: checked.reason }];
  });
  const index = variant === null ? null : variantIndex(campaign.abTest, variant);
  if (typeof index === "string") bad.push({ field: "variant", message: index });
  if (bad.length) return refused("invalid", bad);
  const messageIds: string[] = [];
  for (const [i, address] of to.entries()) {
    const outcome = await sendCampaignTest(env, emailProvider(env), db, panel, campaign, address, Date.now(), typeof index === "number" ? index : null);
    if (!outcome.ok) {
      // Copies already sent stay sent: say which went, with the refusal.
      const sent = messageIds.length ? ` (copies went to ${to.slice(0, i).join(", ")})` : "";
      return refused(outcome.problem.kind, outcome.problem.fields.map((f) => ({ field: f.field === "email" ? field(i) : f.field, message: f.message + sent })), outcome.problem.message);
    }
    messageIds.push(outcome.value.messageId);
    await recordAudit(db, panel.id, by, "campaign.test_sent", campaign.id, { name: campaign.name, ...(variant === null ? {} : { variant }) });
  }
  return succeeded({ messageIds });
}
