import type { ShardDb } from "../../store/shards";
import { getWebhook, listWebhooks, type Webhook } from "../../store/webhooks";
import type { AttemptRecord } from "../../store/webhook-backlog";
import type { DispatcherStatus } from "./dispatcher";
import { webhookDispatcher } from "./enqueue";

/** The panel's webhooks, each with its dispatcher's state (backlog, batch in flight). */
export async function webhooksWithStatus(env: Env, db: ShardDb, panelId: string): Promise<{ webhook: Webhook; status: DispatcherStatus }[]> {
  const webhooks = await listWebhooks(db, panelId);
  const statuses = await Promise.all(webhooks.map((w) => webhookDispatcher(env, w.id).status()));
  return webhooks.map((webhook, i) => ({ webhook, status: statuses[i]! }));
}

/** A webhook with its dispatcher's state; null when there is no such webhook. */
export async function webhookWithStatus(env: Env, db: ShardDb, panelId: string, webhookId: string): Promise<{ webhook: Webhook; status: DispatcherStatus } | null> {
  const webhook = await getWebhook(db, panelId, webhookId);
  return webhook ? { webhook, status: await webhookDispatcher(env, webhook.id).status() } : null;
}

/** The webhook's delivery attempts, newest first; null when there is no such webhook. */
export async function webhookDeliveries(env: Env, db: ShardDb, panelId: string, webhookId: string, limit: number, batchId?: string): Promise<AttemptRecord[] | null> {
  const webhook = await getWebhook(db, panelId, webhookId);
  return webhook ? webhookDispatcher(env, webhook.id).deliveries(limit, batchId) : null;
}
