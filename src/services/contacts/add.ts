import { canonicalAttributeName } from "../../domain/attributes";
import { prepareContact, type PreparedContact } from "../../domain/contacts";
import { refused, succeeded, type Result } from "../../lib/problems";
import { getContactByKey, upsertContact, type Contact } from "../../store/contacts";
import type { ContactSchemaContext, ContactWriteContext } from "./context";
import { missingLists } from "./lists";
import { contactExists, noSuchLists } from "./refusals";
import { reactAfterWrite, type ContactChangeKind } from "./reactions";
import { mirrorAttributes } from "../access/partitions";

export interface ContactAdded {
  contact: Contact;
  ignored: string[];
  created: string[];
}

export interface AddOptions {
  /** Where refused values are named (`data.NAME` for the envelope, `attributes.NAME` for the panel's form). */
  fieldPrefix?: string;
  /** Refuse (conflict, on the key's field) rather than merge into a contact that exists: the panel's "Add contact" form. */
  onlyNew?: boolean;
  /**
   * refuse (the default): lists that are not the panel's are refused (`not_found`), after a look.
   * skip: no look; the membership insert leaves out lists that are not the panel's live ones
   * (the caller checked, or a form's lists deleted since it was saved, which the visitor cannot fix).
   */
  missingLists?: "refuse" | "skip";
  /** Statements written in the contact's batch, after it (a form's proof of consent). */
  alongside?: readonly D1PreparedStatement[];
  /** Statements at the front of the contact's batch (a form's rate limits): one that fails writes nothing. */
  first?: readonly D1PreparedStatement[];
  /** The caller's prepareContact of this same input, schema, unknown mode and prefix, not done again. */
  prepared?: Extract<PreparedContact, { ok: true }>;
}

/**
 * The string attributes a contact write created on its partition, as the panel's other shards
 * get them (decision 0041; unknown_attributes `create` makes strings).
 */
export function newStringAttributes(names: readonly string[], now: number) {
  return names.map((name) => ({ name, type: "string" as const, createdAt: now }));
}

/** What an add can change, for the contact reactions (one array for every add). */
const ADDED: readonly ContactChangeKind[] = ["attributes", "lists"];

/**
 * Creates the contact or merges the attributes into it (CONTRACT 2.2 `add`), joining `listIds`
 * (which must all be the panel's); the contact reactions hear of it once it is stored. A
 * refused value (`invalid`), an unknown list (`not_found`) or, with `onlyNew`, a contact that
 * exists (`conflict`) writes nothing.
 */
export async function addContact(
  ctx: ContactWriteContext & ContactSchemaContext,
  input: Record<string, unknown>,
  listIds?: readonly number[],
  options: AddOptions = {},
): Promise<Result<ContactAdded>> {
  const fieldPrefix = options.fieldPrefix ?? "data";
  const prepared = options.prepared ?? prepareContact(ctx.schema, input, ctx.unknown, fieldPrefix);
  if (!prepared.ok) return refused("invalid", prepared.problems);
  if (options.onlyNew && (await getContactByKey(ctx.db, ctx.panelId, prepared.key))) {
    const keyField = Object.keys(input).find((name) => canonicalAttributeName(name) === ctx.schema.primaryKey) ?? ctx.schema.primaryKey;
    return contactExists(`${fieldPrefix}.${keyField}`, ctx.schema.primaryKey, prepared.key);
  }
  // Neither look nor mirror is awaited for nothing: most adds name no list and create no attribute.
  if (options.missingLists !== "skip" && listIds?.length) {
    const missing = await missingLists(ctx.db, ctx.panelId, listIds);
    if (missing.length) return noSuchLists(missing);
  }
  const contact = await upsertContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, { listIds, newAttributes: prepared.created, alongside: options.alongside, first: options.first });
  if (prepared.created.length) await mirrorAttributes(ctx.configElsewhere, ctx.panelId, newStringAttributes(prepared.created, ctx.now));
  reactAfterWrite(ctx, contact, ADDED, contact.joinedList);
  return succeeded({ contact, ignored: prepared.ignored, created: prepared.created });
}
