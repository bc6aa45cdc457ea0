import type { OperatorRole } from "./operators";

/**
 * The least role each kind of panel work needs. The admin routes declare their role from this
 * table and the panel shows, disables or refuses the same work by it, so the two cannot
 * disagree on what a role may do.
 */
export const NEEDS = {
  /** Reading any screen's data. */
  read: "viewer",
  /** Contacts' attributes and preferences, lists and imports, segments, attributes, activities. */
  audience: "marketer",
  campaigns: "marketer",
  journeys: "marketer",
  webhooks: "marketer",
  /** Re-sending a webhook's past events (replays): a second delivery of data to an outside system. */
  webhookReplays: "owner",
  /** Signup forms (their Turnstile secret is channelSettings'). */
  forms: "marketer",
  /** Topics: the subscription groups of the preference page that campaigns and journey steps name. */
  topics: "marketer",
  /** The panel's consent records (with visitors' IP addresses), for audits. */
  consent: "owner",
  /**
   * An outbox copy as sent (its .eml): its unsubscribe and preference links are live, so reading
   * one is as much as changing the contact's subscriptions. A viewer reads copies with those
   * links inert (the contact page's message copies).
   */
  outboxCopies: "marketer",
  /** SMS templates and suppressions, and reading a channel's provider settings. */
  channels: "marketer",
  /** A channel's provider credentials (SMS provider, push service account). */
  channelSettings: "owner",
  /** The panel's own settings (name, time zone, API mode). */
  settings: "owner",
  /** API users, their keys and rotation. */
  apiKeys: "owner",
  /** Operators and their roles. */
  team: "owner",
  audit: "owner",
  /** Erasing a contact and exporting everything held on one. */
  erasure: "owner",
  /** Sender and tracking domains. */
  domains: "owner",
  /** Retrying failed event deliveries. */
  retryEvents: "owner",
  /** Who hears of the panel's operations alerts (its webhooks disabled, sender domains failing, dead letters, full shard, a late cron). */
  alerts: "owner",
} as const satisfies Record<string, OperatorRole>;

export type Work = keyof typeof NEEDS;

const ROLE_RANK: Record<OperatorRole, number> = { viewer: 1, marketer: 2, owner: 3 };

/** Whether `held` allows what `needed` allows. */
export function roleAllows(held: OperatorRole, needed: OperatorRole): boolean {
  return ROLE_RANK[held] >= ROLE_RANK[needed];
}

/** Whether a role may do a kind of work. */
export function mayDo(held: OperatorRole, work: Work): boolean {
  return roleAllows(held, NEEDS[work]);
}
