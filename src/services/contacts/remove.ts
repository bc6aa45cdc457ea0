import { getContactByKey, removeFromLists } from "../../store/contacts";
import { succeeded, type Result } from "../../lib/problems";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { missingLists } from "./lists";
import { reactAfterWrite } from "./reactions";
import { noSuchContact, noSuchLists } from "./refusals";

/**
 * Takes the contact `key` out of `listIds` (CONTRACT 2.2 `delete`; the contact itself stays);
 * the contact reactions hear of it and the answer is the lists it was in. Every list must be the
 * panel's, then the contact must exist (else `not_found`), or nothing changes.
 */
export async function removeContactFromLists(ctx: ContactWriteContext & Pick<ContactSchemaContext, "schema">, key: string, listIds: readonly number[]): Promise<Result<{ removedFrom: number[] }>> {
  const missing = await missingLists(ctx.db, ctx.panelId, listIds);
  if (missing.length) return noSuchLists(missing);
  const contact = await getContactByKey(ctx.db, ctx.panelId, key);
  if (!contact) return noSuchContact(ctx.schema.primaryKey, key);
  const removedFrom = await removeFromLists(ctx.db, ctx.panelId, contact.id, listIds);
  reactAfterWrite(ctx, contact, ["lists"], false);
  return succeeded({ removedFrom });
}
