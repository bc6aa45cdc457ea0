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
