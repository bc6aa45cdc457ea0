// npm run bench:journeys: CONTACTS contacts (default 10,000) each post one activity into a
// running journey whose only step is a webhook delivering to a Node receiver on loopback in
// this process. Measured: activities per second from the first post to the last webhook
// event received, and the per-activity delay from its post to its webhook delivery (p50,
// p99). Beside it, from the same runtime and run: the bare one-insert D1 baseline and the
// single-activity post alone (the activity benchmark: answer once stored).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { adminCall, createBenchPanel, load, printComparison, report, share, startRuntime, type LoadResult } from "./lib.ts";

const contacts = Number(process.env.CONTACTS ?? 10_000);
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const seconds = Number(process.env.SECONDS ?? 10);

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
}

// The customer's endpoint: records when each contact's event arrives.
const postedAt = new Map<string, number>();
const deliveredAt = new Map<string, number>();
let batches = 0;
let onAllDelivered: () => void = () => {};
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const now = performance.now();
    const data = new URLSearchParams(Buffer.concat(chunks).toString("utf8")).get("data");
    if (data) {
      batches++;
      for (const events of Object.values(JSON.parse(data) as Record<string, Array<{ event_params?: { identity?: string } }>>)) {
        for (const event of events) {
          const who = event.event_params?.identity;
          if (who && postedAt.has(who) && !deliveredAt.has(who)) deliveredAt.set(who, now);
        }
      }
      if (deliveredAt.size >= contacts) onAllDelivered();
    }
    response.writeHead(200, { "content-type": "text/plain" }).end("ok");
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const runtime = await startRuntime();
try {
  const { origin } = runtime;
  const panel = await createBenchPanel(origin);
  const activity = await adminCall(origin, "POST", `/panels/${panel.id}/activities`, { name: "add_to_cart", params: { price: "float" } });
  const other = await adminCall(origin, "POST", `/panels/${panel.id}/activities`, { name: "page_view", params: { price: "float" } });
  const webhook = await adminCall(origin, "POST", `/panels/${panel.id}/webhooks`, { label: "bench", url: receiverUrl });
  const tested = await adminCall(origin, "POST", `/panels/${panel.id}/webhooks/${webhook.id}/test`);
  if (tested.state !== "operational") throw new Error(`webhook test failed: ${JSON.stringify(tested)}`);
  const journey = await adminCall(origin, "POST", `/panels/${panel.id}/journeys`, {
    name: "Bench journey",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [{ id: "hook", type: "webhook", webhook: webhook.id, attributes: ["EMAIL"], params: { Action: "bench" } }],
  });
  await adminCall(origin, "POST", `/panels/${panel.id}/journeys/${journey.id}/status`, { status: "running" });

  const post = (activityid: string, identity: string) =>
    fetch(`${origin}/v1/activity/singleactivity/${encodeURIComponent(panel.clientId)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ activityid, identity, activity_params: { "f^price": 9.5 } }),
    });

  // Warm-up, then the two reference figures: bare insert, and a post of an activity no journey listens to.
  await load((i) => fetch(`${origin}/__bench/insert?key=warm${i}`), { concurrency, seconds: 2 });
  await load((i) => post(other.activityid, `warm${i}@example.com`), { concurrency, seconds: 2 });
  const baseline = await load((i) => fetch(`${origin}/__bench/insert?key=k${i}`), { concurrency, seconds });
  const activityPosts = await load((i) => post(other.activityid, `view${i}@example.com`), { concurrency, seconds });

  // The journey run: every contact posts once; the clock stops at the last webhook event received.
  const allDelivered = new Promise<void>((resolve) => (onAllDelivered = resolve));
  const start = performance.now();
  let next = 0;
  let failures = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < contacts) {
        const identity = `user${next++}@example.com`;
        postedAt.set(identity, performance.now());
        const response = await post(activity.activityid, identity);
        await response.arrayBuffer();
        if (!response.ok) failures++;
      }
    }),
  );
  const postsDone = performance.now();
  const timeout = Number(process.env.TIMEOUT_S ?? 600) * 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([allDelivered, new Promise((resolve) => (timer = setTimeout(resolve, timeout)))]);
  clearTimeout(timer);
  const end = performance.now();
  const delays = [...deliveredAt].map(([who, at]) => at - postedAt.get(who)!).sort((a, b) => a - b);
  const journeyRun: LoadResult = {
    requests: deliveredAt.size,
    failures: failures + (contacts - deliveredAt.size),
    seconds: (end - start) / 1000,
    perSecond: deliveredAt.size / ((end - start) / 1000),
    p50: percentile(delays, 50),
    p99: percentile(delays, 99),
  };

  printComparison(`journeys: ${contacts} contacts, ${concurrency} concurrent clients (reference loads ${seconds}s each)`, [
    ["baseline: one bare D1 insert", baseline],
    ["activity post (no journey)", activityPosts],
    ["activity -> journey -> webhook", journeyRun],
  ], baseline);
  console.log(
    `\njourney run: posts took ${((postsDone - start) / 1000).toFixed(1)}s (${(contacts / ((postsDone - start) / 1000)).toFixed(0)} posts/s); ` +
      `${deliveredAt.size}/${contacts} webhook events received in ${batches} batches; ` +
      `post-to-delivery delay p50 ${journeyRun.p50.toFixed(0)} ms, p99 ${journeyRun.p99.toFixed(0)} ms, max ${(delays.at(-1) ?? 0).toFixed(0)} ms`,
  );
  report("journeys", [
    { figure: "activity post, no journey, req/s", service: activityPosts.perSecond.toFixed(0), baseline: baseline.perSecond.toFixed(0), ratio: share(activityPosts.perSecond, baseline.perSecond), goal: "", met: null },
    { figure: `activity -> journey -> webhook, ${contacts} contacts, per s`, service: journeyRun.perSecond.toFixed(0), baseline: baseline.perSecond.toFixed(0), ratio: share(journeyRun.perSecond, baseline.perSecond), goal: "", met: null },
    { figure: "post-to-delivery p99 ms", service: journeyRun.p99.toFixed(0), baseline: "", ratio: "", goal: "", met: null },
  ]);
} finally {
  await runtime.stop();
  receiver.close();
}
