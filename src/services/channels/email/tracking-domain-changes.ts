import { allShards, type ShardDb } from "../../../store/shards";
import { deleteTrackingDomain, getTrackingDomain, putTrackingDomain, type TrackingDomain } from "../../../store/tracking-domains";
import { refusedField, succeeded, type Result } from "../../../lib/problems";
import { recordAudit, type Auditor } from "../../audit/record";
import { checkTrackingDomain, TAKEN_REASON, trackingDomainTaken, type TrackingDomainCheck } from "./tracking-domains";

// The panel's use cases on its tracking domain (one per panel): set, check the CNAME now, remove.

/** Every shard of the deployment: any panel on any of them may hold a tracking domain. */
const deploymentShards = (env: Env) => allShards(env).map((shard) => shard.db);

/**
 * Sets the panel's tracking domain (unverified until its CNAME is checked); refused (conflict)
 * while another panel of the deployment uses it verified.
 */
export async function setTrackingDomain(env: Env, db: ShardDb, panelId: string, name: string, by: Auditor): Promise<Result<TrackingDomain>> {
  if (await trackingDomainTaken(deploymentShards(env), name, panelId)) return refusedField("conflict", "domain", TAKEN_REASON);
  const domain = await putTrackingDomain(db, panelId, name, Date.now());
  await recordAudit(db, panelId, by, "tracking_domain.set", domain.domain);
  return succeeded(domain);
}

/** Checks the tracking domain's CNAME, and that no other panel holds it, now; null when the panel has none. */
export async function verifyTrackingDomain(env: Env, db: ShardDb, panelId: string): Promise<TrackingDomainCheck | null> {
  const domain = await getTrackingDomain(db, panelId);
  return domain ? checkTrackingDomain(env, db, deploymentShards(env), domain, Date.now()) : null;
}

/** Removes the panel's tracking domain; false when it has none. */
export async function removeTrackingDomain(db: ShardDb, panelId: string, by: Auditor): Promise<boolean> {
  if (!(await deleteTrackingDomain(db, panelId))) return false;
  await recordAudit(db, panelId, by, "tracking_domain.removed", panelId);
  return true;
}
