import { changedValues } from "../../domain/audit";
import { prepareContact } from "../../domain/contacts";
import { refused, succeeded, type Result } from "../../lib/problems";
import { updateContact, type Contact } from "../../store/contacts";
import type { ShardDb } from "../../store/shards";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { reactAfterWrite } from "./reactions";
import { recordAudit, type Auditor } from "../audit/record";
import { noSuchContact } from "./refusals";
import { mirrorAttributes } from "../access/partitions";
import { newStringAttributes } from "./add";

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
  /**
   * A hand edit in the panel, recorded in the audit log with the values it changed (`before`:
   * the contact's attributes as read). API updates pass none: contact data written through the
   * API is the API's everyday traffic, not configuration (domain/audit.ts). `log`: the panel's
   * home, whose audit log the panel reads (the contact may be on another shard, decision 0038).
   */
  audited?: { by: Auditor; before: Contact["attributes"]; log: ShardDb },
): Promise<Result<ContactUpdated>> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown, fieldPrefix, "clears");
  if (!prepared.ok) return refused("invalid", prepared.problems);
  const contact = await updateContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, prepared.created);
  if (!contact) return noSuchContact(ctx.schema.primaryKey, prepared.key);
  await mirrorAttributes(ctx.configElsewhere, ctx.panelId, newStringAttributes(prepared.created, ctx.now));
  if (audited) await recordAudit(audited.log, ctx.panelId, audited.by, "contact.edited", String(contact.id), { key: contact.key, changed: changedValues(audited.before, contact.attributes) });
  reactAfterWrite(ctx, contact, ["attributes"], false);
  return succeeded({ contact, ignored: prepared.ignored, created: prepared.created });
}
