import type { AudienceCampaignRequest, BroadcastRequest } from "../../domain/broadcast";
import { succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { loadAttributeSchema } from "../../store/attributes";
import { campaignCounters } from "../../store/campaign-report";
import { getCampaign, type Campaign, type CampaignCounters } from "../../store/campaigns/definitions";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { isoTime } from "../../store/sql";
import { recordAudit, type Auditor } from "../audit/record";
import { createAudienceCampaign } from "./audience";
import { createBroadcast } from "./create";

/**
 * A panel's new campaign: to an audience of lists and segments (CONTRACT 9), scheduled or kept
 * a draft, or the broadcast request of 4.10 with its contacts file (always scheduled, as 4.10 says).
 */
export type CampaignRequest = { kind: "audience"; request: AudienceCampaignRequest; draft?: boolean } | { kind: "broadcast"; request: BroadcastRequest };

/** Refused when the input broke a rule (invalid) or the broadcast's list name is taken (conflict). */
export type CreateCampaignOutcome = Result<{
  campaign: Campaign;
  counters: CampaignCounters;
  /** Said to the operator when the outbox accepts a sender domain a real provider would refuse, about `senderField`. */
  senderNote: string | null;
  senderField: "sender_email" | "sender_email_id";
}>;

/** Creates and schedules a campaign from the panel (or keeps it a draft), and records who published or drafted it. */
export async function createCampaign(
  ctx: { env: Env; db: ShardDb; panel: Panel; now: number },
  input: CampaignRequest,
  by: Auditor,
): Promise<CreateCampaignOutcome> {
  const { env, db, panel, now } = ctx;
  let created: { campaignId: string; senderNote: string | null; senderField: "sender_email" | "sender_email_id" };
  if (input.kind === "audience") {
    const outcome = await createAudienceCampaign({ env, db, panel, requestId: newId("req"), now }, input.request, input.draft ? "draft" : "scheduled");
    if (!outcome.ok) return outcome;
    created = { ...outcome.value, senderField: "sender_email" };
  } else {
    const schema = { primaryKey: panel.primaryKey, attributes: await loadAttributeSchema(db, panel.id) };
    const outcome = await createBroadcast({ env, db, panel, schema, requestId: newId("req"), now }, input.request);
    if (!outcome.ok) return outcome;
    created = { campaignId: outcome.value.campaignId, senderNote: outcome.value.senderNote, senderField: "sender_email_id" };
  }
  const campaign = await getCampaign(db, panel.id, created.campaignId);
  if (!campaign) throw new Error(`campaign ${created.campaignId} was not stored`);
  if (campaign.status === "draft") await recordAudit(db, panel.id, by, "campaign.drafted", campaign.id, { name: campaign.name });
  else await recordAudit(db, panel.id, by, "campaign.published", campaign.id, { name: campaign.name, send_at: isoTime(campaign.sendAt) });
  return succeeded({ campaign, counters: await campaignCounters(db, panel.id, campaign), senderNote: created.senderNote, senderField: created.senderField });
}
