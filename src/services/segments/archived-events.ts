import { archiveTask, type AfterArchived } from "../retention/archive";
import { panelDb } from "../access/shards";
import { refreshForEvents } from "./membership";

/**
 * Behaviour conditions count the events the shard keeps (docs/api/segments.md), so when the
 * retention sweep moves a part's events to R2 their contacts are re-checked as when events
 * arrive: stored members stay equal to the count. On the shard swept (a partition's holds its
 * own contacts' events and memberships, decision 0038), with the home's definitions.
 */
export const recheckArchived: AfterArchived = async (env, db, panelId, rows, now) => {
  await refreshForEvents(await panelDb(env, panelId), db, panelId, rows.map((r) => ({ contactId: r.contact_id, channel: r.channel, name: r.name })), now);
};

/** The event retention sweep (services/retention/archive.ts) with its segment re-check. */
export const archiveOldEvents = archiveTask(recheckArchived);
