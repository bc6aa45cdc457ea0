/**
 * How sure a split's result is (issue 46, decision 0042): each branch's conversion rate is
 * compared with branch A's (the first, taken as the control) by a two-sided two-proportion
 * z-test with a pooled rate; the confidence is 1 − p. Pure, no I/O.
 */

export interface BranchTally {
  /** Instances that went down the branch. */
  entered: number;
  /** Of them, those that reached the goal within its window. */
  converted: number;
}

export interface BranchFigures extends BranchTally {
  /** converted / entered, 0 when none entered. */
  rate: number;
  /** Versus branch A: 0 to 1 (e.g. 0.95: the difference is significant at 5 %); null for A itself and when either side has no instances. */
  confidence: number | null;
}

/** Standard normal cumulative distribution, by the erf approximation of Abramowitz and Stegun 7.1.26 (error below 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/**
 * Confidence that two conversion rates differ: 1 − the two-sided p-value of the pooled
 * two-proportion z-test; null when a side is empty. Identical rates (or a pooled rate of 0 or
 * 1, where the test has no variance) give 0.
 */
export function twoProportionConfidence(a: BranchTally, b: BranchTally): number | null {
  if (a.entered === 0 || b.entered === 0) return null;
  const pooled = (a.converted + b.converted) / (a.entered + b.entered);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / a.entered + 1 / b.entered));
  if (se === 0) return 0;
  const z = (b.converted / b.entered - a.converted / a.entered) / se;
  return Math.max(0, Math.min(1, 1 - 2 * (1 - normalCdf(Math.abs(z)))));
}

/** Each branch's rate and its confidence against the first branch. */
export function branchFigures(tallies: readonly BranchTally[]): BranchFigures[] {
  const control = tallies[0];
  return tallies.map((t, i) => ({
    entered: t.entered,
    converted: t.converted,
    rate: t.entered === 0 ? 0 : t.converted / t.entered,
    confidence: i === 0 || !control ? null : twoProportionConfidence(control, t),
  }));
}
