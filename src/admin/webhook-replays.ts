import { webhookReplayAnswer, webhookReplayCreateAnswer, webhookReplayListAnswer } from "../domain/answers/webhooks";
import { NEEDS } from "../domain/permissions";
import { createReplayBody } from "../domain/webhooks/replay";
import { unwrap } from "../lib/http/errors";
import { json } from "../lib/http/respond";
import { z } from "../lib/z";
import { cancelWebhookReplay, createReplay, readReplay, replaysOf, type ReplayWithProgress } from "../services/replays/replays";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// Webhook replays (issue 46 item 2, decision 0043): an owner re-sends the panel's recorded events
// of a time range to a webhook, after a dry run says how many. Owner only: it sends the panel's
// data to an outside system a second time.

function replayView({ replay, progress }: ReplayWithProgress): z.input<typeof webhookReplayAnswer> {
  return {
    dry_run: false,
    id: replay.id,
    webhook_id: replay.webhookId,
    from: isoTime(replay.from),
    to: isoTime(replay.to),
    channels: replay.filter.channels,
    journey_id: replay.filter.journeyId,
    state: replay.state,
    events_total: replay.eventsTotal,
    events_sent: replay.eventsQueued,
    events_delivered: progress.delivered,
    batches_delivered: progress.batches,
    events_waiting: progress.waiting,
    cursor: replay.cursor ? { occurred_at: isoTime(replay.cursor.occurredAt), event_id: replay.cursor.id } : null,
    created_by: replay.createdBy,
    created_at: isoTime(replay.createdAt),
    finished_at: replay.finishedAt === null ? null : isoTime(replay.finishedAt),
  };
}

const startReplay = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/replays",
  role: NEEDS.webhookReplays,
  response: webhookReplayCreateAnswer,
  status: 201,
  summary:
    "Replay the panel's events of a time range to the webhook (from the archive past retention), in order, marked as replays; dry_run answers how many events and batches (200). An id given again answers that replay (200)",
  body: createReplayBody,
  async handle({ env, caller, path, body, panel, db }) {
    const outcome = unwrap(await createReplay(env, db, panel, path.id, body, auditorOf(caller), Date.now()));
    if (outcome.kind === "dry_run") return json({ dry_run: true, events: outcome.events, batches: outcome.batches }, 200);
    const view = replayView(outcome.replay);
    return outcome.created ? view : json(view, 200);
  },
});

const listWebhookReplays = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id/replays",
  role: NEEDS.webhookReplays,
  response: webhookReplayListAnswer,
  summary: "The webhook's latest replays (50), newest first, with their progress",
  async handle({ env, path, panel, db }) {
    return { replays: unwrap(await replaysOf(env, db, panel.id, path.id)).map(replayView) };
  },
});

const readWebhookReplay = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/webhooks/:id/replays/:replay",
  role: NEEDS.webhookReplays,
  response: webhookReplayAnswer,
  summary: "A replay: state, events sent and delivered, cursor",
  async handle({ env, path, panel, db }) {
    return replayView(unwrap(await readReplay(env, db, panel.id, path.id, path.replay)));
  },
});

const cancelReplay = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/webhooks/:id/replays/:replay/cancel",
  role: NEEDS.webhookReplays,
  response: webhookReplayAnswer,
  summary: "Cancel a running replay: nothing more is handed over and its waiting events are dropped (a batch in flight is finished)",
  async handle({ env, caller, path, panel, db }) {
    return replayView(unwrap(await cancelWebhookReplay(env, db, panel.id, path.id, path.replay, auditorOf(caller), Date.now())));
  },
});

export const webhookReplayRoutes = [startReplay, listWebhookReplays, readWebhookReplay, cancelReplay];
