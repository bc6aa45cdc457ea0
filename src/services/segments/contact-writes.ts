import { panelDb } from "../access/shards";
import type { ContactReaction } from "../contacts/reactions";
import { nudgeListEntries } from "../journeys/list-entries";
import { rebuildSegments } from "../../store/segments";
import { refreshContacts, type SegmentChange } from "./membership";

/**
 * After a contact's attributes or lists were written through the API (run after the answer,
 * in waitUntil): its memberships that the write can change are brought up to date. Returns
 * whether it entered a segment, so the caller takes the segment journeys' entries at once.
 * Never throws: the write stands, a failure is logged (the next change or build of the
 * segment sees the contact again).
 */
async function segmentsAfterContactWrite(env: Env, panelId: string, contactId: number, changes: readonly SegmentChange[], now: number): Promise<boolean> {
  try {
    return (await refreshContacts(env, panelId, [contactId], changes, now)) > 0;
  } catch (error) {
    console.error(`segments: refreshing contact ${contactId} of panel ${panelId} after a write failed`, error);
    return false;
  }
}

/**
 * After a campaign batch sent its messages: the recipients' memberships of segments that read
 * sends (engagement `received`) are brought up to date, and entries of segment journeys are
 * taken up. Never throws: the sends stand, a failure is logged (a rebuild or a sliding check
 * sees the contacts again).
 */
export async function segmentsAfterSends(env: Env, panelId: string, contactIds: readonly number[], now: number): Promise<void> {
  try {
    if ((await refreshContacts(env, panelId, contactIds, ["sends"], now)) > 0) await nudgeListEntries(env, panelId);
  } catch (error) {
    console.error(`segments: refreshing ${contactIds.length} recipient(s) of panel ${panelId} after a send failed`, error);
  }
}

/**
 * The segments' reaction to contact writes (services/contacts/reactions.ts): one contact's
 * memberships are refreshed at once, and whether it entered a segment is handed on to the
 * journeys; after an import's rows, saved segments that read attributes or lists are built
 * again (the cron does it in pages); the contacts a pipeline pass created are refreshed
 * together, in one re-check.
 */
export const segmentsContactReaction: ContactReaction = {
  name: "segments",
  async afterContact(env, { panelId, contact, changes, now }) {
    return { joinedSegment: await segmentsAfterContactWrite(env, panelId, contact.id, changes, now) };
  },
  async afterContacts(env, { panelId, contacts, rewritten, now }) {
    if (rewritten) await rebuildSegments(await panelDb(env, panelId), panelId, now);
    else if (contacts?.length) return { joinedSegment: (await refreshContacts(env, panelId, contacts.map((c) => c.id), ["attributes", "lists"], now)) > 0 };
  },
};
