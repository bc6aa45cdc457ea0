import { prepareContact } from "../../domain/contacts";
import { refused, succeeded, type Result } from "../../lib/problems";
import { updateContact, type Contact } from "../../store/contacts";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { afterContactChanged } from "./reactions";
import { noSuchContact } from "./refusals";

export interface ContactUpdated {
  contact: Contact;
  ignored: string[];
  created: string[];
}

/**
 * Merges attributes into an existing contact (CONTRACT 2.2 `update`; the panel's edit): every
 * value is checked against the schema, the primary key in `input` names the contact, and the
 * contact reactions hear of the change once it is stored. Refused values (`invalid`) name fields
 * under `fieldPrefix`; a contact the panel does not have is `not_found`.
 */
export async function updateContactAttributes(
  ctx: ContactWriteContext & ContactSchemaContext,
  input: Record<string, unknown>,
  fieldPrefix = "data",
): Promise<Result<ContactUpdated>> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown, fieldPrefix, "clears");
  if (!prepared.ok) return refused("invalid", prepared.problems);
  const contact = await updateContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, prepared.created);
  if (!contact) return noSuchContact(ctx.schema.primaryKey, prepared.key);
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes: ["attributes"], joinedList: false, now: ctx.now }));
  return succeeded({ contact, ignored: prepared.ignored, created: prepared.created });
}
