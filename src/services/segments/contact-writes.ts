import { panelHome } from "../access/shards";
import { contactDb, panelShardPlaces, type PanelShard } from "../access/partitions";
import type { ContactReaction } from "../contacts/reactions";
import { nudgeListEntries } from "../journeys/list-entries";
import { rebuildSegments } from "../../store/segments";
import { refreshContacts, type SegmentChange } from "./membership";
import { knownPanelSegments } from "./panel-segments";

/**
 * After a contact's attributes or lists were written through the API (run after the answer,
 * in waitUntil): its memberships that the write can change are brought up to date, on the
 * shard of its key's partition (decision 0038). Returns
 * whether it entered a segment, so the caller takes the segment journeys' entries at once.
 * Never throws: the write stands, a failure is logged (the next change or build of the
 * segment sees the contact again).
 */
async function segmentsAfterContactWrite(env: Env, panelId: string, contact: { id: number; key: string }, changes: readonly SegmentChange[], now: number): Promise<boolean> {
  try {
    const { panel, db: home } = await panelHome(env, panelId);
    return (await refreshContacts(env, panelId, [contact.id], changes, now, contactDb(env, panel, home, contact.key))) > 0;
  } catch (error) {
    console.error(`segments: refreshing contact ${contact.id} of panel ${panelId} after a write failed`, error);
    return false;
  }
}

/**
 * After a campaign batch sent its messages: the recipients' memberships of segments that read
 * sends (engagement `received`) are brought up to date, and entries of segment journeys are
 * taken up. `on`: the shard the batch was sent from, which holds its recipients (decision 0038
 * step 4); without it the recipients, named by id only, are checked on each shard of the panel
 * (one read each, the home alone for a panel without a map). Never throws: the sends stand, a
 * failure is logged (a rebuild or a sliding check sees the contacts again).
 */
export async function segmentsAfterSends(env: Env, panelId: string, contactIds: readonly number[], now: number, on?: PanelShard): Promise<void> {
  try {
    if ((await refreshContacts(env, panelId, contactIds, ["sends"], now, on?.db)) > 0) await nudgeListEntries(env, panelId, on && !on.home ? on.shard : undefined);
  } catch (error) {
    console.error(`segments: refreshing ${contactIds.length} recipient(s) of panel ${panelId} after a send failed`, error);
  }
}

/**
 * The segments' reaction to contact writes (services/contacts/reactions.ts): one contact's
 * memberships are refreshed at once, and whether it entered a segment is handed on to the
 * journeys; after an import's rows, saved segments that read attributes or lists are built
 * again on every shard of the panel (the cron does it in pages; an import writes each row on its
 * partition); the contacts a pipeline pass created are refreshed together, in one re-check on the
 * shard that created them (`at`; the home when absent).
 */
export const segmentsContactReaction: ContactReaction = {
  name: "segments",
  async afterContact(env, { panelId, contact, changes, now }) {
    return { joinedSegment: await segmentsAfterContactWrite(env, panelId, contact, changes, now) };
  },
  // refreshContacts re-checks only the segments that read one of the changes.
  idleAfter(panelId, changes) {
    const segments = knownPanelSegments(panelId);
    return segments !== undefined && !segments.some((segment) => changes.some((change) => segment.dependencies[change]));
  },
  async afterContacts(env, { panelId, contacts, rewritten, now, at }) {
    if (rewritten) for (const place of panelShardPlaces(env, (await panelHome(env, panelId)).panel)) await rebuildSegments(place.db, panelId, now);
    else if (contacts?.length) return { joinedSegment: (await refreshContacts(env, panelId, contacts.map((c) => c.id), ["attributes", "lists"], now, at?.db ?? (await panelHome(env, panelId)).db)) > 0 };
  },
};
