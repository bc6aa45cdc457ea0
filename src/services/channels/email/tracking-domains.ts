import { getTrackingDomain, recordTrackingDomainCheck, trackingDomainHeldElsewhere, type TrackingDomain } from "../../../store/tracking-domains";
import type { ShardDb } from "../../../store/shards";
import { lookupDns } from "../../../lib/dns";
import { config } from "../../../lib/config";

/**
 * A panel's own tracking domain: its email's links, pixel and unsubscribe link under
 * `https://{domain}` instead of PUBLIC_BASE_URL, so they match the sender's domain. The domain
 * is a CNAME to the Worker's host (the host of PUBLIC_BASE_URL, served for it with Cloudflare
 * for SaaS custom hostnames); it is used only once that CNAME was found. Tokens name no host,
 * so links keep working whichever host serves them.
 */

/** The Worker's host that the CNAME must point at. */
export function cnameTarget(env: Pick<Env, "PUBLIC_BASE_URL">): string {
  return new URL(config(env).publicBaseUrl).hostname;
}

export interface TrackingDomainCheck {
  domain: TrackingDomain;
  found: string[];
  reason: string | null;
}

/**
 * Whether another panel of the deployment (on any shard) uses `domain` as its verified tracking
 * domain. The CNAME proves only that the domain points at this deployment, which every panel
 * shares: the first panel to verify it keeps it, so no other can put its links on that brand.
 */
export async function trackingDomainTaken(shards: readonly ShardDb[], domain: string, panelId: string): Promise<boolean> {
  const held = await Promise.all(shards.map((shard) => trackingDomainHeldElsewhere(shard, domain, panelId)));
  return held.includes(true);
}

export const TAKEN_REASON = "another panel of this deployment uses this tracking domain: it can be used here once removed there";

/** Looks the domain's CNAME up now and records whether it points at the Worker and no other panel holds it. */
export async function checkTrackingDomain(env: Pick<Env, "DOH_URL" | "PUBLIC_BASE_URL">, db: ShardDb, shards: readonly ShardDb[], domain: TrackingDomain, now: number): Promise<TrackingDomainCheck> {
  const target = cnameTarget(env);
  const lookup = await lookupDns(config(env).dohUrl, domain.domain, "CNAME");
  const found = lookup.ok ? lookup.records : [];
  const pointed = !lookup.ok ? lookup.error : found.includes(target) ? null : found.length ? `the CNAME points at ${found.join(", ")}, not ${target}` : `no CNAME record points ${domain.domain} at ${target}`;
  const reason = pointed ?? ((await trackingDomainTaken(shards, domain.domain, domain.panelId)) ? TAKEN_REASON : null);
  const recorded = await recordTrackingDomainCheck(db, domain.panelId, domain.domain, reason === null, now);
  return { domain: recorded ?? domain, found, reason };
}

/** The origin of a panel's tracking links: its verified tracking domain, else PUBLIC_BASE_URL. */
export async function trackingBaseUrl(env: Pick<Env, "PUBLIC_BASE_URL">, db: ShardDb, panelId: string): Promise<string> {
  const domain = await getTrackingDomain(db, panelId);
  return domain?.verified ? `https://${domain.domain}` : config(env).publicBaseUrl;
}
