import { DurableObject } from "cloudflare:workers";

/**
 * One instance per webhook: its durable event backlog, batching, delivery and retries.
 * The binding is declared from the start so deployments carry the class; the delivery
 * behaviour arrives with the webhooks capability.
 */
export class WebhookDispatcher extends DurableObject<Env> {}
