import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * A real HTTP peer on loopback for tests in workerd: it hosts files (CSV, zip, HTML) and acts
 * as webhook endpoint or callback receiver whose answers a test scripts and whose received
 * requests a test reads back. Everything is addressed by a `bucket` name so tests do not meet.
 *
 *   PUT  /__files/{name}            store a file (body), served at GET /files/{name}
 *   POST /__script/{bucket}         queue answers: [{status, headers?, body?, delayMs?}], used in order;
 *                                   the last one repeats. Without a script a bucket answers 200.
 *   GET  /__requests/{bucket}       what the bucket received: [{method, path, headers, body, at}]
 *   ANY  /hooks/{bucket}[/...]      the endpoint itself
 */
interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  at: number;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function startReceiver(): Promise<{ server: Server; url: string }> {
  const files = new Map<string, { body: Buffer; contentType: string }>();
  const scripts = new Map<string, ScriptedAnswer[]>();
  const received = new Map<string, ReceivedRequest[]>();

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const [, head, name = "", ...rest] = url.pathname.split("/");
    const body = await readBody(request);
    const decoded = decodeURIComponent(name);

    if (head === "__files" && request.method === "PUT") {
      files.set(decoded, { body, contentType: request.headers["content-type"] ?? "application/octet-stream" });
      response.writeHead(204).end();
    } else if (head === "files") {
      const file = files.get(decodeURIComponent([name, ...rest].join("/")));
      if (!file) response.writeHead(404, { "content-type": "text/plain" }).end("not found");
      else response.writeHead(200, { "content-type": file.contentType, "content-length": file.body.length }).end(file.body);
    } else if (head === "__script" && request.method === "POST") {
      scripts.set(decoded, JSON.parse(body.toString("utf8")) as ScriptedAnswer[]);
      response.writeHead(204).end();
    } else if (head === "__requests") {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received.get(decoded) ?? []));
    } else if (head === "hooks") {
      const log = received.get(decoded) ?? [];
      log.push({ method: request.method ?? "", path: url.pathname + url.search, headers: request.headers, body: body.toString("utf8"), at: Date.now() });
      received.set(decoded, log);
      const script = scripts.get(decoded) ?? [];
      const answer = (script.length > 1 ? script.shift() : script[0]) ?? { status: 200, body: "ok" };
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      if (!response.destroyed) response.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? "");
    } else {
      response.writeHead(404).end();
    }
  });

  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
  });
}
