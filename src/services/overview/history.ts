import { panelTask } from "../access/shards";
import type { PanelHistory } from "../../domain/overview";
import { DAY_MS, utcDayOf } from "../../domain/time";
import { panelDays, panelsCountedOn, recordContactCounts } from "../../store/panel-days";
import type { ShardDb } from "../../store/shards";

/** Series a chart of events shows: the most frequent names over the period. */
const EVENT_SERIES = 8;

/**
 * The panel's history over the last `days` UTC days, today included, from the aggregates
 * (migration 0051): a row per day and series, never a scan of contacts, events or messages.
 * `contactsNow`, the latest stored count, is today's point. Each shard holding a partition
 * (`shards`, panelShards; decision 0038) keeps the days of what it holds: one read each, summed.
 */
export async function panelHistory(shards: readonly ShardDb[], panelId: string, days: number, now: number, contactsNow: number): Promise<PanelHistory> {
  const today = utcDayOf(now);
  const dayList = Array.from({ length: days }, (_, i) => today - (days - 1 - i) * DAY_MS);
  const index = new Map(dayList.map((day, i) => [day, i]));
  const rows = (await Promise.all(shards.map((db) => panelDays(db, panelId, dayList[0]!)))).flat();
  const contacts: Array<number | null> = dayList.map(() => null);
  const series = (kind: "events" | "sends") => {
    const byName = new Map<string, number[]>();
    for (const row of rows) {
      if (row.kind !== kind || !index.has(row.day)) continue;
      const counts = byName.get(row.name) ?? dayList.map(() => 0);
      counts[index.get(row.day)!]! += row.n;
      byName.set(row.name, counts);
    }
    const total = (counts: number[]) => counts.reduce((sum, n) => sum + n, 0);
    return [...byName].sort((a, b) => total(b[1]) - total(a[1]) || a[0].localeCompare(b[0]));
  };
  for (const row of rows) if (row.kind === "contacts" && index.has(row.day)) contacts[index.get(row.day)!] = (contacts[index.get(row.day)!] ?? 0) + row.n;
  contacts[contacts.length - 1] = contactsNow;
  return {
    days: dayList,
    contacts,
    events: series("events").slice(0, EVENT_SERIES).map(([name, counts]) => ({ name, counts })),
    sends: series("sends").map(([channel, counts]) => ({ channel, counts })),
  };
}

/**
 * Cron: once per UTC day, each panel's number of contacts as its count at the day's start (the
 * first run of the day counts; later runs find the day counted in one read per 1,000 panels and
 * hand nothing out). A shard holding a panel's partition counts its part (panelsOnShard).
 */
export const contactCountsCron = panelTask("overview.contact-counts", {
  // Only the day's first tick hands panels out: later ones find every panel counted.
  async due(_env, db, _index, panels, now) {
    const counted = await panelsCountedOn(db, panels.map((p) => p.id), utcDayOf(now));
    return new Set(panels.filter((p) => !counted.has(p.id)).map((p) => p.id));
  },
  async panels(_env, db, _index, batch, now) {
    const day = utcDayOf(now);
    const panels = batch.map((p) => p.id);
    const counted = await panelsCountedOn(db, panels, day);
    await recordContactCounts(db, panels.filter((id) => !counted.has(id)), day);
  },
});
