import { deadLetterListAnswer } from "../domain/answers/deployment";
import { z } from "../lib/z";
import { listDeadLetters } from "../store/dead-letters";
import { isoTime } from "../store/sql";
import { defineAdminRoute } from "./route";

const listDeadLettersRoute = defineAdminRoute({
  method: "GET",
  path: "/dead-letters",
  // Of every panel: for the admin token alone.
  role: "admin",
  response: deadLetterListAnswer,
  summary: "Messages the queues gave up on (newest first), and what their re-drive did; kept 30 days",
  query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
  async handle({ env, query }) {
    return {
      dead_letters: (await listDeadLetters(env.DB, query.limit)).map((letter) => ({
        id: letter.id,
        queue: letter.queue,
        kind: letter.kind,
        panel_id: letter.panelId,
        message: letter.body,
        attempts: letter.attempts,
        action: letter.action,
        received_at: isoTime(letter.receivedAt),
      })),
    };
  },
});

export const deadLetterRoutes = [listDeadLettersRoute];
