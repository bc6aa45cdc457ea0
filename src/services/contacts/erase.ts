import { EMAIL_ATTRIBUTE } from "../../domain/email";
import { campaignMessageId } from "../../domain/email-message";
import { erasedIdentifier } from "../../domain/erasure";
import { bucketRangesOn } from "../../domain/partitions";
import { contactReach } from "../../domain/preferences";
import { newId } from "../../lib/random";
import { contactsByIds, getContactByKey } from "../../store/contacts";
import { namedActor, sameActor, type AuditActor } from "../../store/audit";
import {
  copiesDeleted,
  eraseContactRows,
  erasureAudited,
  erasureUnderWay,
  finishErasure,
  forgetErasureUnderWay,
  outboxKeysOf,
  partRewritten,
  partsNaming,
  pendingErasedCopies,
  pendingErasures,
  recipientsOf,
  uniqueidsOfContact,
  unauditedErasures,
  unfinishedErasures,
  type ContactErasure,
  type ErasedMessage,
  type ErasureTarget,
} from "../../store/erasure";
import { withdrawExports } from "../../store/segment-exports";
import type { ShardDb } from "../../store/shards";
import { listWebhooks } from "../../store/webhooks";
import { contactOwningPlace, mergedMap, panelShards, type OwningShard } from "../access/partitions";
import { findPanelHome, shardTask } from "../access/shards";
import { recordAuditOnce } from "../audit/record";
import { outboxKey } from "../channels/email/outbox";
import { eraseFromBroadcastFiles } from "./erase-broadcast-files";
import { archiveKey, putPartObject, readPartObject } from "../retention/archive";
import { webhookDispatcher } from "../webhooks/enqueue";

/**
 * Right to erasure (issue 16): a contact and everything held about it leave the panel. In
 * order, each step safe to repeat if the request dies after it:
 * 0. where other shards hold rows of it, its own shard records the erasure under way, which the
 *    cron makes again if the request dies before its own batch (finishUnfinishedErasures);
 * 1. waiting webhook events naming the contact are dropped from each webhook's backlog;
 * 2. the outbox's copies sent to its address go from R2, and its records in broadcasts' uploaded
 *    contact files are blanked (erase-broadcast-files.ts);
 * 3. one D1 batch deletes its rows (contact, memberships, events, messages, journey instances),
 *    drops journey simulations' samples naming it and records the erasure; suppressions stay
 *    under a hash of the address or number; the `contact.erased` audit entry follows, once, as
 *    the erasure's requester (auditErasure); then the outbox's copies of the messages it deleted
 *    go by message id (a send under way stored them after step 2). The batch records those ids
 *    (`erased_message_copies`) and the records go with the copies: a retry's batch reads them
 *    back, and the cron deletes what a request that died left; the erasure is `done` only after;
 * 4. segment exports, completed or under way, which may list it, are withdrawn (files deleted);
 * 5. archived days naming it are rewritten without its events, some now and the rest by the
 *    cron (`eraseArchivedEvents`), each part once.
 */

/** Archive parts rewritten by the erasing request itself; the cron does the rest. */
const PARTS_INLINE = 20;
/** Parts the cron rewrites per erasure and run; it moves to the next erasure only when one is done. */
const PARTS_PER_RUN = 50;

async function erasureTarget(shards: readonly ShardDb[], panelId: string, contactId: number, attributes: Record<string, unknown>): Promise<ErasureTarget> {
  const { address: email, phone } = contactReach(attributes);
  // An anonymous profile is placed by its uniqueid's bucket, so another shard may hold one.
  const uniqueids = (await Promise.all(shards.map((db) => uniqueidsOfContact(db, panelId, contactId)))).flat();
  return {
    panelId,
    contactId,
    uniqueids: [...new Set(uniqueids)],
    email: email ? { plain: email, erased: await erasedIdentifier(panelId, email) } : null,
    phone: phone ? { plain: phone, erased: await erasedIdentifier(panelId, phone) } : null,
  };
}

/**
 * Where an erasure acts (decision 0038): `db`, the contact's partition shard, holds its rows and
 * the erasure's record; `home` the panel's configuration (webhooks, segment exports); `others`,
 * the panel's other shards (home and mirrors), rows naming it by address, number or uniqueid.
 * Each shard comes with its buckets in the panel's map (contactOwningPlace): a split's source's
 * fenced copies outside them are cleaning's to delete. A panel without a map: `db` and `home`
 * the same, no others.
 */
export interface ErasurePlace {
  db: OwningShard;
  home: ShardDb;
  others: readonly OwningShard[];
}

/**
 * Who asked for an erasure (kept in its record: the audit entry names them whichever path
 * completes it; null, an erasure recorded before there was a requester to keep, gets no entry),
 * and the path completing it now: the request (or its retry) or the cron.
 */
export interface ErasureBy {
  requester: AuditActor | null;
  finisher: "request" | "cron";
}

/** Erases the contact named by `key`; null when the panel has none. */
export async function eraseContact(env: Env, place: ErasurePlace, panelId: string, key: string, now: number, by: ErasureBy): Promise<ContactErasure | null> {
  const { home } = place;
  const db = place.db.db;
  const others = place.others.map((shard) => shard.db);
  const contact = await getContactByKey(db, panelId, key);
  if (!contact) return null;
  const target = await erasureTarget([db, ...others], panelId, contact.id, contact.attributes);
  const accepted: ContactErasure = {
    id: newId("era"),
    panelId,
    contactId: contact.id,
    owners: [`c:${contact.id}`, ...target.uniqueids.map((u) => `u:${u}`)],
    state: "archive",
    partsDone: 0,
    createdAt: now,
    finishedAt: null,
    requestedBy: by.requester,
  };
  // Before anything is deleted, where the other shards' batches go ahead of its own: the record
  // under way on the contact's shard has the cron finish an erasure whose request dies (or take
  // an earlier attempt's, whose id and requester this one keeps).
  const erasure = place.others.length ? { ...(await erasureUnderWay(db, accepted)), owners: accepted.owners, state: accepted.state } : accepted;

  const names = [key, ...recipientsOf(target), ...target.uniqueids, ...[contact.attributes.MOBILE].filter((m): m is string => typeof m === "string")];
  for (const webhook of await listWebhooks(home, panelId)) await webhookDispatcher(env, webhook.id).forgetContact([...new Set(names)]);

  // The outbox keeps an address as it was written; suppressions and messages keep it in lower case.
  const written = contact.attributes[EMAIL_ATTRIBUTE];
  const recipients = [...new Set([...recipientsOf(target), ...(typeof written === "string" && written.trim() ? [written.trim()] : [])])];
  const outboxKeys = (await Promise.all([db, ...others].map((shard) => outboxKeysOf(shard, panelId, recipients)))).flat();
  await deleteObjects(env.FILES, outboxKeys);
  await eraseFromBroadcastFiles(env.FILES, panelId, { key, attributes: contact.attributes });

  // The other shards first: the record on the partition's shard marks the erasure as made, and
  // records the messages they deleted with its own.
  const recorded = new Map<ShardDb, ErasedMessage[]>();
  for (const shard of place.others) recorded.set(shard.db, await eraseContactRows(shard.db, shard.buckets, target, null, now));
  recorded.set(db, await eraseContactRows(db, place.db.buckets, target, erasure, now, [...recorded.values()].flat()));
  // A send under way may store its copy after the outbox was read above: the copies of the
  // messages just deleted go by id. The outbox keeps no copy of a message whose row it finds
  // gone (channels/email/outbox.ts), so none comes after this.
  await deleteErasedCopies(env.FILES, [home, ...others, db], panelId, contact.id, recorded);
  // The contact is gone: a retry would find nothing (404), so the cron does what is left if the
  // request dies here (sweepErasedCopies, finishErasureTail).
  await finishErasureTail(env, home, db, erasure, finisherDetail(erasure.requestedBy, by), now, now);
  const { done, rewritten } = await rewriteArchive(env.FILES, db, erasure, PARTS_INLINE, now);
  return { ...erasure, state: done ? "done" : "archive", partsDone: rewritten, finishedAt: done ? now : null };
}

/**
 * What the erasure's audit entry says of who finished it besides its requester (the entry's
 * actor): the cron, or whoever retried it when that is not the requester (a retry takes over
 * the earlier attempt's erasure, its id and requester kept).
 */
function finisherDetail(requester: AuditActor | null, by: ErasureBy): Record<string, unknown> {
  if (by.finisher === "cron") return { finished_by: "cron" };
  return requester && by.requester && !sameActor(requester, by.requester) ? { finished_by: namedActor(by.requester) } : {};
}

/** Deletes R2 objects by key, 1,000 a call (R2's limit for one delete). */
async function deleteObjects(bucket: R2Bucket, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000));
}

/**
 * The erasure's last steps once the contact's rows are gone, each safe to repeat, by whichever
 * path gets there (the request, its retry, the cron): the panel's segment exports requested by
 * `exportsCreatedBy`, which may list the contact, are withdrawn and their files deleted, then the
 * audit entry is written. Its entry written marks an erasure whose request went this far.
 */
async function finishErasureTail(env: Env, home: ShardDb, db: ShardDb, erasure: ContactErasure, detail: Record<string, unknown>, exportsCreatedBy: number, now: number): Promise<void> {
  const exportFiles = await withdrawExports(home, erasure.panelId, "withdrawn: a contact it lists or may list was erased; export the segment again", exportsCreatedBy, now);
  await deleteObjects(env.FILES, exportFiles);
  await auditErasure(home, db, erasure, detail, now);
}

/**
 * Writes the erasure's `contact.erased` audit entry in the panel's log on `home`, as its
 * requester, then marks its record on `db` audited. Whichever path gets here writes it (the
 * request, its retry, the cron), once: the entry is not written again where one names the
 * erasure already (recordAuditOnce), so a path dying between the two writes is safe to repeat.
 */
async function auditErasure(home: ShardDb, db: ShardDb, erasure: ContactErasure, detail: Record<string, unknown>, now: number): Promise<void> {
  // The log names the contact by its id only: its key is what was erased.
  const entry = { erasure_id: erasure.id, ...detail };
  if (erasure.requestedBy) await recordAuditOnce(home, erasure.panelId, erasure.requestedBy, "contact.erased", String(erasure.contactId), entry, "erasure_id", erasure.createdAt);
  await erasureAudited(db, erasure.id, now);
}

/** Messages the cron's sweep takes per shard and run from `erased_message_copies`. */
const COPIES_PER_RUN = 1000;

/**
 * Deletes the outbox copies of the messages `recorded` lists, as `erased_message_copies` of the
 * shard holds them: objects, then the rows on `shards` (the panel's, its home first, where the
 * outbox is), each shard's records in the batch of its rows, so a record goes only once its
 * copies are gone. Safe to repeat.
 */
async function deleteErasedCopies(bucket: R2Bucket, shards: readonly ShardDb[], panelId: string, contactId: number, recorded: ReadonlyMap<ShardDb, readonly ErasedMessage[]>): Promise<void> {
  const messages = [...recorded.values()].flat();
  if (messages.length === 0) return;
  const ids = [...new Set(messages.map((m) => (m.kind === "campaign" ? campaignMessageId(m.message, contactId) : m.message)))];
  const copies = ids.map((id) => outboxKey(panelId, id));
  await deleteObjects(bucket, copies);
  for (const shard of new Set([...shards, ...recorded.keys()])) {
    const here = recorded.get(shard);
    await copiesDeleted(shard, panelId, shards.includes(shard) ? ids : [], here ? { contactId, messages: here } : null);
  }
}

/** The cron's part: the copies an erasing request that died left (their records on `db`). */
async function sweepErasedCopies(env: Env, db: ShardDb): Promise<void> {
  for (const { panelId, contactId, messages } of await pendingErasedCopies(db, COPIES_PER_RUN)) {
    const found = await findPanelHome(env, panelId);
    // A panel deleted since: its outbox rows went with it.
    const shards = found ? panelShards(env, found.panel, found.db) : [];
    await deleteErasedCopies(env.FILES, shards, panelId, contactId, new Map([[db, messages]]));
  }
}

function ownsRow(erasure: ContactErasure): (row: { contact_id: number | null; uniqueid: string | null }) => boolean {
  const uniqueids = new Set(erasure.owners.filter((o) => o.startsWith("u:")).map((o) => o.slice(2)));
  return (row) => row.contact_id === erasure.contactId || (row.uniqueid !== null && uniqueids.has(row.uniqueid));
}

/** Rewrites up to `limit` archived parts naming the erased owners; done when none is left (the erasure is then finished). */
export async function rewriteArchive(bucket: R2Bucket, db: ShardDb, erasure: ContactErasure, limit: number, now: number): Promise<{ done: boolean; rewritten: number }> {
  const parts = await partsNaming(db, erasure.panelId, erasure.owners, limit);
  const owned = ownsRow(erasure);
  for (const part of parts) {
    const key = archiveKey(erasure.panelId, part);
    const object = await bucket.get(key);
    if (object) {
      const rows = await readPartObject(object);
      const kept = rows.filter((row) => !owned(row));
      if (kept.length < rows.length) await putPartObject(bucket, key, kept, Number(object.customMetadata?.last_id ?? part.part));
    }
    await partRewritten(db, erasure, part);
  }
  if (parts.length === limit) return { done: false, rewritten: parts.length };
  // Not while copies of its messages are still to delete (the cron's sweep deletes them first).
  return { done: await finishErasure(db, erasure, now), rewritten: parts.length };
}

/** How long an erasure stays under way before the cron takes its request for dead: a request takes seconds. */
export const ERASURE_UNDER_WAY_MS = 5 * 60_000;
/** Erasures under way the cron finishes per shard and run (each a whole erasure). */
const UNFINISHED_PER_RUN = 5;

/**
 * The cron's part for erasures whose request died after the record under way and was never
 * retried (decision 0023): each is made again from the start, every step safe to repeat, on
 * the shard its contact is on now (a split may have moved it), and keeps its id there. A contact
 * no shard holds any more (deleted since) has what is left of it here erased by the record's
 * ids, its archived days rewritten after; a panel deleted since took its rows with it.
 */
async function finishUnfinishedErasures(env: Env, db: ShardDb, index: number, now: number): Promise<void> {
  for (const erasure of await unfinishedErasures(db, now - ERASURE_UNDER_WAY_MS, UNFINISHED_PER_RUN)) {
    // One that fails (a split's fence during its pause) is tried again next run; it must not
    // hold up the others, nor the shard's copy and archive sweeps after it.
    try {
      await finishUnfinishedErasure(env, db, index, erasure, now);
    } catch (error) {
      console.error(`erasure ${erasure.id} of panel ${erasure.panelId}: not finished this run`, error);
    }
  }
}

async function finishUnfinishedErasure(env: Env, db: ShardDb, index: number, erasure: ContactErasure, now: number): Promise<void> {
  const found = await findPanelHome(env, erasure.panelId);
  if (found) {
    const { panel } = found;
    const contact = (await mergedMap(panelShards(env, panel, found.db), (shard) => contactsByIds(shard, panel.id, [erasure.contactId]))).get(erasure.contactId);
    if (contact) {
      const place = contactOwningPlace(env, panel, found.db, contact.key);
      await eraseContact(env, { db: place.db, home: found.db, others: place.elsewhere }, panel.id, contact.key, now, { requester: erasure.requestedBy, finisher: "cron" });
    } else {
      const target = { panelId: panel.id, contactId: erasure.contactId, uniqueids: erasure.owners.filter((o) => o.startsWith("u:")).map((o) => o.slice(2)), email: null, phone: null };
      const made = { ...erasure, state: "archive" as const };
      await eraseContactRows(db, panel.partitions.length ? bucketRangesOn(panel.partitions, index) : null, target, made, now);
      await finishErasureTail(env, found.db, db, made, { finished_by: "cron" }, now, now);
    }
  }
  // Finished on another shard (the contact moved), or its panel is gone: this record goes.
  await forgetErasureUnderWay(db, erasure.id);
}

/** Completed erasures whose audit entry the cron writes per shard and run. */
const UNAUDITED_PER_RUN = 20;

/**
 * The cron's part for erasures whose request died after its own batch, before its audit line (a
 * retry finds no contact): their entry, as their requester, noting the cron wrote it. One that
 * fails (its panel fenced by a move) is tried again next run without holding up the rest.
 */
async function auditErasures(env: Env, db: ShardDb, now: number): Promise<void> {
  for (const erasure of await unauditedErasures(db, now - ERASURE_UNDER_WAY_MS, UNAUDITED_PER_RUN)) {
    try {
      const found = await findPanelHome(env, erasure.panelId);
      // A panel deleted since took its audit log with it.
      // Exports requested once its contact's rows were gone cannot list it: a request takes far less than ERASURE_UNDER_WAY_MS.
      if (found) await finishErasureTail(env, found.db, db, erasure, { written_by: "cron" }, erasure.createdAt + ERASURE_UNDER_WAY_MS, now);
      else await erasureAudited(db, erasure.id, now);
    } catch (error) {
      console.error(`erasure ${erasure.id} of panel ${erasure.panelId}: audit entry not written this run`, error);
    }
  }
}

/** The cron sweep: on every shard, finishes erasures whose request died, writes the audit entries requests left, deletes the outbox copies and rewrites the archived days that erasures left. */
export const eraseArchivedEvents = shardTask("contacts.erase_archive", async (env, db, index, now) => {
  await finishUnfinishedErasures(env, db, index, now);
  await auditErasures(env, db, now);
  await sweepErasedCopies(env, db);
  for (const erasure of await pendingErasures(db, 10)) {
    if (!(await rewriteArchive(env.FILES, db, erasure, PARTS_PER_RUN, now)).done) break;
  }
});
