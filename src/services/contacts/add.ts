import { prepareContact } from "../../domain/contacts";
import type { FieldProblem } from "../../domain/problems";
import { upsertContact, type Contact } from "../../store/contacts";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { missingLists } from "./lists";
import { afterContactChanged } from "./reactions";

export type ContactAdd =
  | { kind: "added"; contact: Contact; ignored: string[]; created: string[] }
  | { kind: "refused"; problems: FieldProblem[] }
  | { kind: "no-lists"; listIds: number[] };

/**
 * Creates the contact or merges the attributes into it (CONTRACT 2.2 `add`), joining `listIds`
 * (which must all be the panel's); the contact reactions hear of it once it is stored. A
 * refused value or an unknown list writes nothing.
 */
export async function addContact(ctx: ContactWriteContext & ContactSchemaContext, input: Record<string, unknown>, listIds?: readonly number[]): Promise<ContactAdd> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown);
  if (!prepared.ok) return { kind: "refused", problems: prepared.problems };
  const missing = await missingLists(ctx.db, ctx.panelId, listIds ?? []);
  if (missing.length) return { kind: "no-lists", listIds: missing };
  const contact = await upsertContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, { listIds, newAttributes: prepared.created });
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes: ["attributes", "lists"], joinedList: contact.joinedList, now: ctx.now }));
  return { kind: "added", contact, ignored: prepared.ignored, created: prepared.created };
}
