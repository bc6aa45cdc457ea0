import { refused, type Result } from "../lib/problems";

// A campaign's life as one table (issue 43): which action each state allows and where it leads.
// Services consult it before they write (and their writes repeat the guard in SQL, since two
// callers may race); the panel shows a button for each action the campaign's state allows.

/** Every state a campaign can be in. `failed`: the cron could not publish it (import failed, sender refused). */
export const CAMPAIGN_STATUSES = ["draft", "scheduled", "sending", "paused", "sent", "cancelled", "failed", "archived"] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/**
 * States in which a campaign still needs the lists and segments it names (a draft, to be
 * scheduled; a paused one, to resume): while one does, they are not deleted from the panel.
 */
export const NEEDS_ITS_AUDIENCE = ["draft", "scheduled", "sending", "paused"] as const satisfies readonly CampaignStatus[];

/** What an operator can do to a campaign. */
export const CAMPAIGN_ACTIONS = ["edit", "schedule", "reschedule", "unschedule", "send_now", "pause", "resume", "cancel", "clone", "delete"] as const;
export type CampaignAction = (typeof CAMPAIGN_ACTIONS)[number];

/** Where an action leaves the campaign: a state, `deleted` (the row is gone), or unchanged for a clone (a new draft is made). */
export type CampaignTarget = CampaignStatus | "deleted";

/**
 * The allowed transitions: action -> from-state -> to-state; a pair not listed is refused.
 * The system's own moves (publish scheduled -> sending, complete sending -> sent, fail) are in
 * store/campaigns/; they never leave a state the table does not know.
 */
export const CAMPAIGN_TRANSITIONS: Readonly<Record<CampaignAction, Readonly<Partial<Record<CampaignStatus, CampaignTarget>>>>> = {
  // Edited freely until it sends.
  edit: { draft: "draft", scheduled: "scheduled" },
  schedule: { draft: "scheduled" },
  reschedule: { scheduled: "scheduled" },
  unschedule: { scheduled: "draft" },
  // Published at the next cron minute; only where the panel's lead time is 0 (checked by the service).
  send_now: { draft: "scheduled", scheduled: "scheduled" },
  pause: { sending: "paused" },
  resume: { paused: "sending" },
  cancel: { scheduled: "cancelled", sending: "cancelled", paused: "cancelled" },
  // A clone is a new draft; the original stays as it is, whatever its state.
  clone: { draft: "draft", scheduled: "scheduled", sending: "sending", paused: "paused", sent: "sent", cancelled: "cancelled", failed: "failed", archived: "archived" },
  // Drafts and cancelled (or failed) campaigns go; a sent one is archived, its report kept.
  delete: { draft: "deleted", cancelled: "deleted", failed: "deleted", sent: "archived" },
};

/** The actions a campaign in `status` allows, in the table's order: the panel's buttons. */
export function allowedActions(status: CampaignStatus): CampaignAction[] {
  return CAMPAIGN_ACTIONS.filter((action) => CAMPAIGN_TRANSITIONS[action][status] !== undefined);
}

const VERBS: Record<CampaignAction, string> = {
  edit: "edited",
  schedule: "scheduled",
  reschedule: "rescheduled",
  unschedule: "moved back to draft",
  send_now: "sent now",
  pause: "paused",
  resume: "resumed",
  cancel: "cancelled",
  clone: "cloned",
  delete: "deleted",
};

export type TransitionOutcome = { ok: true; to: CampaignTarget } | { ok: false; message: string };

/** Whether `action` is allowed from `status`, and where it leads; a refusal names the current state and what it allows. */
export function campaignTransition(status: CampaignStatus, action: CampaignAction): TransitionOutcome {
  const to = CAMPAIGN_TRANSITIONS[action][status];
  if (to !== undefined) return { ok: true, to };
  const allowed = allowedActions(status);
  return {
    ok: false,
    message: `the campaign is ${status}, so it cannot be ${VERBS[action]}; a ${status} campaign allows ${allowed.length ? allowed.join(", ") : "nothing"}`,
  };
}

/**
 * Where a delete leads for a campaign that already sent messages: a cancelled or failed
 * campaign that reached anyone is archived like a sent one, so what went out stays reported.
 */
export function deleteTarget(status: CampaignStatus, anySent: boolean): CampaignTarget | null {
  const to = CAMPAIGN_TRANSITIONS.delete[status];
  if (to === undefined) return null;
  return to === "deleted" && anySent ? "archived" : to;
}

/** The refusal of an action the campaign's state does not allow: a conflict (409) naming that state, about `status`. */
export function refusedTransition(status: CampaignStatus, action: CampaignAction): Result<never> {
  const outcome = campaignTransition(status, action);
  const message = outcome.ok ? `the campaign is ${status} and changed while it was being ${VERBS[action]}; read it again` : outcome.message;
  return refused("conflict", [{ field: "status", message }], message);
}
