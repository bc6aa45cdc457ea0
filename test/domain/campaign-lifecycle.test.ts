import { describe, expect, it } from "vitest";
import {
  allowedActions,
  CAMPAIGN_ACTIONS,
  CAMPAIGN_STATUSES,
  campaignTransition,
  deleteTarget,
  refusedTransition,
  type CampaignAction,
  type CampaignStatus,
  type CampaignTarget,
} from "../../src/domain/campaign-lifecycle";
import { problemError } from "../../src/lib/http/errors";

// The whole table, written out once more by hand: a change to the lifecycle must change both.
const EXPECTED: Record<CampaignAction, Partial<Record<CampaignStatus, CampaignTarget>>> = {
  edit: { draft: "draft", scheduled: "scheduled" },
  schedule: { draft: "scheduled" },
  reschedule: { scheduled: "scheduled" },
  unschedule: { scheduled: "draft" },
  send_now: { draft: "scheduled", scheduled: "scheduled" },
  pause: { sending: "paused" },
  resume: { paused: "sending" },
  cancel: { scheduled: "cancelled", sending: "cancelled", paused: "cancelled" },
  clone: Object.fromEntries(CAMPAIGN_STATUSES.map((s) => [s, s])),
  delete: { draft: "deleted", cancelled: "deleted", failed: "deleted", sent: "archived" },
};

describe("the campaign lifecycle", () => {
  const pairs = CAMPAIGN_STATUSES.flatMap((status) => CAMPAIGN_ACTIONS.map((action) => [status, action] as const));
  const allowed = pairs.filter(([status, action]) => EXPECTED[action][status] !== undefined);
  const refusedPairs = pairs.filter(([status, action]) => EXPECTED[action][status] === undefined);

  it.each(allowed)("%s allows %s", (status, action) => {
    expect(campaignTransition(status, action)).toEqual({ ok: true, to: EXPECTED[action][status] });
    expect(allowedActions(status)).toContain(action);
  });

  it("refuses every other pair with a 409 conflict that names the current state", () => {
    expect(refusedPairs.length).toBe(pairs.length - allowed.length);
    expect(refusedPairs.length).toBeGreaterThan(50);
    for (const [status, action] of refusedPairs) {
      const outcome = campaignTransition(status, action);
      expect(outcome.ok, `${status} ${action}`).toBe(false);
      expect(allowedActions(status)).not.toContain(action);
      const refusal = refusedTransition(status, action);
      expect(refusal.ok).toBe(false);
      if (refusal.ok) continue;
      expect(refusal.problem.kind).toBe("conflict");
      const error = problemError(refusal.problem);
      expect(error.status, `${status} ${action}`).toBe(409);
      expect(error.message).toContain(`the campaign is ${status}`);
      expect(refusal.problem.fields).toEqual([{ field: "status", message: error.message }]);
    }
  });

  it("names what a state allows in its refusal", () => {
    const outcome = campaignTransition("sent", "pause");
    expect(outcome).toEqual({ ok: false, message: "the campaign is sent, so it cannot be paused; a sent campaign allows clone, delete" });
    expect(campaignTransition("sending", "edit")).toMatchObject({ message: "the campaign is sending, so it cannot be edited; a sending campaign allows pause, cancel, clone" });
  });

  it("a delete archives what reached anyone, and deletes the rest", () => {
    expect(deleteTarget("draft", false)).toBe("deleted");
    expect(deleteTarget("cancelled", false)).toBe("deleted");
    expect(deleteTarget("cancelled", true)).toBe("archived");
    expect(deleteTarget("failed", true)).toBe("archived");
    expect(deleteTarget("sent", true)).toBe("archived");
    expect(deleteTarget("sending", true)).toBeNull();
    expect(deleteTarget("archived", true)).toBeNull();
  });
});
