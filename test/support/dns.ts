import { env } from "cloudflare:workers";
import { addSenderDomain, forgetSenderSigning } from "../../src/services/channels/email/sender-domains";
import { panelData } from "./helpers";

/**
 * The DNS of the tests: TXT records served by the loopback receiver's stand-in of the
 * DNS-over-HTTPS JSON API (DOH_URL points at it), and DKIM verdicts from mailauth, run in Node
 * as a receiving server runs it, with the key records resolved from what a test published.
 */

/**
 * Publishes DNS records: "name" -> TXT records, "name CNAME" / "name A" / "name AAAA" -> records of
 * that type; "SERVFAIL" makes lookups of the key fail. Names are added to what is there.
 */
export async function publishTxt(records: Record<string, string[] | "SERVFAIL">): Promise<void> {
  const bucket = new URL(env.DOH_URL).pathname.split("/").pop();
  const response = await fetch(`${env.RECEIVER_URL}/__dns/${bucket}`, { method: "PUT", body: JSON.stringify(records) });
  if (response.status !== 204) throw new Error("the DNS stand-in refused the records");
}

export interface DkimVerdict {
  result: string;
  selector: string;
  algorithm: string;
  domain: string;
  /** The header names the signature covers (h=). */
  signedHeaders: string[];
}

/** mailauth's verdict on each DKIM-Signature of a raw message; `txt` holds the key records it may resolve. */
export async function verifyDkim(raw: string, txt: Record<string, string>): Promise<DkimVerdict[]> {
  const response = await fetch(`${env.RECEIVER_URL}/__dkim/verify`, { method: "POST", body: JSON.stringify({ raw, txt }) });
  const results = (await response.json()) as Array<{ status: { result: string; header?: { s?: string; a?: string; d?: string } }; signingDomain?: string; selector?: string; algo?: string; signingHeaders?: { keys?: string } }>;
  return results.map((r) => ({
    result: r.status.result,
    selector: r.selector ?? "",
    algorithm: r.algo ?? "",
    domain: r.signingDomain ?? "",
    signedHeaders: (r.signingHeaders?.keys ?? "").split(":").map((h) => h.trim().toLowerCase()).filter(Boolean),
  }));
}

/** A domain of its own for each test. */
export function uniqueDomain(label = "shop"): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}.example.com`;
}

/**
 * A sender domain of the panel, verified without DNS (the DNS checks have tests of their own,
 * test/services/channels/email/sender-domains.test.ts): what real-email providers need to send
 * from the domain.
 */
export async function verifiedSenderDomain(panelId: string, domain = "example.com"): Promise<void> {
  await addSenderDomain(env, panelData, panelId, domain, Date.now());
  await panelData.prepare("UPDATE sender_domains SET state = 'verified' WHERE panel_id = ? AND domain = ?").bind(panelId, domain).run();
  forgetSenderSigning();
}
