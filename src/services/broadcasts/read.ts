import type { CampaignReport, RecipientFilter } from "../../domain/broadcast";
import { campaignCounters, campaignRecipients, countersOfCampaigns, type CampaignRecipient } from "../../store/campaign-report";
import { getCampaign, listCampaigns, type Campaign, type CampaignCounters } from "../../store/campaigns";
import type { ShardDb } from "../../store/shards";
import { abTestResults } from "./ab-test";
import { campaignReport, recipientsCsv } from "./report";

// What the panel reads of its campaigns; each answers null when the panel has no such campaign.

/** The panel's newest campaigns, each with its counters. */
export async function campaignsWithCounters(db: ShardDb, panelId: string, limit: number, archived = false): Promise<{ campaign: Campaign; counters: CampaignCounters }[]> {
  const campaigns = await listCampaigns(db, panelId, limit, archived);
  const counters = await countersOfCampaigns(db, panelId, campaigns);
  return campaigns.map((campaign, i) => ({ campaign, counters: counters[i]! }));
}

export async function campaignWithCounters(db: ShardDb, panelId: string, campaignId: string): Promise<{ campaign: Campaign; counters: CampaignCounters } | null> {
  const campaign = await getCampaign(db, panelId, campaignId);
  return campaign ? { campaign, counters: await campaignCounters(db, panelId, campaign) } : null;
}

export async function reportOfCampaign(db: ShardDb, panelId: string, campaignId: string): Promise<CampaignReport | null> {
  const campaign = await getCampaign(db, panelId, campaignId);
  if (!campaign) return null;
  const [report, abTest] = await Promise.all([campaignReport(db, campaign), abTestResults(db, campaign)]);
  return { ...report, ab_test: abTest };
}

/** The recipients behind a number of the report: a page by contact id, or (`csv`) every one of them as a CSV stream. */
export async function recipientsOfCampaign(
  db: ShardDb,
  panelId: string,
  campaignId: string,
  query: { filter: RecipientFilter; after: number; limit: number; format: "json" | "csv" },
): Promise<{ campaign: Campaign; csv: ReadableStream<Uint8Array> } | { campaign: Campaign; page: CampaignRecipient[] } | null> {
  const campaign = await getCampaign(db, panelId, campaignId);
  if (!campaign) return null;
  if (query.format === "csv") return { campaign, csv: recipientsCsv(db, campaign, query.filter) };
  return { campaign, page: await campaignRecipients(db, panelId, campaign.id, query.filter, query.after, query.limit) };
}
