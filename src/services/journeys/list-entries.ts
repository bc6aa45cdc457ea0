import { panelHome, shardTask } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import { sendAll } from "../../lib/tasks";
import { contactsByIds } from "../../store/contacts";
import { getJourneysByIds } from "../../store/journeys/definitions";
import { countFreeListEntries, deleteListEntries, leaseListEntries, panelsWithFreeListEntries } from "../../store/list-entries";
import { enterJourneys, entriesFor, type EngineEnv } from "./engine";

/**
 * List triggers (CONTRACT 5) for every way a contact joins a list. The membership's trigger
 * (migration 0011) leaves an entry per running journey of the list; this module enters them:
 * right away for a contact written through the API, through the JOURNEYS queue for a bulk
 * upload, and through the cron for entries whose nudge was lost.
 */

/**
 * Entries entered per queue message. Entering runs the journey's first steps, about 5 to 20
 * D1 statements per contact, so a page stays well inside D1's 1,000 queries per invocation
 * (the JOURNEYS consumer takes one message per invocation).
 */
export const ENTRIES_PER_MESSAGE = 50;
/** How long a consumer holds the entries it leased; a crashed consumer's entries come back after it. */
export const ENTRY_LEASE_MS = 2 * 60_000;
/** Messages a panel's backlog gets from one re-drive; each passes the work on while its pages come back full. */
export const ENTRY_CHAINS_PER_PANEL = 5;
const PANELS_PER_SWEEP = 100;

export interface ListEntriesNudge {
  type: "list-entries";
  panel: string;
  /** The shard holding the entries (a partition's: its members' trigger left them there); absent: the home. */
  shard?: number;
}

export function listEntriesNudge(panelId: string, shard?: number): ListEntriesNudge {
  return { type: "list-entries", panel: panelId, ...(shard === undefined ? {} : { shard }) };
}

export async function nudgeListEntries(env: Pick<Env, "JOURNEYS">, panelId: string, shard?: number): Promise<void> {
  await env.JOURNEYS.send(listEntriesNudge(panelId, shard));
}

/**
 * Enters one leased page of the panel's entries (or of one contact's) on `shard` (absent: the
 * home; a partition's shard holds its members' entries, with the journeys' copies, decision
 * 0038), then deletes them.
 * Returns how many entries the page held. An entry of a journey no longer running or paused,
 * or whose trigger is no longer that list or segment, or of a contact since deleted, is dropped; the journey's filter applies as at any entry.
 */
export async function enterListEntries(env: EngineEnv, panelId: string, now: number, options: { contactId?: number; limit?: number; shard?: number } = {}): Promise<number> {
  const { panel } = await panelHome(env, panelId);
  const { db } = namedPanelShard(env, panel, options.shard);
  const entries = await leaseListEntries(db, panelId, { contactId: options.contactId, limit: options.limit ?? ENTRIES_PER_MESSAGE, now, leaseMs: ENTRY_LEASE_MS });
  if (entries.length === 0) return 0;
  const [journeys, contacts] = await Promise.all([
    getJourneysByIds(db, entries.map((e) => ({ panelId, journeyId: e.journeyId }))),
    contactsByIds(
      db,
      panelId,
      entries.map((e) => e.contactId),
    ),
  ]);
  const toEnter = entries.flatMap((entry) => {
    const journey = journeys.get(entry.journeyId);
    const contact = contacts.get(entry.contactId);
    if (!journey || !contact || (journey.status !== "running" && journey.status !== "paused")) return [];
    // Left under an earlier version's trigger (the journey's list or segment changed since): not a trigger now.
    const { trigger } = journey.definition;
    if (entry.segmentId === null ? trigger.type !== "list" || trigger.listid !== entry.listId : trigger.type !== "segment" || trigger.segment !== entry.segmentId) return [];
    // The entry's id in the key: the same entry taken twice (an expired lease) enters once. A
    // saved segment's journey enters a contact once, as a segment journey of its own does.
    const key = entry.segmentId === null ? `list:${entry.listId}:${entry.contactId}:${entry.id}` : `segment:${entry.contactId}`;
    return entriesFor([journey], contact, key, null);
  });
  // A failure leaves the page leased; it comes back after the lease and enters once (the key).
  // Instances entered but not continued are continued by the cron (timers.ts).
  await enterJourneys(env, db, toEnter, now);
  await deleteListEntries(
    db,
    panelId,
    entries.map((e) => e.id),
  );
  return entries.length;
}

/**
 * Cron: nudges every panel with entries no consumer holds on the shard swept (a lost nudge, a crashed consumer),
 * one message per page of its backlog up to ENTRY_CHAINS_PER_PANEL, so the backlog drains
 * through several consumers at once.
 */
export const redriveListEntries = shardTask("journeys.list-entries", async (env, db, index, now) => {
  const nudges = [];
  for (const panelId of await panelsWithFreeListEntries(db, now, PANELS_PER_SWEEP)) {
    const free = await countFreeListEntries(db, panelId, now, ENTRIES_PER_MESSAGE * ENTRY_CHAINS_PER_PANEL);
    // Naming the shard swept: a partition's entries are there (the home's nudge reads the same).
    for (let i = 0; i < Math.max(1, Math.ceil(free / ENTRIES_PER_MESSAGE)); i++) nudges.push(listEntriesNudge(panelId, index));
  }
  if (nudges.length) await sendAll(env.JOURNEYS, nudges);
});
