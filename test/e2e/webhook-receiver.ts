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
  /** The events at `path` once `count` have come, after a further quiet spell that would show any extra one. */
  eventsAt(path: string, count: number, timeoutMs?: number): Promise<any[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, any[]>();
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      const data = new URLSearchParams(body).get("data");
      if (data) for (const events of Object.values(JSON.parse(data) as Record<string, any[]>)) received.set(request.url!, [...(received.get(request.url!) ?? []), ...events]);
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const at = (path: string) => received.get(path) ?? [];
  return {
    at,
    async addWebhook(panelId, label, path) {
      const hook = await adminCall("POST", `/panels/${panelId}/webhooks`, { label, url: `${origin}${path}` });
      await adminCall("POST", `/panels/${panelId}/webhooks/${hook.id}/test`);
      received.delete(path);
      return hook.id;
    },
    async eventsAt(path, count, timeoutMs = 150_000) {
      const deadline = Date.now() + timeoutMs;
      while (at(path).length < count) {
        if (Date.now() > deadline) throw new Error(`${path} got ${at(path).length} of ${count} events: ${JSON.stringify(at(path))}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      await new Promise((resolve) => setTimeout(resolve, 8_000));
      return at(path);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
