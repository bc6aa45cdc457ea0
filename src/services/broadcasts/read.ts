import type { CampaignReport, RecipientFilter } from "../../domain/broadcast";
import type { CampaignRecipient } from "../../store/campaign-report";
import { getCampaign, listCampaigns, type Campaign, type CampaignCounters } from "../../store/campaigns/definitions";
import { abTestResults } from "./ab-test";
import type { OwningShards } from "../access/partitions";
import { campaignReport, countersAcross, countersOfCampaignsAcross, recipientsAcross, recipientsCsv, type CampaignShards } from "./report";

// What the panel reads of its campaigns; each answers null when the panel has no such campaign.
// `shards`: the home first, then the other shards holding the panel's partitions, where
// recipients are kept and counted (panelShards; the home alone for a panel without a map).

/** The panel's newest campaigns, each with its counters. */
export async function campaignsWithCounters(shards: CampaignShards, panelId: string, limit: number, archived = false): Promise<{ campaign: Campaign; counters: CampaignCounters }[]> {
  const campaigns = await listCampaigns(shards[0], panelId, limit, archived);
  const counters = await countersOfCampaignsAcross(shards, panelId, campaigns);
  return campaigns.map((campaign, i) => ({ campaign, counters: counters[i]! }));
}

export async function campaignWithCounters(shards: CampaignShards, panelId: string, campaignId: string): Promise<{ campaign: Campaign; counters: CampaignCounters } | null> {
  const campaign = await getCampaign(shards[0], panelId, campaignId);
  return campaign ? { campaign, counters: await countersAcross(shards, panelId, campaign) } : null;
}

export async function reportOfCampaign(shards: CampaignShards, panelId: string, campaignId: string): Promise<CampaignReport | null> {
  const campaign = await getCampaign(shards[0], panelId, campaignId);
  if (!campaign) return null;
  const [report, abTest] = await Promise.all([campaignReport(shards, campaign), abTestResults(shards, campaign)]);
  return { ...report, ab_test: abTest };
}

/**
 * The recipients behind a number of the report: a page by contact id, or (`csv`) every one of
 * them as a CSV stream; `shards` with their buckets (panelOwningShards, the home first).
 */
export async function recipientsOfCampaign(
  shards: OwningShards,
  panelId: string,
  campaignId: string,
  query: { filter: RecipientFilter; after: number; limit: number; format: "json" | "csv" },
): Promise<{ campaign: Campaign; csv: ReadableStream<Uint8Array> } | { campaign: Campaign; page: CampaignRecipient[] } | null> {
  const campaign = await getCampaign(shards[0].db, panelId, campaignId);
  if (!campaign) return null;
  if (query.format === "csv") return { campaign, csv: recipientsCsv(shards, campaign, query.filter) };
  return { campaign, page: await recipientsAcross(shards, campaign, query.filter, query.after, query.limit) };
}
