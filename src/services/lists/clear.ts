import { config } from "../../lib/config";
import { clearListStep, fencedMembersProbe, listsBeingEmptied, stalledListClears, startClearingList, startEmptyingsStatement } from "../../store/lists";
import { rebuildSegments } from "../../store/segments";
import { shardByIndex, type ShardDb } from "../../store/shards";
import { findPanelHome, panelDb, shardTask } from "../access/shards";
import type { MirrorShard } from "../access/partitions";

/**
 * Emptying or deleting a list in bounded steps (issue 42, decision 0038 step 4): one DELETE per
 * FANOUT_CHUNK_IDS contact ids of the list's members, so a 2 M-member list is no single
 * statement firing 2 M trigger runs. The first step runs in the request (a list of fewer members
 * than that is done before the answer, as before); each further step is one `list_clear`
 * message on IMPORTS. The list's member count falls as each step commits.
 *
 * A panel whose partitions span shards (decision 0041) clears each shard's members against that
 * shard's mirror of the list, which keeps its own progress: the home's steps and each mirror's
 * run side by side, a mirror's nudges naming its shard.
 */

/** The nudge on the IMPORTS queue: the list's next clearing step; the progress itself is on the list. */
export interface ListClearNudge {
  type: "list_clear";
  panelId: string;
  listId: number;
  /** A mirror's clear (decision 0041): the shard holding it. None: the panel's home, wherever it is when the step runs. */
  shard?: number;
}

export function readListClearNudge(body: unknown): ListClearNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, listId, shard } = body as Record<string, unknown>;
  if (type !== "list_clear" || typeof panelId !== "string" || !Number.isSafeInteger(listId)) return null;
  if (shard !== undefined && !(Number.isSafeInteger(shard) && (shard as number) >= 0)) return null;
  return { type, panelId, listId: listId as number, ...(shard === undefined ? {} : { shard: shard as number }) };
}

async function nudgeClear(env: Pick<Env, "IMPORTS">, panelId: string, listId: number, shard?: number): Promise<void> {
  await env.IMPORTS.send({ type: "list_clear", panelId, listId, ...(shard === undefined ? {} : { shard }) } satisfies ListClearNudge);
}


/**
 * Starts removing the list's members (`deleting`: and the list), runs the first step, and queues
 * the next; the segments that read lists are rebuilt once the last step is done. Returns the
 * members the list had, or null when the panel has no such list.
 */
export async function clearList(env: Env, db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], listId: number, now: number, deleting: boolean): Promise<number | null> {
  // A split's fence on one shard must refuse the clear before any shard is marked (each mark
  // meets it too, in its batch, should the fence rise meanwhile): a refusal changes nothing.
  await Promise.all([db, ...mirrors.map((m) => m.db)].map((shard) => fencedMembersProbe(shard, panelId, listId).run()));
  const members = await startClearingList(db, panelId, listId, now, deleting);
  if (members === null) return null;
  // Each mirror's row counts its own shard's members: what the list had is their sum.
  const mirrored = await Promise.all(mirrors.map((m) => startClearingList(m.db, panelId, listId, now, deleting)));
  await clearStep(env, db, panelId, listId, now);
  for (const mirror of mirrors) await clearStep(env, mirror.db, panelId, listId, now, mirror.shard);
  return mirrored.reduce<number>((sum, n) => sum + (n ?? 0), members);
}

/**
 * Deletes a list from one mirror alone (the home deleted it, and the mirror missed it: a mirror's
 * resync), its members there cleared in the same bounded steps. Returns the members it had there,
 * or null when the mirror has no such live list.
 */
export async function deleteMirroredList(env: Env, mirror: MirrorShard, panelId: string, listId: number, now: number): Promise<number | null> {
  const members = await startClearingList(mirror.db, panelId, listId, now, true);
  if (members !== null) await clearStep(env, mirror.db, panelId, listId, now, mirror.shard);
  return members;
}

/**
 * A partition split's target (decision 0047) empties the lists its source is emptying: a clear
 * is each shard's own (its list row's progress), and the source's cannot reach the memberships
 * the split moved once the fence refuses them, nor their copies on the target, which the clear
 * started before the map named. Each such list starts there with the source's start and bound
 * (memberships added after the start stay, as on the source), its steps nudged naming the
 * target. Run after the switch and again before the old rows go: safe to repeat.
 */
export async function carryListEmptyings(env: Env, source: ShardDb, target: MirrorShard, panelId: string, now: number): Promise<void> {
  const emptyings = await listsBeingEmptied(source, panelId);
  if (emptyings.length === 0) return;
  const { results } = await startEmptyingsStatement(target.db, panelId, emptyings, now).all<{ id: number }>();
  for (const { id } of results) await nudgeClear(env, panelId, id, target.shard);
}

/** One step on the home (`mirrorShard` none) or on a mirror. */
async function clearStep(env: Env, db: ShardDb, panelId: string, listId: number, now: number, mirrorShard?: number): Promise<void> {
  const step = await clearListStep(db, panelId, listId, config(env).fanoutChunkIds, now);
  // Nothing pending, or another consumer took this step and nudges the next.
  if (!step) return;
  // Each shard's segments (a mirror's copies, decision 0038) are rebuilt over its own contacts.
  if (step.done) await rebuildSegments(db, panelId, now);
  else await nudgeClear(env, panelId, listId, mirrorShard);
}

/** The IMPORTS queue's `list_clear` nudge: the list's next step, if it still has one. */
export async function handleListClearNudge(env: Env, nudge: ListClearNudge, now = Date.now()): Promise<void> {
  if (nudge.shard === undefined) return clearStep(env, await panelDb(env, nudge.panelId), nudge.panelId, nudge.listId, now);
  const db = shardByIndex(env, nudge.shard);
  if (!db) throw new Error(`a list_clear nudge names shard ${nudge.shard}, which has no binding`);
  await clearStep(env, db, nudge.panelId, nudge.listId, now, nudge.shard);
}

/** A clear that did not move on for this long lost its nudge (the request's send failed, a crash): it is nudged again. */
const CLEAR_STALLED_AFTER_MS = 60_000;

export const listClearRedrive = shardTask("list-clear-redrive", async (env, db, index, now) => {
  for (const stalled of await stalledListClears(db, now - CLEAR_STALLED_AFTER_MS, now, 100)) {
    // A clear on a shard other than the panel's home is a mirror's (decision 0041): its nudge names the shard.
    const home = await findPanelHome(env, stalled.panelId);
    const mirror = home !== null && home.panel.shard !== index && home.panel.partitions.some((p) => p.shard === index);
    await nudgeClear(env, stalled.panelId, stalled.listId, mirror ? index : undefined);
  }
});
