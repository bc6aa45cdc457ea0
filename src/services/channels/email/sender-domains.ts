import {
  domainOfAddress,
  isVerified,
  judgeDkim,
  judgeDmarc,
  judgeSpf,
  SUGGESTED_DMARC,
  type DomainChecks,
} from "../../../domain/sender-domains";
import type { FieldProblem } from "../../../domain/problems";
import { decryptSecret, encryptSecret } from "../../../lib/crypto";
import { forEachShard, shardTask } from "../../access/shards";
import { TtlCache } from "../../../lib/ttl-cache";
import { lookupTxt } from "../../../lib/dns";
import { dueSenderDomains, getSenderDomain, insertSenderDomain, recordSenderDomainCheck, type SenderDomain } from "../../../store/sender-domains";
import type { ShardDb } from "../../../store/shards";
import { dkimRecord, generateDkimKey, importDkimPrivateKey, type DkimKey } from "./dkim";
import { config } from "../../../lib/config";

/**
 * A panel's sender domains: DKIM keys made when a domain is added (shown as the DNS records to
 * publish), its SPF, DKIM and DMARC records checked over DNS-over-HTTPS, and the signing keys
 * of a sender address when its mail goes out.
 */

/** Selectors of the keys: one name per algorithm, so both records can be published side by side. */
export const RSA_SELECTOR = "apiv2r";
export const ED25519_SELECTOR = "apiv2e";

/** The servers SPF must allow, per provider; the outbox sends nothing, so any SPF record does. */
const SPF_INCLUDES: Record<string, string> = { ses: "amazonses.com" };

export type SenderDomainEnv = Pick<Env, "SECRETS_KEY" | "EMAIL_PROVIDER" | "DOH_URL">;

export interface PublishRecord {
  purpose: "spf" | "dkim" | "dkim_ed25519" | "dmarc";
  type: "TXT";
  name: string;
  /** null: any SPF record that allows the servers you send through. */
  value: string | null;
}

export function recordsToPublish(domain: SenderDomain, provider: string): PublishRecord[] {
  const include = SPF_INCLUDES[provider] ?? null;
  return [
    { purpose: "spf", type: "TXT", name: domain.domain, value: include ? `v=spf1 include:${include} ~all` : null },
    { purpose: "dkim", type: "TXT", name: `${domain.rsaSelector}._domainkey.${domain.domain}`, value: dkimRecord("rsa-sha256", domain.rsaPublic) },
    { purpose: "dkim_ed25519", type: "TXT", name: `${domain.edSelector}._domainkey.${domain.domain}`, value: dkimRecord("ed25519-sha256", domain.edPublic) },
    { purpose: "dmarc", type: "TXT", name: `_dmarc.${domain.domain}`, value: SUGGESTED_DMARC },
  ];
}

/** Adds a sender domain with fresh keys; null when the panel already has it. */
export async function addSenderDomain(env: SenderDomainEnv, db: ShardDb, panelId: string, domain: string, now: number): Promise<SenderDomain | null> {
  const [rsa, ed] = await Promise.all([generateDkimKey("rsa-sha256"), generateDkimKey("ed25519-sha256")]);
  const record: SenderDomain = {
    panelId,
    domain,
    rsaSelector: RSA_SELECTOR,
    rsaPrivateSealed: await encryptSecret(config(env).secretsKey, rsa.privatePkcs8),
    rsaPublic: rsa.publicKey,
    edSelector: ED25519_SELECTOR,
    edPrivateSealed: await encryptSecret(config(env).secretsKey, ed.privatePkcs8),
    edPublic: ed.publicKey,
    state: "pending",
    edPublished: false,
    checks: null,
    checkedAt: null,
    createdAt: now,
  };
  return (await insertSenderDomain(db, record)) ? record : null;
}

/**
 * Looks up SPF, both DKIM keys and DMARC of the domain and records the outcome. With
 * `keepVerifiedOnLookupFailure` (the scheduled re-check), a verified domain whose lookups failed
 * at the resolver (not a record found missing) stays verified: an outage of the resolver must
 * not stop every panel's email.
 */
export async function checkSenderDomain(env: SenderDomainEnv, db: ShardDb, domain: SenderDomain, now: number, options: { keepVerifiedOnLookupFailure?: boolean } = {}): Promise<SenderDomain> {
  const { emailProvider: provider, dohUrl } = config(env);
  const records = recordsToPublish(domain, provider);
  const names = records.map((r) => r.name);
  const lookups = await Promise.all(names.map((name) => lookupTxt(dohUrl, name)));
  const found = lookups.map((l) => (l.ok ? l.records : []));
  const failed = (i: number, check: DomainChecks[keyof DomainChecks]) => {
    const lookup = lookups[i]!;
    return lookup.ok ? check : { ...check, status: "fail" as const, reason: lookup.error };
  };
  const checks: DomainChecks = {
    spf: failed(0, judgeSpf(names[0]!, found[0]!, SPF_INCLUDES[provider] ?? null)),
    dkim: failed(1, judgeDkim(names[1]!, found[1]!, records[1]!.value!)),
    dkim_ed25519: failed(2, judgeDkim(names[2]!, found[2]!, records[2]!.value!)),
    dmarc: failed(3, judgeDmarc(names[3]!, found[3]!)),
  };
  const resolverFailed = lookups.some((l) => !l.ok);
  const state = isVerified(checks) || (options.keepVerifiedOnLookupFailure && resolverFailed && domain.state === "verified") ? "verified" : "failed";
  signingKeys.clear();
  return (await recordSenderDomainCheck(db, domain.panelId, domain.domain, { state, edPublished: checks.dkim_ed25519.status === "pass", checks }, now)) ?? domain;
}

/** How mail from one address is signed, and whether its domain may send real email. */
export interface SenderSigning {
  domain: string;
  verified: boolean;
  keys: DkimKey[];
}

/** Signing keys per panel and domain, kept for a minute per isolate (a campaign signs every batch with them). */
const signingKeys = new TtlCache<Promise<SenderSigning>>(60_000, 200);

/**
 * The DKIM keys of the sender address's domain in the panel: RSA always once the domain is
 * added, Ed25519 too once its record was found published. A domain the panel does not have
 * signs nothing and is not verified.
 */
export function senderSigning(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string, address: string): Promise<SenderSigning> {
  const domainName = domainOfAddress(address);
  const cacheKey = `${panelId} ${domainName}`;
  let entry = signingKeys.get(cacheKey);
  if (!entry) {
    entry = (async () => {
      const domain = await getSenderDomain(db, panelId, domainName);
      if (!domain) return { domain: domainName, verified: false, keys: [] };
      const keys: DkimKey[] = [
        { domain: domainName, selector: domain.rsaSelector, algorithm: "rsa-sha256", privateKey: await importDkimPrivateKey("rsa-sha256", await decryptSecret(config(env).secretsKey, domain.rsaPrivateSealed)) },
      ];
      if (domain.edPublished) {
        keys.push({
          domain: domainName,
          selector: domain.edSelector,
          algorithm: "ed25519-sha256",
          privateKey: await importDkimPrivateKey("ed25519-sha256", await decryptSecret(config(env).secretsKey, domain.edPrivateSealed)),
        });
      }
      return { domain: domainName, verified: domain.state === "verified", keys };
    })();
    entry.catch(() => signingKeys.clear());
    signingKeys.set(cacheKey, entry);
  }
  return entry;
}

/** Forgets cached signing keys (a domain was removed or checked). */
export function forgetSenderSigning(): void {
  signingKeys.clear();
}

/** Why mail from this sender may not go out through this provider; null when it may. */
export function unverifiedSenderProblem(signing: Pick<SenderSigning, "domain" | "verified">, providerSendsRealEmail: boolean): string | null {
  if (signing.verified || !providerSendsRealEmail) return null;
  return `the sender domain ${signing.domain} is not verified in this panel: add it (POST /admin/v1/panels/{panel}/sender-domains), publish its SPF, DKIM and DMARC records and verify it`;
}

/** What the outbox says of mail it keeps from a domain a real provider would refuse. */
export function unverifiedSenderNote(domain: string): string {
  return `the sender domain ${domain} is not verified in this panel; a provider that sends real email would refuse this message`;
}

/** Whether the configured provider delivers to recipients (the outbox keeps every message). */
export function providerSendsRealEmail(env: Pick<Env, "EMAIL_PROVIDER">): boolean {
  return config(env).emailProvider !== "outbox";
}

/**
 * Whether mail from this address may be scheduled in the panel (a campaign created, a journey
 * started), asked before anything is written so that a send does not fail message by message
 * later: refused when the provider sends real email and the domain is not verified; allowed
 * with a note when the outbox would keep such mail.
 */
export async function senderStanding(env: Pick<Env, "EMAIL_PROVIDER">, db: ShardDb, panelId: string, address: string): Promise<{ refusal: string | null; note: string | null }> {
  const domain = domainOfAddress(address);
  const verified = (await getSenderDomain(db, panelId, domain))?.state === "verified";
  if (verified) return { refusal: null, note: null };
  const refusal = unverifiedSenderProblem({ domain, verified }, providerSendsRealEmail(env));
  return refusal ? { refusal, note: null } : { refusal: null, note: unverifiedSenderNote(domain) };
}

/** The standing of several senders (a journey's email steps), each named by its field: refusals and notes. */
export async function sendersStanding(
  env: Pick<Env, "EMAIL_PROVIDER">,
  db: ShardDb,
  panelId: string,
  senders: readonly { field: string; address: string }[],
): Promise<{ problems: FieldProblem[]; notes: FieldProblem[] }> {
  const standings = await Promise.all(senders.map((s) => senderStanding(env, db, panelId, s.address)));
  const problems: FieldProblem[] = [];
  const notes: FieldProblem[] = [];
  standings.forEach(({ refusal, note }, i) => {
    if (refusal) problems.push({ field: senders[i]!.field, message: refusal });
    if (note) notes.push({ field: senders[i]!.field, message: note });
  });
  return { problems, notes };
}

/** How often the cron looks a domain up again: verified ones daily, the others (records not yet published, or broken) hourly. */
export const RECHECK_VERIFIED_MS = 24 * 3_600_000;
export const RECHECK_OTHERS_MS = 3_600_000;
/** Domains re-checked per cron minute (four DNS lookups each). */
const RECHECKS_PER_RUN = 10;

/**
 * The scheduled re-check: records removed or changed since the last check un-verify the domain
 * (its mail is then refused by a real provider at the next campaign, journey start or send),
 * and records published since verify it without the operator pressing Verify.
 */
export async function recheckSenderDomains(env: Env, now: number): Promise<void> {
  await forEachShard(env, "recheck-sender-domains", (db) => recheckOnShard(env, db, now));
}

async function recheckOnShard(env: Env, db: ShardDb, now: number): Promise<void> {
  const due = await dueSenderDomains(db, now - RECHECK_VERIFIED_MS, now - RECHECK_OTHERS_MS, RECHECKS_PER_RUN);
  for (const domain of due) {
    const checked = await checkSenderDomain(env, db, domain, now, { keepVerifiedOnLookupFailure: true });
    if (domain.state === "verified" && checked.state !== "verified") {
      console.warn(`sender domain ${domain.domain} of panel ${domain.panelId} is no longer verified: ${describeFailures(checked)}`);
    }
  }
}

function describeFailures(domain: SenderDomain): string {
  if (!domain.checks) return "not checked";
  return (["spf", "dkim", "dmarc"] as const)
    .filter((name) => domain.checks![name].status === "fail")
    .map((name) => `${name}: ${domain.checks![name].reason}`)
    .join("; ");
}

export const recheckSenderDomainsTask = shardTask("recheck-sender-domains", (env, db, _index, now) => recheckOnShard(env, db, now));
