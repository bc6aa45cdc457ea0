import { notificationListAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { z } from "../lib/z";
import { listNotifications } from "../store/notifications";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

const listPanelNotifications = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/notifications",
  role: NEEDS.read,
  response: notificationListAnswer,
  summary: "Transactional emails the panel sent through MAILER (newest first)",
  query: z.object({
    kind: z.string().optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  }),
  async handle({ env, query, panel, db }) {
    const records = await listNotifications(db, panel.id, query.limit, query.kind);
    return {
      notifications: records.map((r) => ({
        id: r.id,
        kind: r.kind,
        to: r.recipients,
        subject: r.subject,
        text: r.body,
        status: r.status,
        error: r.error,
        created_at: isoTime(r.createdAt),
      })),
    };
  },
});

export const notificationRoutes = [listPanelNotifications];
