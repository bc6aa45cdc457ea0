import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { WebhookDispatcher } from "../../src/services/webhooks/dispatcher";
import { admin, receiver, type TestPanel } from "./helpers";

export type Received = Awaited<ReturnType<typeof receiver.requests>>[number];

export function dispatcherStub(webhookId: string) {
  return env.WEBHOOKS.get(env.WEBHOOKS.idFromName(webhookId));
}

/** Creates a webhook on a fresh receiver bucket; `operational` runs its test first. */
export async function createWebhook(panel: TestPanel, options: Record<string, unknown> = {}, operational = true) {
  const bucket = receiver.bucket("hook");
  const created = await admin("POST", `/panels/${panel.id}/webhooks`, { label: "CRM sync", url: receiver.hookUrl(bucket), ...options });
  if (created.status !== 201) throw new Error(`webhook not created: ${JSON.stringify(created.body)}`);
  const id: string = created.body.id;
  // The instance's clock runs with real time plus an offset the test moves (never frozen, so a
  // real alarm firing meanwhile finds itself due, not early).
  await runInDurableObject(dispatcherStub(id), (instance: WebhookDispatcher) => {
    const clock = instance as unknown as { clockOffset: number };
    clock.clockOffset = 0;
    instance.clock = () => Date.now() + clock.clockOffset;
  });
  if (operational) {
    const tested = await admin("POST", `/panels/${panel.id}/webhooks/${id}/test`);
    if (tested.body.state !== "operational") throw new Error(`webhook test failed: ${JSON.stringify(tested.body)}`);
  }
  return { id, bucket, path: `/panels/${panel.id}/webhooks/${id}` };
}

/**
 * Runs the webhook's dispatcher with its env changed from now on (private fetches off, as
 * deployed): a Durable Object is given the env of the tests' Worker, which allows them.
 */
export async function dispatcherEnv(webhookId: string, overrides: Partial<Record<keyof Env, unknown>>): Promise<void> {
  await runInDurableObject(dispatcherStub(webhookId), (instance: WebhookDispatcher) => {
    const held = instance as unknown as { env: Env };
    held.env = { ...held.env, ...overrides } as Env;
  });
}

/** Moves the dispatcher's clock forward. */
export async function advance(webhookId: string, ms: number): Promise<void> {
  await runInDurableObject(dispatcherStub(webhookId), (instance: WebhookDispatcher) => {
    (instance as unknown as { clockOffset: number }).clockOffset += ms;
  });
}

/**
 * Waits for a run in progress, then runs the alarm if it is due by the dispatcher's clock;
 * repeats while runs are due. Returns how many runs it started.
 */
export async function drive(webhookId: string, maxRuns = 50): Promise<number> {
  let runs = 0;
  for (; runs < maxRuns; runs++) {
    const ran = await runInDurableObject(dispatcherStub(webhookId), async (instance: WebhookDispatcher, state) => {
      await (instance as unknown as { running: Promise<void> | null }).running;
      const at = await state.storage.getAlarm();
      if (at === null || at > instance.clock()) return false;
      await state.storage.deleteAlarm();
      await instance.alarm();
      return true;
    });
    if (!ran) break;
  }
  return runs;
}

export async function alarmAt(webhookId: string): Promise<number | null> {
  return runInDurableObject(dispatcherStub(webhookId), (_instance: WebhookDispatcher, state) => state.storage.getAlarm());
}

export async function dispatcherNow(webhookId: string): Promise<number> {
  return runInDurableObject(dispatcherStub(webhookId), (instance: WebhookDispatcher) => instance.clock());
}

/** An event object as the admin `events` route takes it; `n` numbers it (custom_params.n). */
export function eventObject(n: number, extra: Record<string, unknown> = {}) {
  return {
    channel: "email",
    event: "open",
    msgid: `m-${n}`,
    journey_name: "Cart reminder",
    custom_params: { n },
    att_params: { EMAIL: `user${n}@example.com`, CITY: "Pune" },
    event_params: { foreignkey: `user${n}@example.com`, ip_addr: "203.0.113.9", useragent: "Mozilla/5.0" },
    ...extra,
  };
}

export async function queue(hook: { path: string }, events: unknown[]) {
  const answer = await admin("POST", `${hook.path}/events`, { events });
  if (answer.status !== 202) throw new Error(`events refused: ${JSON.stringify(answer.body)}`);
  return answer.body as { accepted: number; duplicates: number };
}

/** Delivery requests only (the test action's sample batches are left out). */
export async function deliveries(bucket: string): Promise<Received[]> {
  return (await receiver.requests(bucket)).filter((r) => !String(r.headers["x-webhook-batch-id"]).startsWith("tst_"));
}

/** The JSON inside a delivered body: `{"<panel name>": [events]}`. */
export function payloadOf(request: Received): Record<string, any[]> {
  const data = new URLSearchParams(request.body).get("data");
  if (data === null) throw new Error(`no data field in ${request.body.slice(0, 200)}`);
  return JSON.parse(data) as Record<string, any[]>;
}

export function eventsOf(request: Received): any[] {
  return Object.values(payloadOf(request))[0]!;
}

export function numbersOf(requests: Received[]): number[] {
  return requests.flatMap((r) => eventsOf(r).map((e) => e.custom_params.n as number));
}

export const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
