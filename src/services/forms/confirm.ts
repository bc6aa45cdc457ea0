import { contactPlace, mirrorShards } from "../access/partitions";
import type { AttributeSchema } from "../../domain/attributes";
import { sha256Hex } from "../../lib/crypto";
import { refused, succeeded, type Result } from "../../lib/problems";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { takeFormSignup, type FormSettings } from "../../store/signup-forms";
import { addContact } from "../contacts/add";
import { missingLists } from "../contacts/lists";
import { consentStatements, type ConsentClient } from "../consent/record";

export interface ConfirmContext {
  env: Env;
  db: ShardDb;
  panel: Panel;
  formId: string;
  schema: AttributeSchema;
  settings: FormSettings;
  client: ConsentClient;
  now: number;
  waitUntil(work: Promise<unknown>): void;
}

/**
 * Follows a confirmation link: the signup is taken (a link works once), its values merged into
 * the contact and its lists joined, so the list-join reactions (journeys with a list trigger)
 * start now, not at the submission; the confirmation is recorded as consent. Refused
 * `not_found` for a link that is unknown, used, of another form, or expired.
 */
export async function confirmSignup(ctx: ConfirmContext, token: string): Promise<Result<{ listIds: number[] }>> {
  const gone = refused<never>("not_found", [], "This confirmation link is not valid any more: it was used, it expired, or the form was removed. Sign up again to get a new one.");
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(token)) return gone;
  // A pending signup is on its contact's partition shard (decision 0038): the link names the
  // form only, so the home is asked first, then each mirror (none for a panel without a map).
  // Only a link of this form, unexpired, is taken: one posted to another form's address stays usable at its own.
  const link = { tokenHash: await sha256Hex(token), panelId: ctx.panel.id, formId: ctx.formId, now: ctx.now };
  let db = ctx.db;
  let signup = await takeFormSignup(db, link);
  for (const mirror of signup ? [] : mirrorShards(ctx.env, ctx.panel)) {
    signup = await takeFormSignup(mirror.db, link);
    if (signup) {
      db = mirror.db;
      break;
    }
  }
  if (!signup) return gone;
  const key = signup.attributes[ctx.panel.primaryKey];
  const { configElsewhere } = contactPlace(ctx.env, ctx.panel, db, typeof key === "string" ? key : null);
  const missing = new Set(await missingLists(db, ctx.panel.id, signup.listIds));
  const listIds = signup.listIds.filter((id) => !missing.has(id));
  const writeCtx = { env: ctx.env, db, configElsewhere, panelId: ctx.panel.id, schema: { primaryKey: ctx.panel.primaryKey, attributes: ctx.schema }, unknown: "ignore" as const, now: ctx.now, waitUntil: ctx.waitUntil };
  // The proof of the confirmation is written in the batch that joins the lists (both or neither).
  const consent = await consentStatements(
    db,
    ctx.panel.id,
    { contactId: signup.contactId, kind: "confirm", listIds, via: "form", viaId: ctx.formId, client: ctx.client, text: signup.consentText, at: ctx.now },
    ctx.settings.consentKeepsClient,
  );
  const options = { fieldPrefix: "form", missingLists: "skip" as const, alongside: consent };
  const added = await addContact(writeCtx, signup.attributes, listIds, options);
  // A value the schema refuses now (an attribute's type changed since the submission): the lists still count.
  if (!added.ok) await addContact(writeCtx, { [ctx.panel.primaryKey]: signup.attributes[ctx.panel.primaryKey] }, listIds, options);
  return succeeded({ listIds });
}
