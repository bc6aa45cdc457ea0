import { config } from "../../lib/config";
import { clearListStep, stalledListClears, startClearingList } from "../../store/lists";
import { rebuildSegments } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { panelDb, shardTask } from "../access/shards";

/**
 * Emptying or deleting a list in bounded steps (issue 42, decision 0038 step 4): one DELETE per
 * FANOUT_CHUNK_IDS contact ids of the list's members, so a 2 M-member list is no single
 * statement firing 2 M trigger runs. The first step runs in the request (a list of fewer members
 * than that is done before the answer, as before); each further step is one `list_clear`
 * message on IMPORTS. The list's member count falls as each step commits.
 */

/** The nudge on the IMPORTS queue: the list's next clearing step; the progress itself is on the list. */
export interface ListClearNudge {
  type: "list_clear";
  panelId: string;
  listId: number;
}

export function readListClearNudge(body: unknown): ListClearNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, listId } = body as Record<string, unknown>;
  return type === "list_clear" && typeof panelId === "string" && Number.isSafeInteger(listId) ? { type, panelId, listId: listId as number } : null;
}

async function nudgeClear(env: Pick<Env, "IMPORTS">, panelId: string, listId: number): Promise<void> {
  await env.IMPORTS.send({ type: "list_clear", panelId, listId } satisfies ListClearNudge);
}

/**
 * Starts removing the list's members (`deleting`: and the list), runs the first step, and queues
 * the next; the segments that read lists are rebuilt once the last step is done. Returns the
 * members the list had, or null when the panel has no such list.
 */
export async function clearList(env: Env, db: ShardDb, panelId: string, listId: number, now: number, deleting: boolean): Promise<number | null> {
  const members = await startClearingList(db, panelId, listId, now, deleting);
  if (members === null) return null;
  await clearStep(env, db, panelId, listId, now);
  return members;
}

async function clearStep(env: Env, db: ShardDb, panelId: string, listId: number, now: number): Promise<void> {
  const step = await clearListStep(db, panelId, listId, config(env).fanoutChunkIds, now);
  // Nothing pending, or another consumer took this step and nudges the next.
  if (!step) return;
  if (step.done) await rebuildSegments(db, panelId, now);
  else await nudgeClear(env, panelId, listId);
}

/** The IMPORTS queue's `list_clear` nudge: the list's next step, if it still has one. */
export async function handleListClearNudge(env: Env, nudge: ListClearNudge, now = Date.now()): Promise<void> {
  await clearStep(env, await panelDb(env, nudge.panelId), nudge.panelId, nudge.listId, now);
}

/** A clear that did not move on for this long lost its nudge (the request's send failed, a crash): it is nudged again. */
const CLEAR_STALLED_AFTER_MS = 60_000;

export const listClearRedrive = shardTask("list-clear-redrive", async (env, db, _index, now) => {
  for (const stalled of await stalledListClears(db, now - CLEAR_STALLED_AFTER_MS, now, 100)) await nudgeClear(env, stalled.panelId, stalled.listId);
});
