import { z } from "../lib/z";

/**
 * A campaign's A/B test (issue 43, item 7): 2 to 4 variants of its subject and/or HTML body, a
 * test share of the audience that gets them (split evenly, each contact always the same variant
 * of a campaign), and after a waiting time the variant with the most unique opens or unique
 * clicks goes to the rest. A variant's missing subject or body is the campaign's own.
 */

export const AB_METRICS = ["unique_opens", "unique_clicks"] as const;
export type AbMetric = (typeof AB_METRICS)[number];

export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 4;
/** The longest wait before the winner is picked: a week. */
export const MAX_WAIT_MINUTES = 7 * 24 * 60;

const variantSchema = z
  .strictObject({
    subject: z.string().trim().min(1, { error: "must not be empty" }).max(998).optional().meta({ description: "This variant's subject; absent: the campaign's" }),
    html: z
      .string()
      .max(2 * 1024 * 1024, { error: "must be at most 2 MiB" })
      .refine((h) => h.trim() !== "", { error: "must not be empty" })
      .optional()
      .meta({ description: "This variant's HTML body; absent: the campaign's" }),
  })
  .refine((v) => v.subject !== undefined || v.html !== undefined, { error: "must give a subject, an html body or both", path: ["subject"] });

/** PUT /panels/{panel}/campaigns/{campaign}/ab-test. */
export const abTestBody = z.strictObject({
  variants: z
    .array(variantSchema)
    .min(MIN_VARIANTS, { error: `must have at least ${MIN_VARIANTS} variants` })
    .max(MAX_VARIANTS, { error: `must have at most ${MAX_VARIANTS} variants` }),
  test_share: z
    .number({ error: "must be a whole percentage from 1 to 50" })
    .int({ error: "must be a whole percentage from 1 to 50" })
    .min(1, { error: "must be a whole percentage from 1 to 50" })
    .max(50, { error: "must be a whole percentage from 1 to 50" })
    .meta({ description: "Percent of the audience that gets the variants, split evenly; the rest gets the winner" }),
  metric: z.enum(AB_METRICS, { error: `must be one of ${AB_METRICS.join(", ")}` }).meta({ description: "What picks the winner: unique opens or unique clicks of each variant's test recipients" }),
  wait_minutes: z
    .number({ error: `must be a whole number of minutes from 1 to ${MAX_WAIT_MINUTES}` })
    .int({ error: `must be a whole number of minutes from 1 to ${MAX_WAIT_MINUTES}` })
    .min(1, { error: `must be a whole number of minutes from 1 to ${MAX_WAIT_MINUTES}` })
    .max(MAX_WAIT_MINUTES, { error: `must be a whole number of minutes from 1 to ${MAX_WAIT_MINUTES}` })
    .meta({ description: "Minutes after the campaign starts sending before the winner is picked and sent to the rest" }),
});
export type AbTestInput = z.output<typeof abTestBody>;

/** What a campaign keeps of its test (campaigns.ab_test): a variant's body is an R2 key, null where it is the campaign's. */
export interface AbTest {
  variants: Array<{ subject: string | null; body_key: string | null }>;
  test_share: number;
  metric: AbMetric;
  wait_minutes: number;
}

/** The letter a variant is shown with: A, B, C, D. */
export function variantLabel(index: number): string {
  return String.fromCharCode(65 + index);
}

/** A variant named by its letter (preview and test send of one variant): A to D. */
export const variantParam = z
  .enum(["A", "B", "C", "D"], { error: "must be a variant's letter: A, B, C or D" })
  .meta({ description: "The A/B test variant (A–D) whose subject and body to use; without it, the campaign's own" });

/**
 * The index of the variant `label` names in the campaign's test; the reason as a string when the
 * campaign has no test or its test has fewer variants.
 */
export function variantIndex(test: Pick<AbTest, "variants"> | null, label: string): number | string {
  if (!test) return "the campaign has no A/B test";
  const index = label.charCodeAt(0) - 65;
  if (index < 0 || index >= test.variants.length) return `the A/B test has variants A to ${variantLabel(test.variants.length - 1)}, not ${label}`;
  return index;
}

/** How many of `recipients` get a variant: the share, rounded, but at least one per variant where there are that many. */
export function testRecipients(recipients: number, share: number, variants: number): number {
  return Math.min(recipients, Math.max(Math.round((recipients * share) / 100), variants));
}

// The test recipients' order is a hash of the campaign and the contact: a Lehmer step (the
// MINSTD generator) of the contact id offset by a seed of the campaign id, twice. It is written
// once here and once as SQL (abOrderSql), whose integers stay below 2^53 with these constants.
const MODULUS = 2147483647;
const MULTIPLIER = 48271;

/** The campaign's seed: FNV-1a of its id, below the modulus. */
export function abSeed(campaignId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < campaignId.length; i++) {
    hash ^= campaignId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % MODULUS;
}

/** A contact's place in the campaign's test order (lower first), as abOrderSql computes it. */
export function abOrderKey(seed: number, contactId: number): number {
  const first = (((contactId % MODULUS) + seed) % MODULUS) * MULTIPLIER % MODULUS;
  return ((first + 1) * MULTIPLIER) % MODULUS;
}

/** abOrderKey in SQL, of the column `contactColumn` with the seed bound as `seedParam`. */
export function abOrderSql(contactColumn: string, seedParam: string): string {
  return `((((((${contactColumn} % ${MODULUS}) + ${seedParam}) % ${MODULUS}) * ${MULTIPLIER} % ${MODULUS}) + 1) * ${MULTIPLIER} % ${MODULUS})`;
}

/** One variant's test results. */
export interface VariantTally {
  variant: number;
  sent: number;
  unique_opens: number;
  unique_clicks: number;
}

/** The winner: the most unique opens or clicks; a tie goes to the first variant. */
export function pickWinner(tallies: readonly VariantTally[], metric: AbMetric, variants: number): number {
  let best = 0;
  let bestScore = -1;
  for (let variant = 0; variant < variants; variant++) {
    const score = tallies.find((t) => t.variant === variant)?.[metric] ?? 0;
    if (score > bestScore) {
      best = variant;
      bestScore = score;
    }
  }
  return best;
}

/** The instant the winner is due: the wait after the campaign's publication ended (its last publish step). */
export function decisionAt(publishedEndAt: number, test: Pick<AbTest, "wait_minutes">): number {
  return publishedEndAt + test.wait_minutes * 60_000;
}

/** One variant of a test as GET …/ab-test answers it: what it changes, as written. */
export interface AbVariantView {
  label: string;
  /** Null: the campaign's subject. */
  subject: string | null;
  /** Null: the campaign's body. */
  html: string | null;
}

/** GET /panels/{panel}/campaigns/{campaign}/ab-test: the test as set, with its results so far. */
export interface AbTestView {
  variants: AbVariantView[];
  test_share: number;
  metric: AbMetric;
  wait_minutes: number;
  results: AbTestResults;
}

/** One group's figures: rates are shares of sent, 0 to 1. */
export interface AbGroupFigures {
  recipients: number;
  sent: number;
  opens: number;
  unique_opens: number;
  clicks: number;
  unique_clicks: number;
  open_rate: number;
  click_rate: number;
}

/** The report's side-by-side view of a test: each variant's test recipients, the rest, and the winner. */
export interface AbTestResults {
  metric: AbMetric;
  test_share: number;
  wait_minutes: number;
  /** When the winner is (or was) due: the wait after publication; null before the campaign sends. */
  decide_at: string | null;
  /** The winner's label once picked. */
  winner: string | null;
  variants: Array<AbGroupFigures & { label: string; subject: string; own_html: boolean; winner: boolean }>;
  /** Those who get the winner: held until it is picked. */
  rest: AbGroupFigures & { variant: string | null };
}
