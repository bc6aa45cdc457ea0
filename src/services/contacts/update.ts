import type { UnknownAttributeMode } from "../../domain/attributes";
import { prepareContact, type KeyedSchema } from "../../domain/contacts";
import type { FieldProblem } from "../../domain/problems";
import { updateContact, type Contact } from "../../store/contacts";
import type { ShardDb } from "../../store/shards";
import { journeysAfterContactWrite } from "../journeys/contact-triggers";
import { segmentsAfterContactWrite } from "../segments/contact-writes";

export type ContactUpdate =
  | { kind: "updated"; contact: Contact; ignored: string[]; created: string[] }
  | { kind: "refused"; problems: FieldProblem[] }
  | { kind: "missing"; key: string };

export interface ContactUpdateContext {
  env: Env;
  db: ShardDb;
  panelId: string;
  schema: KeyedSchema;
  unknown: UnknownAttributeMode;
  now: number;
  /** Takes the segment and journey work the write starts, which outlives the answer. */
  waitUntil(work: Promise<unknown>): void;
}

/**
 * Merges attributes into an existing contact (CONTRACT 2.2 `update`): every value is checked
 * against the schema, the primary key in `input` names the contact, and segments and journeys
 * hear of the change once it is stored. Problems name fields under `fieldPrefix`.
 */
export async function updateContactAttributes(ctx: ContactUpdateContext, input: Record<string, unknown>, fieldPrefix = "data"): Promise<ContactUpdate> {
  const prepared = prepareContact(ctx.schema, input, ctx.unknown, fieldPrefix);
  if (!prepared.ok) return { kind: "refused", problems: prepared.problems };
  const contact = await updateContact(ctx.db, ctx.panelId, prepared.key, prepared.values, ctx.now, prepared.created);
  if (!contact) return { kind: "missing", key: prepared.key };
  ctx.waitUntil(
    segmentsAfterContactWrite(ctx.env, ctx.panelId, contact.id, ["attributes"], ctx.now).then((entered) =>
      journeysAfterContactWrite(ctx.env, ctx.panelId, contact, entered, ctx.now),
    ),
  );
  return { kind: "updated", contact, ignored: prepared.ignored, created: prepared.created };
}
