import { mirrorResyncAnswer, panelMoveAnswer, panelMoveListAnswer } from "../domain/answers/deployment";
import { orNotFound, unwrap } from "../lib/http/errors";
import { z } from "../lib/z";
import { getPanelMove, panelMoves, type PanelMove } from "../store/panel-moves";
import { isoTime } from "../store/sql";
import { startPanelMove, startPartitionSplit } from "../services/panels/move";
import { resyncMirrors } from "../services/panels/mirror-resync";
import { LAST_BUCKET } from "../domain/partitions";
import { definePanelRoute } from "./route";

function moveView(move: PanelMove) {
  const time = (ms: number | null) => (ms === null ? null : isoTime(ms));
  return {
    id: move.id,
    panel_id: move.panelId,
    from_shard: move.fromShard,
    to_shard: move.toShard,
    buckets: move.buckets,
    state: move.state,
    rows_copied: move.rowsCopied,
    changes_applied: move.changesApplied,
    rows_deleted: move.rowsDeleted,
    pause_ms: move.pauseMs,
    attempts: move.attempts,
    error: move.error,
    created_at: isoTime(move.createdAt),
    switched_at: time(move.switchedAt),
    finished_at: time(move.finishedAt),
  };
}

const startMove = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/moves",
  role: "admin",
  response: panelMoveAnswer,
  summary:
    "Move the panel's data to another shard, in the background (copy, catch up, switch with a pause of a few seconds, delete the old copy); with split_at, split the partition holding that bucket instead: its buckets from split_at on move to the shard while the panel serves (decision 0047)",
  status: 202,
  body: z.strictObject({ shard: z.int().min(0).max(1023), split_at: z.int().min(1).max(LAST_BUCKET).optional() }),
  async handle({ env, panel, body }) {
    const now = Date.now();
    const started = body.split_at === undefined ? await startPanelMove(env, panel, body.shard, now) : await startPartitionSplit(env, panel, body.split_at, body.shard, now);
    return moveView(unwrap(started));
  },
});

const listMoves = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/moves",
  role: "admin",
  response: panelMoveListAnswer,
  summary: "The panel's moves between shards, newest first",
  async handle({ env, panel }) {
    return { moves: (await panelMoves(env.DB, panel.id)).map(moveView) };
  },
});

const readMove = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/moves/:move",
  role: "admin",
  response: panelMoveAnswer,
  summary: "One move of the panel: its state and progress",
  async handle({ env, panel, path }) {
    return moveView(await orNotFound(getPanelMove(env.DB, panel.id, path.move), `No move with id "${path.move}" in this panel`));
  },
});

const resyncPartitionMirrors = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/partitions/resync",
  role: "admin",
  response: mirrorResyncAnswer,
  summary:
    "Copy the panel's lists, attributes, topics, saved segments and journeys from its home onto every other shard holding one of its partitions (decision 0041: a mirror write that failed leaves that mirror behind); the lists, topics and segments the home no longer has are removed there, a list's members in bounded steps; a journey the home stopped ends its instances there. Repeating it is harmless; a panel without a partition map has no mirrors",
  async handle({ env, panel }) {
    const mirrors = await resyncMirrors(env, panel, Date.now());
    return {
      mirrors: mirrors.map((m) => ({
        shard: m.shard,
        lists_repaired: m.listsRepaired,
        lists_removed: m.listsRemoved,
        attributes_added: m.attributesAdded,
        topics_repaired: m.topicsRepaired,
        topics_removed: m.topicsRemoved,
        segments_repaired: m.segmentsRepaired,
        segments_removed: m.segmentsRemoved,
        journeys_repaired: m.journeysRepaired,
      })),
    };
  },
});

export const panelMoveRoutes = [startMove, listMoves, readMove, resyncPartitionMirrors];
