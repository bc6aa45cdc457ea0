import { prepareContact } from "../../domain/contacts";
import type { FieldProblem } from "../../domain/problems";
import { updateContact, type Contact } from "../../store/contacts";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { afterContactChanged } from "./reactions";

export type ContactUpdate =
  | { kind: "updated"; contact: Contact; ignored: string[]; created: string[] }
  | { kind: "refused"; problems: FieldProblem[] }
  | { kind: "missing"; key: string };

/**
 * Merges attributes into an existing contact (CONTRACT 2.2 `update`; the panel's edit): every
 * value is checked against the schema, the primary key in `input` names the contact, and the
 * contact reactions hear of the change once it is stored. Problems name fields under `fieldPrefix`.
 */
export async function updateContactAttributes(
  ctx: ContactWriteContext & ContactSchemaContext,
  input: Record<string, unknown>,
  fieldPrefix = "data",
): Promise<ContactUpdate> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown, fieldPrefix, "clears");
  if (!prepared.ok) return { kind: "refused", problems: prepared.problems };
  const contact = await updateContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, prepared.created);
  if (!contact) return { kind: "missing", key: prepared.key };
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes: ["attributes"], joinedList: false, now: ctx.now }));
  return { kind: "updated", contact, ignored: prepared.ignored, created: prepared.created };
}
