// The admin API's answers about segments and the panel's sending domains.
import { z } from "../../lib/z";
import { COUNT_REQUEST_CAP } from "../overview";
import type { DomainChecks } from "../sender-domains";
import type { SegmentNode } from "../segments";
import { isoInstant } from "./panels";

export const segmentAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  match: z.custom<SegmentNode>((value) => typeof value === "object" && value !== null).meta({ description: "The segment's definition, as POST /segments takes it" }),
  /** Membership is being built (after a create, an edit or a bulk upload): contacts and journeys lag the count. */
  building: z.boolean(),
  created_at: isoInstant,
  updated_at: isoInstant,
});
const countEstimated = z.boolean().meta({ description: `True when \`count\` is an estimate: the panel has more than ${COUNT_REQUEST_CAP} contacts, more than a request reads (the members as last counted, or the share matching in a sample of ${COUNT_REQUEST_CAP} spread over the panel)` });
/** A segment saved or read: `count` is who matches now, an estimate past what a request reads. */
export const countedSegmentAnswer = segmentAnswer.extend({ count: z.number(), count_estimated: countEstimated });
/**
 * A segment's members (issue 42): counted by the request up to COUNT_REQUEST_CAP, past that as
 * last counted in the background; when, and whether the figure is a floor.
 */
export const memberFigure = {
  members: z.number(),
  members_counted_at: isoInstant.meta({ description: `When \`members\` was counted (now, below ${COUNT_REQUEST_CAP})` }),
  members_at_least: z.boolean().meta({ description: `True when \`members\` is a floor: past ${COUNT_REQUEST_CAP} and no background count of at least that yet` }),
};
export const segmentPageAnswer = countedSegmentAnswer.extend(memberFigure);
/** `members` is the count of its stored members (absent only if the count went missing). */
export const segmentListAnswer = z.strictObject({ segments: z.array(segmentAnswer.extend({ ...memberFigure, members: z.number().optional() })) });
export const segmentCountAnswer = z.strictObject({ count: z.number(), count_estimated: countEstimated });
export const segmentContactsAnswer = z.strictObject({ contacts: z.array(z.record(z.string(), z.unknown())), next_cursor: z.string().nullable() });
export const segmentHistoryAnswer = z.strictObject({
  ...memberFigure,
  days: z.array(z.strictObject({ day: z.string(), entered: z.number(), exited: z.number() })),
});

const recordCheck = z.strictObject({
  status: z.enum(["pass", "fail"]),
  name: z.string(),
  expected: z.string().nullable(),
  found: z.array(z.string()),
  reason: z.string().nullable(),
});
const domainChecks = z.strictObject({ spf: recordCheck, dkim: recordCheck, dkim_ed25519: recordCheck, dmarc: recordCheck }) satisfies z.ZodType<DomainChecks>;

/** A sender domain: the records to publish and the last check (never a key). */
export const senderDomainAnswer = z.strictObject({
  domain: z.string(),
  state: z.enum(["pending", "verified", "failed"]),
  /** `value` null: any SPF record that allows the servers you send through. */
  records: z.array(z.strictObject({ purpose: z.enum(["spf", "dkim", "dkim_ed25519", "dmarc"]), type: z.literal("TXT"), name: z.string(), value: z.string().nullable() })),
  checks: domainChecks.nullable(),
  checked_at: isoInstant.nullable(),
  created_at: isoInstant,
});
export const senderDomainListAnswer = z.strictObject({ sender_domains: z.array(senderDomainAnswer) });

export const trackingDomainAnswer = z.strictObject({
  domain: z.string(),
  verified: z.boolean(),
  record: z.strictObject({ type: z.string().meta({ description: "CNAME" }), name: z.string(), value: z.string() }),
  /** Only in the answer of a verify: the CNAME targets found and why it failed. */
  found: z.array(z.string()).optional(),
  reason: z.string().nullable().optional(),
  checked_at: isoInstant.nullable(),
  created_at: isoInstant,
});
