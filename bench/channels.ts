// npm run bench:channels: SMS sends/s through the SENDS path against a loopback stand-in of
// Twilio's Messages API, beside a bare loop of the same requests, in one runtime and one run.
//
//   service:  SMS (journey messages waiting for the provider, as a step records them), then
//             their nudges on SENDS; the queue consumer claims them, checks suppression, sends
//             each and records the sids. Timed from the nudges to the last message recorded as
//             sent (the stand-in's count watched, then D1's).
//   baseline: /__bench/sms-bare posts the same form to the same stand-in, CONCURRENCY at a time
//             (as many as the consumer calls at once), from inside the Worker: no D1, no claim.
// Goal (issue 19): the service >= 60% of the baseline's sends/s: the median of the rounds' ratios
// (ROUNDS alternate the two, so each ratio compares them under the same load).
import { createServer, type Server } from "node:http";
import { adminCall, createBenchPanel, median, report, share, spreadOf, startRuntime } from "./lib.ts";

const MESSAGES = Number(process.env.MESSAGES ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
// The consumer's provider calls at a time (SEND_CONCURRENCY in services/journeys/sms.ts).
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 25);
const DEADLINE_MS = Number(process.env.DEADLINE_SECONDS ?? 600) * 1000;

const ACCOUNT = `AC${"b".repeat(32)}`;
const TOKEN = "bench-auth-token";

/** Twilio's Messages API as far as sending goes: checks the Basic credentials, answers 201 with a fresh sid. */
function startTwilio(): Promise<{ server: Server; url: string; count: () => number }> {
  let count = 0;
  const expected = `Basic ${Buffer.from(`${ACCOUNT}:${TOKEN}`).toString("base64")}`;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      if (request.headers.authorization !== expected) {
        response.writeHead(401, { "content-type": "application/json" }).end('{"code":20003,"message":"Authenticate"}');
        return;
      }
      count++;
      response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ sid: `SM${count.toString(16).padStart(32, "0")}`, status: "queued" }));
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}`, count: () => count });
    });
  });
}

const twilio = await startTwilio();
const runtime = await startRuntime({ vars: { TWILIO_API_URL: twilio.url } });
try {
  const { origin } = runtime;
  const panel = await createBenchPanel(origin);
  await adminCall(origin, "PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: ACCOUNT, auth_token: TOKEN, from: "+15005550006" });
  const sent = async () => ((await (await fetch(`${origin}/__bench/sms-sent?panel=${panel.id}`)).json()) as { sent: number }).sent;

  let next = 0;
  const service: number[] = [];
  const baseline: number[] = [];
  // A short warm-up of both paths (isolate, connections, prepared statements).
  await fetch(`${origin}/__bench/sms-bare`, { method: "POST", body: JSON.stringify({ url: twilio.url, accountSid: ACCOUNT, token: TOKEN, from: 9_000_000, count: 50, concurrency: CONCURRENCY }) });
  for (let round = 0; round < ROUNDS; round++) {
    const from = next;
    next += MESSAGES;
    const before = await sent();
    const batch = JSON.stringify({ panel: panel.id, from, count: MESSAGES });
    await fetch(`${origin}/__bench/sms-seed`, { method: "POST", body: batch });
    const t0 = performance.now();
    await fetch(`${origin}/__bench/sms-nudge`, { method: "POST", body: batch });
    const deadline = t0 + DEADLINE_MS;
    // The stand-in's count is watched first: polling D1 meanwhile would compete with the consumer for it.
    const target = twilio.count() + MESSAGES;
    while (twilio.count() < target && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    while ((await sent()) < before + MESSAGES && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const done = (await sent()) - before;
    if (done < MESSAGES) throw new Error(`round ${round}: only ${done} of ${MESSAGES} SMS sent within the deadline`);
    service.push(MESSAGES / ((performance.now() - t0) / 1000));

    const b0 = performance.now();
    const answer = (await (
      await fetch(`${origin}/__bench/sms-bare`, { method: "POST", body: JSON.stringify({ url: twilio.url, accountSid: ACCOUNT, token: TOKEN, from: 5_000_000 + from, count: MESSAGES, concurrency: CONCURRENCY }) })
    ).json()) as { ok: number };
    if (answer.ok !== MESSAGES) throw new Error(`baseline: ${answer.ok} of ${MESSAGES} requests answered with a sid`);
    baseline.push(MESSAGES / ((performance.now() - b0) / 1000));
    console.log(`round ${round + 1}: SENDS path ${service.at(-1)!.toFixed(0)} SMS/s, bare loop ${baseline.at(-1)!.toFixed(0)} requests/s`);
  }
  // Each round's ratio compares the two paths under the same load; the figure is their median.
  const ratios = service.map((x, i) => x / baseline[i]!).sort((a, b) => a - b);
  const ratio = median(ratios);
  const s = median(service);
  const b = median(baseline);
  console.log(`\nSMS through SENDS (${MESSAGES} per round, ${ROUNDS} rounds): median ${s.toFixed(0)}/s; bare loop of the same requests (${CONCURRENCY} at a time): median ${b.toFixed(0)}/s`);
  console.log(`per-round ratios ${ratios.map((r) => `${(r * 100).toFixed(0)}%`).join(", ")}; median ${(ratio * 100).toFixed(0)}% (goal >= 60%)`);
  console.log(`stand-in received ${twilio.count()} requests`);
  report("channels", [{ figure: `SMS sends/s through SENDS (${MESSAGES} per round, median of ${ROUNDS})`, service: s.toFixed(0), baseline: b.toFixed(0), ratio: `${(ratio * 100).toFixed(0)}%`, spread: spreadOf(ratios, share), goal: ">= 60%", met: ratio >= 0.6 }]);
} finally {
  await runtime.stop();
  twilio.server.close();
}
