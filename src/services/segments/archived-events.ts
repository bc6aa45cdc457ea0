import { archiveTask, type AfterArchived } from "../retention/archive";
import { refreshForEvents } from "./membership";

/**
 * Behaviour conditions count the events the shard keeps (docs/api/segments.md), so when the
 * retention sweep moves a part's events to R2 their contacts are re-checked as when events
 * arrive: stored members stay equal to the count.
 */
export const recheckArchived: AfterArchived = async (db, panelId, rows, now) => {
  await refreshForEvents(db, panelId, rows.map((r) => ({ contactId: r.contact_id, channel: r.channel, name: r.name })), now);
};

/** The event retention sweep (services/retention/archive.ts) with its segment re-check. */
export const archiveOldEvents = archiveTask(recheckArchived);
