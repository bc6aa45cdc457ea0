import { variantIndex } from "../../domain/ab-test";
import { bodyWarnings, linksToCheck, type CampaignWarning } from "../../domain/campaign-checks";
import { withoutLinkMarks } from "../../domain/email-message";
import type { EmailSource } from "../../domain/email-source";
import { personalize } from "../../domain/merge-tags";
import { normalisePrimaryKey } from "../../domain/primary-key";
import { fetchOutbound, OutboundError, type OutboundEnv } from "../../lib/outbound";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { loadAttributeSchema } from "../../store/attributes";
import { campaignBodySource, getCampaign, type Campaign } from "../../store/campaigns/definitions";
import { getContactByKey } from "../../store/contacts";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { contentOf } from "./send";
import { contactDb } from "../access/partitions";

/**
 * A campaign's body as written, its preview as one contact gets it, and the checks before it
 * is scheduled (issue 43, item 5). Merge tags are filled by the one renderer, `personalize`.
 */

/** Links tried per check, how many at once, and each one's time (HEAD, then GET where HEAD fails). */
export const LINK_CHECKS = { max: 20, concurrency: 5, timeoutMs: 3_000, maxRedirects: 5 };

export type LinkCheckTuning = typeof LINK_CHECKS;

const noSuchCampaign = (id: string) => refused("not_found", [], `No campaign with id "${id}" in this panel`);

/** The source HTML kept for the campaign (R2), merge tags as written. */
async function bodyOf(files: R2Bucket, campaign: Pick<Campaign, "id" | "bodyKey">): Promise<string> {
  const object = await files.get(campaign.bodyKey);
  if (!object) throw new Error(`campaign ${campaign.id}: body ${campaign.bodyKey} is missing from R2`);
  return object.text();
}

export interface CampaignBody {
  campaign: Campaign;
  subject: string;
  html: string;
  /** The visual editor's source of the HTML; null: written by hand. */
  source: EmailSource | null;
}

export async function campaignBody(env: Env, db: ShardDb, panelId: string, campaignId: string): Promise<Result<CampaignBody>> {
  const campaign = await getCampaign(db, panelId, campaignId);
  if (!campaign) return noSuchCampaign(campaignId);
  return succeeded({ campaign, subject: campaign.subject, html: await bodyOf(env.FILES, campaign), source: (await campaignBodySource(db, panelId, campaignId)) ?? null });
}

export interface CampaignPreview {
  subject: string;
  html: string;
  /** The contact's key whose attributes filled the tags; null: every tag shows its fallback. */
  contact: string | null;
}

/**
 * The campaign (or its A/B test's `variant`, by letter) as the contact `contactKey` would get it
 * (every merge tag from its attributes, the fallback where one is missing or empty), or with
 * every fallback without a contact.
 * Unsubscribe and preference links are inert: the preview is no recipient's.
 */
export async function previewCampaign(env: Env, db: ShardDb, panel: Panel, campaignId: string, contactKey: string | null, variant: string | null = null): Promise<Result<CampaignPreview>> {
  const campaign = await getCampaign(db, panel.id, campaignId);
  if (!campaign) return noSuchCampaign(campaignId);
  // One A/B variant's subject and body (its own where it has them, the campaign's otherwise), as its recipients get them.
  const index = variant === null ? null : variantIndex(campaign.abTest, variant);
  if (typeof index === "string") return refusedField("invalid", "variant", index);
  const content = contentOf(campaign, index);
  const html = await bodyOf(env.FILES, { ...campaign, bodyKey: content.bodyKey });
  let attributes = {};
  let contact: string | null = null;
  if (contactKey !== null) {
    const schema = await loadAttributeSchema(db, panel.id);
    const key = normalisePrimaryKey(panel.primaryKey, schema.get(panel.primaryKey) ?? "string", contactKey);
    if (!key.ok) return refusedField("invalid", "contact", key.reason);
    // The contact lives on its key's partition (decision 0038); a panel without a map, on its home.
    const found = await getContactByKey(contactDb(env, panel, db, key.value), panel.id, key.value);
    if (!found) return refusedField("invalid", "contact", `no contact with ${panel.primaryKey} "${key.value}" in this panel`);
    attributes = found.attributes;
    contact = key.value;
  }
  return succeeded({
    subject: personalize(content.subject, attributes, "plain"),
    html: withoutLinkMarks(personalize(html, attributes, "html"), "#"),
    contact,
  });
}

/** Whether `url` answers: HEAD, then GET where HEAD is refused or fails; the reason when it does not. */
async function linkProblem(env: OutboundEnv, url: string, tuning: LinkCheckTuning): Promise<string | null> {
  const attempt = async (method: "HEAD" | "GET"): Promise<string | null> => {
    try {
      const response = await fetchOutbound(env, url, { method }, { timeoutMs: tuning.timeoutMs, maxRedirects: tuning.maxRedirects });
      await response.body?.cancel();
      return response.status < 400 ? null : `answers ${response.status}`;
    } catch (error) {
      if (error instanceof OutboundError) return error.message;
      throw error;
    }
  };
  const head = await attempt("HEAD");
  return head === null ? null : attempt("GET");
}

/** Each link that does not answer, at most `tuning.max` links tried, `tuning.concurrency` at once. */
async function linkWarnings(env: OutboundEnv, html: string, tuning: LinkCheckTuning): Promise<CampaignWarning[]> {
  const links = linksToCheck(html);
  const tried = links.slice(0, tuning.max);
  const problems: Array<string | null> = new Array(tried.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < tried.length) {
      const i = next++;
      problems[i] = await linkProblem(env, tried[i]!, tuning);
    }
  };
  await Promise.all(Array.from({ length: Math.min(tuning.concurrency, tried.length) }, worker));
  const warnings: CampaignWarning[] = tried.flatMap((url, i) => (problems[i] === null ? [] : [{ kind: "link" as const, subject: url, message: `the link does not answer: ${problems[i]}` }]));
  if (links.length > tried.length) {
    warnings.push({ kind: "link", subject: null, message: `${links.length - tried.length} more links were not tried (at most ${tuning.max} a check)` });
  }
  return warnings;
}

/** The checks before scheduling: unknown merge tags, no unsubscribe link, images without alt text, links that do not answer. */
export async function checkCampaign(env: Env, db: ShardDb, panelId: string, campaignId: string, tuning: LinkCheckTuning = LINK_CHECKS): Promise<Result<CampaignWarning[]>> {
  const body = await campaignBody(env, db, panelId, campaignId);
  if (!body.ok) return body;
  const attributes = new Set((await loadAttributeSchema(db, panelId)).keys());
  return succeeded([...bodyWarnings(body.value.subject, body.value.html, attributes), ...(await linkWarnings(env, body.value.html, tuning))]);
}
