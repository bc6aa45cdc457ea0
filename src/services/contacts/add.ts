import { prepareContact } from "../../domain/contacts";
import { refused, succeeded, type Result } from "../../lib/problems";
import { upsertContact, type Contact } from "../../store/contacts";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { missingLists } from "./lists";
import { noSuchLists } from "./refusals";
import { afterContactChanged } from "./reactions";

export interface ContactAdded {
  contact: Contact;
  ignored: string[];
  created: string[];
}

/**
 * Creates the contact or merges the attributes into it (CONTRACT 2.2 `add`), joining `listIds`
 * (which must all be the panel's); the contact reactions hear of it once it is stored. A
 * refused value (`invalid`) or an unknown list (`not_found`) writes nothing.
 */
export async function addContact(ctx: ContactWriteContext & ContactSchemaContext, input: Record<string, unknown>, listIds?: readonly number[]): Promise<Result<ContactAdded>> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown);
  if (!prepared.ok) return refused("invalid", prepared.problems);
  const missing = await missingLists(ctx.db, ctx.panelId, listIds ?? []);
  if (missing.length) return noSuchLists(missing);
  const contact = await upsertContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, { listIds, newAttributes: prepared.created });
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes: ["attributes", "lists"], joinedList: contact.joinedList, now: ctx.now }));
  return succeeded({ contact, ignored: prepared.ignored, created: prepared.created });
}
