import type { SegmentAttributeOp } from "../../../src/domain/answers";

// The attribute tests (segment conditions, journey filters and conditions) in words; keyed by the
// Worker's own type, so a new operator fails to type-check here until it is named.
export const OPERATOR_WORDS: Record<SegmentAttributeOp, string> = {
  eq: "is",
  ne: "is not",
  gt: "is more than",
  gte: "is at least",
  lt: "is less than",
  lte: "is at most",
  contains: "contains",
  starts_with: "starts with",
  in: "is one of",
  exists: "is set",
  not_exists: "is not set",
  is_empty: "is empty",
  is_not_empty: "is not empty",
  within_last_days: "is within the last … days",
  before_days_ago: "is more than … days ago",
};
