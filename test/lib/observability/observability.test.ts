import { afterEach, describe, expect, it, vi } from "vitest";
import { createMessageBatch, createExecutionContext, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { BASE, createPanel, fetchWith, receiver } from "../../support/helpers";
import { metrics, type DataPointWriter } from "../../../src/lib/observability/metrics";
import { handleQueue } from "../../../src/jobs/queues";
import { observing, type Observation } from "../../../src/lib/observability/context";
import { countingD1 } from "../../../src/store/d1-count";
import { postBatch } from "../../../src/services/webhooks/deliver";
import { callProvider } from "../../../src/services/channels/provider-call";
import { SesProvider } from "../../../src/services/channels/email/ses";
import { recordEvents } from "../../../src/services/pipeline/record";

/** The JSON lines of one kind the Worker logged while `run` ran. */
async function loggedLines(kind: string, run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const log = vi.spyOn(console, "log");
  try {
    await run();
    return log.mock.calls
      .filter((args) => args.length === 1 && typeof args[0] === "string" && args[0].startsWith("{"))
      .map((args) => JSON.parse(args[0] as string) as Record<string, unknown>)
      .filter((line) => line.kind === kind);
  } finally {
    log.mockRestore();
  }
}

function recordingDataset(): DataPointWriter & { points: { indexes?: string[]; blobs?: string[]; doubles?: number[] }[] } {
  const points: { indexes?: string[]; blobs?: string[]; doubles?: number[] }[] = [];
  return { points, writeDataPoint: (point) => void points.push(point) };
}

afterEach(() => vi.restoreAllMocks());

// The pool runs with LOG_LINES off (vitest.config.ts); these tests turn the lines on.
const LOGGING = { LOG_LINES: "true" };

describe("request log lines", () => {
  it("logs one JSON line per envelope call: route pattern, status, duration, panel, request id; never the apikey", async () => {
    const panel = await createPanel();
    const query = new URLSearchParams({ type: "lists", activity: "add", apikey: panel.apiKey, listname: "Observed" });
    let body: { requestid: string } | undefined;
    const lines = await loggedLines("request", async () => {
      const response = await fetchWith(LOGGING, new Request(`${BASE}/apiv2?${query}`));
      expect(response.status).toBe(200);
      body = await response.json();
    });
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toMatchObject({ method: "GET", route: "/:version", status: 200, panelId: panel.id, requestId: body!.requestid, errorClass: null });
    expect(line!.durationMs).toEqual(expect.any(Number));
    expect(line!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(lines)).not.toContain(panel.apiKey);
    expect(JSON.stringify(lines)).not.toContain("apikey");
  });

  it("names a refused call's status and the caller's trace id from its traceparent", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const lines = await loggedLines("request", async () => {
      const response = await fetchWith(LOGGING, new Request(`${BASE}/apiv2?type=lists&activity=add&listname=x&apikey=not-a-key`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } }));
      expect(response.status).toBe(401);
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ route: "/:version", status: 401, panelId: null, traceId });
    expect(JSON.stringify(lines)).not.toContain("not-a-key");
  });

  it("logs an admin call under its admin route pattern", async () => {
    const panel = await createPanel();
    const lines = await loggedLines("request", () => fetchWith(LOGGING, new Request(`${BASE}/admin/v1/panels/${panel.id}`, { headers: { authorization: "Bearer test-admin-token" } })));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ route: "/admin/v1/panels/:panel", status: 200, panelId: panel.id });
  });
});

describe("D1 statements in log lines", () => {
  it("a request logs the statements it sent: /health/deep sends one to the control database and one to each shard", async () => {
    let checks: { binding: string }[] = [];
    const lines = await loggedLines("request", async () => {
      const response = await fetchWith(LOGGING, new Request("https://api.test/health/deep"));
      expect(response.status).toBe(200);
      checks = ((await response.json()) as { checks: { binding: string }[] }).checks;
    });
    const databases = checks.filter((c) => c.binding === "DB" || c.binding.startsWith("SHARD_")).length;
    expect(databases).toBeGreaterThan(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ route: "/health/deep", status: 200, d1Statements: databases });
    // /health reads no database.
    expect((await loggedLines("request", () => fetchWith(LOGGING, new Request("https://api.test/health"))))[0]).toMatchObject({ d1Statements: 0 });
  });

  it("counts each statement of a batch, each single run and an exec; nothing outside an observation", async () => {
    const counting = countingD1({ ...env } as Env);
    const observation: Observation = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
    await observing(observation, async () => {
      const select = counting.DB.prepare("SELECT ? AS n");
      const [one, two] = await counting.DB.batch<{ n: number }>([select.bind(1), select.bind(2), counting.DB.prepare("SELECT 3")]);
      expect([one!.results[0]!.n, two!.results[0]!.n]).toEqual([1, 2]);
      expect(await select.bind(4).first("n")).toBe(4);
      await counting.DB.prepare("SELECT 5").all();
      await counting.DB.exec("SELECT 6");
    });
    expect(observation.d1Statements).toBe(6);
    await counting.DB.prepare("SELECT 7").run();
    expect(observation.d1Statements).toBe(6);
  });
});

describe("metrics", () => {
  it("writes data points to a dataset-shaped binding", () => {
    const dataset = recordingDataset();
    const recorder = metrics({ METRICS: dataset });
    recorder.request("/:version", "GET", 200, 12);
    recorder.queueBatch("apiv2-sends-default", 10, 9, 1, 40);
    recorder.message("email", "sent");
    recorder.webhook("failed");
    expect(dataset.points).toEqual([
      { indexes: ["request"], blobs: ["request", "/:version", "GET", "200"], doubles: [1, 12] },
      { indexes: ["queue_batch"], blobs: ["queue_batch", "apiv2-sends-default"], doubles: [10, 9, 1, 40] },
      { indexes: ["message"], blobs: ["message", "email", "sent"], doubles: [1] },
      { indexes: ["webhook"], blobs: ["webhook", "failed"], doubles: [1] },
    ]);
  });

  it("does nothing without the binding", () => {
    const recorder = metrics({});
    expect(() => {
      recorder.request("/:version", "GET", 200, 1);
      recorder.queueBatch("q", 1, 1, 0, 1);
      recorder.message("sms", "failed");
      recorder.webhook("delivered");
    }).not.toThrow();
  });

  it("recording events writes how many were stored (duplicates left out)", async () => {
    const panel = await createPanel();
    const dataset = recordingDataset();
    const event = (guid: string) => ({ channel: "custom_activity" as const, name: "viewed", occurredAt: Date.now(), identity: "ada@example.com", params: {}, guid });
    const result = await recordEvents({ ...env, METRICS: dataset } as Env, { id: panel.id }, [event("g1"), event("g2"), event("g1")]);
    expect(result).toMatchObject({ recorded: 2, duplicates: 1 });
    expect(dataset.points).toEqual([{ indexes: ["events"], blobs: ["events", "custom_activity"], doubles: [2] }]);
  });

  it("a request through the Worker writes its request data point", async () => {
    const dataset = recordingDataset();
    const response = await fetchWith({ METRICS: dataset }, new Request("https://api.test/health"));
    expect(response.status).toBe(200);
    expect(dataset.points).toEqual([{ indexes: ["request"], blobs: ["request", "/health", "GET", "200"], doubles: [1, expect.any(Number)] }]);
  });
});

describe("queue batch log lines", () => {
  it("logs the queue, its messages and what was acked or retried", async () => {
    // A queue no consumer handles: every message is retried.
    const batch = createMessageBatch("apiv2-unknown-default", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: {} },
      { id: "m2", timestamp: new Date(), attempts: 1, body: {} },
    ]);
    const dataset = recordingDataset();
    const exec = createExecutionContext();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const lines = await loggedLines("queue_batch", () => handleQueue(batch, { ...env, ...LOGGING, METRICS: dataset } as Env, exec));
    expect((await getQueueResult(batch, exec)).retryBatch.retry).toBe(true);
    expect(lines).toEqual([{ kind: "queue_batch", queue: "apiv2-unknown-default", traceId: expect.stringMatching(/^[0-9a-f]{32}$/), messages: 2, acked: 0, retried: 2, durationMs: expect.any(Number), d1Statements: 0, errorClass: null }]);
    expect(dataset.points[0]).toMatchObject({ blobs: ["queue_batch", "apiv2-unknown-default"], doubles: [2, 0, 2, expect.any(Number)] });
  });
});

describe("trace context", () => {
  it("outbound webhook and provider calls carry the current trace in a traceparent of their own span", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const parent = `00-${traceId}-b7ad6b7169203331-01`;
    const bucket = receiver.bucket("trace");
    await receiver.script(bucket, [{ status: 200 }, { status: 500 }]);
    const dataset = recordingDataset();
    await observing({ traceparent: parent }, async () => {
      await postBatch({ ...env, METRICS: dataset }, { url: receiver.hookUrl(bucket), username: null, password: null, signingSecret: null }, { id: "b1", body: "a=1" }, { now: Date.now() });
      await callProvider("stand-in", receiver.hookUrl(bucket), { method: "POST", body: "x" });
    });
    const requests = await receiver.requests(bucket);
    expect(requests).toHaveLength(2);
    for (const request of requests) {
      expect(request.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      expect(request.headers.traceparent).not.toBe(parent);
    }
    expect(dataset.points).toEqual([{ indexes: ["webhook"], blobs: ["webhook", "delivered"], doubles: [1] }]);
  });

  it("SES calls carry it too, inside their signature's request", async () => {
    const traceId = "5ba1bd8cbd6b4ac99be1e2ffcff1b1d4";
    const bucket = receiver.bucket("ses-trace");
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "application/json" }, body: '{"MessageId":"ses-1"}' }]);
    const ses = new SesProvider({ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "eu-west-1", endpoint: receiver.hookUrl(bucket) });
    const mail = { id: "m.1", panelId: "p", campaignId: null, from: "shop@example.com", to: "ada@example.com", subject: "Hi", raw: "Subject: Hi\r\n\r\nbody\r\n" };
    expect(await observing({ traceparent: `00-${traceId}-b7ad6b7169203331-01` }, () => ses.send([mail]))).toEqual([{ ok: true, providerMessageId: "ses-1" }]);
    const [request] = await receiver.requests(bucket);
    expect(request!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(request!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it("calls outside any request or batch carry none", async () => {
    const bucket = receiver.bucket("untraced");
    await receiver.script(bucket, [{ status: 200 }]);
    await callProvider("stand-in", receiver.hookUrl(bucket), { method: "POST", body: "x" });
    expect((await receiver.requests(bucket))[0]!.headers.traceparent).toBeUndefined();
  });
});
