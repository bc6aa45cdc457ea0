// A loopback endpoint for the service's journey webhooks in browser tests: it answers every
// delivery 200 and keeps its events (the form field `data`: events grouped by key) by the path
// the webhook posts to, so one receiver serves several webhooks and a test reads back exactly
// what each delivered.
import { createServer } from "node:http";
import { adminCall } from "./suite.ts";

export interface WebhookReceiver {
  /** The events received at `path` so far. */
  at(path: string): any[];
  /**
   * A webhook of the panel posting to `path` here, tested (only an operational webhook delivers,
   * and a passed test makes it one); answers its id. The test's delivery is not kept.
   */
  addWebhook(panelId: string, label: string, path: string): Promise<string>;
  /**
   * The events at `path` once `count` have come, after a quiet spell of 8 s from the arrival of
   * the count-th that would show any extra one. The spell runs while the test waits for other
   * paths, so a later call whose spell is already over answers at once.
   */
  eventsAt(path: string, count: number, timeoutMs?: number): Promise<any[]>;
  close(): Promise<void>;
}

/** How long after the expected events the receiver keeps listening for an extra one. */
const QUIET_MS = 8_000;

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, any[]>();
  /** When each event at a path arrived, in the order of `received`. */
  const arrivals = new Map<string, number[]>();
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      const data = new URLSearchParams(body).get("data");
      if (data) {
        for (const events of Object.values(JSON.parse(data) as Record<string, any[]>)) {
          received.set(request.url!, [...(received.get(request.url!) ?? []), ...events]);
          arrivals.set(request.url!, [...(arrivals.get(request.url!) ?? []), ...events.map(() => Date.now())]);
        }
      }
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  // Idle sockets outlive any test (test/node/receiver.ts says why).
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const at = (path: string) => received.get(path) ?? [];
  return {
    at,
    async addWebhook(panelId, label, path) {
      const hook = await adminCall("POST", `/panels/${panelId}/webhooks`, { label, url: `${origin}${path}` });
      await adminCall("POST", `/panels/${panelId}/webhooks/${hook.id}/test`);
      received.delete(path);
      arrivals.delete(path);
      return hook.id;
    },
    async eventsAt(path, count, timeoutMs = 150_000) {
      const deadline = Date.now() + timeoutMs;
      while (at(path).length < count) {
        if (Date.now() > deadline) throw new Error(`${path} got ${at(path).length} of ${count} events: ${JSON.stringify(at(path))}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const quietUntil = arrivals.get(path)![count - 1]! + QUIET_MS;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, quietUntil - Date.now())));
      return at(path);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
