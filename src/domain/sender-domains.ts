import { z } from "../lib/z";

/**
 * Sender domains: the domains a panel sends from, each with its DKIM keys and the result of
 * its last DNS check. Rules only here; the keys and the lookups are in
 * services/channels/email/sender-domains.ts.
 */

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A domain as DNS writes it: lower-case labels, at least two, an internationalised one in punycode. */
export function senderDomainProblem(domain: string): string | null {
  if (domain.length > 253) return "must be at most 253 characters";
  const labels = domain.split(".");
  if (labels.length < 2) return `must be a domain with at least two labels, such as example.com, not "${domain}"`;
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) return `must be a domain name (letters, digits and hyphens between dots), not "${domain}"`;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return `must be a domain name, not an IP address: "${domain}"`;
  return null;
}

/** A domain as typed (any case, a trailing dot, Unicode) in its DNS form. */
export function normaliseDomain(text: string): string {
  const trimmed = text.trim().replace(/\.$/, "").toLowerCase();
  if (/^[\x21-\x7e]*$/.test(trimmed)) return trimmed;
  try {
    return new URL(`http://${trimmed}`).hostname;
  } catch {
    return trimmed;
  }
}

export const senderDomainName = z
  .string({ error: "must be a domain name" })
  .max(300, { abort: true, error: "must be at most 253 characters" })
  .transform(normaliseDomain)
  .check((ctx) => {
    const problem = senderDomainProblem(ctx.value);
    if (problem) ctx.issues.push({ code: "custom", input: ctx.value, message: problem });
  })
  .meta({ description: "The domain of the sender addresses (the part after @)", example: "shop.example.com" });

/** POST /panels/{panel}/sender-domains. */
export const createSenderDomainBody = z.strictObject({ domain: senderDomainName });

/** The domain of an address (after the last @), as DNS writes it. */
export function domainOfAddress(address: string): string {
  return normaliseDomain(address.slice(address.lastIndexOf("@") + 1));
}

export type CheckStatus = "pass" | "fail";

export interface RecordCheck {
  status: CheckStatus;
  /** The DNS name looked up. */
  name: string;
  /** The record to publish there; null where any record of the kind will do. */
  expected: string | null;
  /** The records of the kind found there. */
  found: string[];
  /** Why it failed, in words; null when it passed. */
  reason: string | null;
}

export interface DomainChecks {
  spf: RecordCheck;
  dkim: RecordCheck;
  dkim_ed25519: RecordCheck;
  dmarc: RecordCheck;
}

/** The DMARC policy suggested to a domain without one: monitoring first, as the large mailbox providers require at least. */
export const SUGGESTED_DMARC = "v=DMARC1; p=none; adkim=r; aspf=r";

/** The tags of a DKIM or DMARC record (`k=v; k=v`), names lower-cased, spaces removed from values. */
export function recordTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ""));
  }
  return tags;
}

/** SPF: one `v=spf1` record, which includes the provider's servers when the provider names them. */
export function judgeSpf(name: string, found: string[], include: string | null): RecordCheck {
  const spf = found.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  const expected = include ? `v=spf1 include:${include} ~all` : null;
  const fail = (reason: string): RecordCheck => ({ status: "fail", name, expected, found: spf, reason });
  if (spf.length === 0) return fail("no SPF record (v=spf1) is published");
  if (spf.length > 1) return fail(`${spf.length} SPF records are published; receivers treat more than one as an error`);
  if (include && !spf[0]!.toLowerCase().split(/\s+/).includes(`include:${include}`)) return fail(`the SPF record does not include:${include}, the sending provider's servers`);
  return { status: "pass", name, expected, found: spf, reason: null };
}

/** DKIM: the record at the selector carries exactly this public key. */
export function judgeDkim(name: string, found: string[], expected: string): RecordCheck {
  const want = recordTags(expected).get("p");
  const dkim = found.filter((r) => recordTags(r).has("p"));
  const fail = (reason: string): RecordCheck => ({ status: "fail", name, expected, found: dkim, reason });
  if (dkim.length === 0) return fail("no DKIM record is published at this name");
  if (!dkim.some((r) => recordTags(r).get("p") === want)) return fail("the published DKIM key is not this domain's key");
  return { status: "pass", name, expected, found: dkim, reason: null };
}

/** DMARC: one `v=DMARC1` record with a policy. */
export function judgeDmarc(name: string, found: string[]): RecordCheck {
  const dmarc = found.filter((r) => /^v=DMARC1\s*(;|$)/i.test(r.trim()));
  const fail = (reason: string): RecordCheck => ({ status: "fail", name, expected: SUGGESTED_DMARC, found: dmarc, reason });
  if (dmarc.length === 0) return fail("no DMARC record (v=DMARC1) is published");
  if (dmarc.length > 1) return fail(`${dmarc.length} DMARC records are published; receivers ignore them all`);
  const policy = recordTags(dmarc[0]!).get("p");
  if (!policy || !["none", "quarantine", "reject"].includes(policy.toLowerCase())) return fail("the DMARC record has no policy (p=none, quarantine or reject)");
  return { status: "pass", name, expected: SUGGESTED_DMARC, found: dmarc, reason: null };
}

/** Verified: SPF, the RSA DKIM key and DMARC pass. The Ed25519 key is a second signature, signed only once published. */
export function isVerified(checks: DomainChecks): boolean {
  return checks.spf.status === "pass" && checks.dkim.status === "pass" && checks.dmarc.status === "pass";
}
