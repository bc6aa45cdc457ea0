import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";

// mailauth (CommonJS) verifies DKIM as a receiving server does (the library of WildDuck and ZoneMTA).
const { dkimVerify } = createRequire(import.meta.url)("mailauth/lib/dkim/verify") as {
  dkimVerify(message: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }): Promise<{ results: unknown[] }>;
};

/**
 * A real HTTP peer on loopback for tests in workerd: it hosts files (CSV, zip, HTML) and acts
 * as webhook endpoint or callback receiver whose answers a test scripts and whose received
 * requests a test reads back. Everything is addressed by a `bucket` name so tests do not meet.
 *
 *   PUT  /__files/{name}            store a file (body), served at GET /files/{name}
 *   POST /__script/{bucket}         queue answers: [{status, headers?, body?, delayMs?, dripMs?, resetAfterBytes?}],
 *                                   used in order; the last one repeats. Without a script a bucket answers 200.
 *                                   `{bucket}` may be a whole path under /hooks/, percent-encoded as one
 *                                   segment: its script goes before the bucket's for requests to that path.
 *                                   Hostile sources (downloads' deadline and minimum rate): delayMs holds the
 *                                   headers back; dripMs sends the body one byte per dripMs ms; resetAfterBytes
 *                                   sends that many bytes of the body then resets the connection. Both
 *                                   declare the whole body's content-length.
 *   GET  /__requests/{bucket}       what the bucket received: [{method, path, headers, body, bodyBase64, at}]
 *   ANY  /hooks/{bucket}[/...]      the endpoint itself
 *   PUT  /__dns/{bucket}            DNS records: {"name": [TXT, ...], "name CNAME": [target], "name A": [ip], "name AAAA": [ip]},
 *                                   added to the bucket's, answered by
 *   GET  /dns/{bucket}?name=&type=  a stand-in of the DNS-over-HTTPS JSON API (application/dns-json);
 *                                   a name without records is NXDOMAIN; {"name": "SERVFAIL"} fails it
 *   POST /__dkim/verify             {raw, txt: {"name": "record"}}: mailauth's DKIM verdicts of the
 *                                   message, its key records resolved from `txt`
 */
interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  dripMs?: number;
  resetAfterBytes?: number;
}

/** Sends `answer` as a hostile source would: a byte at a time, or a reset partway through the body. */
async function sendHostile(response: ServerResponse, answer: ScriptedAnswer): Promise<void> {
  const bytes = Buffer.from(answer.body ?? "", "utf8");
  response.writeHead(answer.status, { "content-length": String(bytes.length), ...answer.headers });
  if (answer.resetAfterBytes !== undefined) {
    response.write(bytes.subarray(0, answer.resetAfterBytes), () => setTimeout(() => response.socket?.resetAndDestroy(), 50));
    return;
  }
  for (const byte of bytes) {
    if (response.destroyed) return;
    response.write(Buffer.of(byte));
    await new Promise((resolve) => setTimeout(resolve, answer.dripMs));
  }
  response.end();
}

interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The body's bytes, for binary bodies (encrypted web push payloads). */
  bodyBase64: string;
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
  const zones = new Map<string, Record<string, string[] | "SERVFAIL">>();

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
    } else if (head === "__dns" && request.method === "PUT") {
      const added = JSON.parse(body.toString("utf8")) as Record<string, string[] | "SERVFAIL">;
      const lowered = Object.fromEntries(Object.entries(added).map(([name, records]) => [name.toLowerCase(), records]));
      zones.set(decoded, { ...zones.get(decoded), ...lowered });
      response.writeHead(204).end();
    } else if (head === "dns") {
      const name = (url.searchParams.get("name") ?? "").replace(/\.$/, "").toLowerCase();
      const zone = zones.get(decoded) ?? {};
      const type = url.searchParams.get("type");
      const codes: Record<string, number> = { A: 1, CNAME: 5, TXT: 16, AAAA: 28 };
      const records = type === "TXT" ? zone[name] : type && codes[type] ? zone[`${name} ${type.toLowerCase()}`] : undefined;
      const code = codes[type ?? ""] ?? 16;
      const question = [{ name, type: code }];
      // TXT data as resolvers write it: quoted strings of at most 255 characters, quotes escaped.
      const quoted = (text: string) => (text.match(/[^]{1,255}/g) ?? [""]).map((part) => `"${part.replace(/["\\]/g, "\\$&")}"`).join(" ");
      const answer =
        records === "SERVFAIL"
          ? { Status: 2, Question: question }
          : records?.length
            ? { Status: 0, Question: question, Answer: records.map((data) => ({ name, type: code, TTL: 300, data: code === 5 ? `${data}.` : code === 16 ? quoted(data) : data })) }
            : { Status: 3, Question: question };
      response.writeHead(200, { "content-type": "application/dns-json" }).end(JSON.stringify(answer));
    } else if (head === "__dkim" && request.method === "POST") {
      const { raw, txt } = JSON.parse(body.toString("utf8")) as { raw: string; txt: Record<string, string> };
      const resolver = async (name: string, type: string) => {
        const record = type === "TXT" ? txt[name.toLowerCase()] : undefined;
        if (record === undefined) throw Object.assign(new Error(`no ${type} record for ${name}`), { code: "ENOTFOUND" });
        return [(record.match(/[^]{1,255}/g) ?? [""])];
      };
      const verdict = await dkimVerify(Buffer.from(raw, "utf8"), { resolver });
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(verdict.results));
    } else if (head === "hooks") {
      const log = received.get(decoded) ?? [];
      log.push({ method: request.method ?? "", path: url.pathname + url.search, headers: request.headers, body: body.toString("utf8"), bodyBase64: body.toString("base64"), at: Date.now() });
      received.set(decoded, log);
      // A script of the whole path (`twilio-api/2010-04-01/Accounts/AC1/Messages.json`) before the
      // bucket's: files running at once that share a provider's bucket each script their own account.
      const script = scripts.get(decodeURIComponent([name, ...rest].join("/"))) ?? scripts.get(decoded) ?? [];
      const answer = (script.length > 1 ? script.shift() : script[0]) ?? { status: 200, body: "ok" };
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      if (response.destroyed) return;
      if (answer.dripMs !== undefined || answer.resetAfterBytes !== undefined) await sendHostile(response, answer);
      else response.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? "");
    } else {
      response.writeHead(404).end();
    }
  });

  // Node closes a kept-alive socket after 5 s idle; workerd may send its next request on that
  // socket just as it closes and see "Network connection lost". Idle sockets outlive any test.
  server.keepAliveTimeout = 120_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
  });
}
