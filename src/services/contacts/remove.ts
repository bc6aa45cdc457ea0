import { getContactByKey, removeFromLists } from "../../store/contacts";
import type { ContactWriteContext } from "./context";
import { missingLists } from "./lists";
import { afterContactChanged } from "./reactions";

export type ContactRemoval = { kind: "removed"; removedFrom: number[] } | { kind: "no-lists"; listIds: number[] } | { kind: "missing" };

/**
 * Takes the contact `key` out of `listIds` (CONTRACT 2.2 `delete`; the contact itself stays);
 * the contact reactions hear of it. Every list must be the panel's, else nothing changes.
 */
export async function removeContactFromLists(ctx: ContactWriteContext, key: string, listIds: readonly number[]): Promise<ContactRemoval> {
  const missing = await missingLists(ctx.db, ctx.panelId, listIds);
  if (missing.length) return { kind: "no-lists", listIds: missing };
  const contact = await getContactByKey(ctx.db, ctx.panelId, key);
  if (!contact) return { kind: "missing" };
  const removedFrom = await removeFromLists(ctx.db, ctx.panelId, contact.id, listIds);
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes: ["lists"], joinedList: false, now: ctx.now }));
  return { kind: "removed", removedFrom };
}
