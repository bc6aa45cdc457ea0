import { z } from "../lib/z";

/**
 * A request counts a panel's contacts or a segment's members up to this (a few milliseconds of
 * index): below it the answer is exact and current, past it the background count is read.
 */
export const COUNT_REQUEST_CAP = 10_000;

/** GET /panels/{panel}/overview/history */
export const historyQuery = z.object({
  days: z.coerce.number().int().min(1).max(366).default(30).meta({ description: "How many days back, today included (UTC days)" }),
});

export interface DayCount {
  /** The UTC day's start, epoch ms. */
  day: number;
  n: number;
}

/** The Home screen's history: one series per name, each a value per day of `days` (0 where nothing was counted). */
export interface PanelHistory {
  /** The days of the series, oldest first (UTC day starts, epoch ms); today last. */
  days: number[];
  /** Contacts at the start of each day; today's is the latest stored count (the overview's). Null before counting began. */
  contacts: Array<number | null>;
  /** Events per day by activity: `channel:name` (custom activities: `custom_activity:<name>`). */
  events: Array<{ name: string; counts: number[] }>;
  /** Messages sent (or kept by the outbox) per day, by channel. */
  sends: Array<{ channel: string; counts: number[] }>;
}
