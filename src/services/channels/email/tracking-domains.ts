import { getTrackingDomain, recordTrackingDomainCheck, type TrackingDomain } from "../../../store/tracking-domains";
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

/** Looks the domain's CNAME up now and records whether it points at the Worker. */
export async function checkTrackingDomain(env: Pick<Env, "DOH_URL" | "PUBLIC_BASE_URL">, db: ShardDb, domain: TrackingDomain, now: number): Promise<TrackingDomainCheck> {
  const target = cnameTarget(env);
  const lookup = await lookupDns(config(env).dohUrl, domain.domain, "CNAME");
  const found = lookup.ok ? lookup.records : [];
  const reason = !lookup.ok ? lookup.error : found.includes(target) ? null : found.length ? `the CNAME points at ${found.join(", ")}, not ${target}` : `no CNAME record points ${domain.domain} at ${target}`;
  const recorded = await recordTrackingDomainCheck(db, domain.panelId, domain.domain, reason === null, now);
  return { domain: recorded ?? domain, found, reason };
}

/** The origin of a panel's tracking links: its verified tracking domain, else PUBLIC_BASE_URL. */
export async function trackingBaseUrl(env: Pick<Env, "PUBLIC_BASE_URL">, db: ShardDb, panelId: string): Promise<string> {
  const domain = await getTrackingDomain(db, panelId);
  return domain?.verified ? `https://${domain.domain}` : config(env).publicBaseUrl;
}
