import { nudgeListEntries } from "../journeys/list-entries";
import { refreshContacts, type SegmentChange } from "./membership";

/**
 * After a contact's attributes or lists were written through the API (run after the answer,
 * in waitUntil): its memberships that the write can change are brought up to date. Returns
 * whether it entered a segment, so the caller takes the segment journeys' entries at once.
 * Never throws: the write stands, a failure is logged (the next change or build of the
 * segment sees the contact again).
 */
export async function segmentsAfterContactWrite(env: Env, panelId: string, contactId: number, changes: readonly SegmentChange[], now: number): Promise<boolean> {
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
