// bench:channels: the SMS waiting for the SENDS queue are seeded here (the rows a journey step
// records, and their nudges), and the baseline is a bare loop of the same Twilio requests,
// with no claim, no suppression check and no outcome written.
import { enqueueSms } from "../../src/services/journeys/sms";

interface SeedBody {
  panel: string;
  from: number;
  count: number;
}

/** POST /__bench/sms-seed: `count` journey SMS waiting for the provider, as journey steps record them. */
export async function benchSmsSeed(request: Request, env: Env): Promise<Response> {
  const { panel, from, count } = (await request.json()) as SeedBody;
  const db = env.SHARD_0;
  const now = Date.now();
  const rows = Array.from({ length: count }, (_, i) => from + i);
  for (let i = 0; i < rows.length; i += 10) {
    const chunk = rows.slice(i, i + 10);
    await db
      .prepare(
        `INSERT INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, created_at)
         VALUES ${chunk.map(() => "(?, ?, 'jrn_bench', ?, 'sms', 'sms', ?, ?, ?, 'sending', ?)").join(", ")}`,
      )
      .bind(...chunk.flatMap((n) => [`jin_${n}.sms`, panel, `jin_${n}`, n, `+1415${String(n).padStart(7, "0")}`, JSON.stringify({ body: `Hi ${n}, your cart waits: https://links.example.com/s/abcdefghijkl`, to: `1415${String(n).padStart(7, "0")}` }), now]))
      .run();
  }
  return new Response("ok");
}

/** POST /__bench/sms-nudge: the nudges of those SMS on SENDS, as the steps send them once their batch is stored. */
export async function benchSmsNudge(request: Request, env: Env): Promise<Response> {
  const { panel, from, count } = (await request.json()) as SeedBody;
  await enqueueSms(
    env,
    panel,
    Array.from({ length: count }, (_, i) => `jin_${from + i}.sms`),
  );
  return new Response("ok");
}

/** GET /__bench/sms-sent?panel=: how many of the panel's SMS are sent. */
export async function benchSmsSent(request: Request, env: Env): Promise<Response> {
  const panel = new URL(request.url).searchParams.get("panel");
  const row = await env.SHARD_0.prepare("SELECT COUNT(*) AS n FROM journey_messages WHERE panel_id = ? AND status = 'sent'").bind(panel).first<{ n: number }>();
  return Response.json({ sent: row?.n ?? 0 });
}

interface BareBody {
  url: string;
  accountSid: string;
  token: string;
  from: number;
  count: number;
  concurrency: number;
}

/** POST /__bench/sms-bare: the same Messages API requests the provider makes, `concurrency` at a time. */
export async function baselineSmsBare(request: Request): Promise<Response> {
  const { url, accountSid, token, from, count, concurrency } = (await request.json()) as BareBody;
  const endpoint = `${url}/2010-04-01/Accounts/${accountSid}/Messages.json`;
  const authorization = `Basic ${btoa(`${accountSid}:${token}`)}`;
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const n = from + next++;
        const body = new URLSearchParams({
          To: `+1415${String(n).padStart(7, "0")}`,
          Body: `Hi ${n}, your cart waits: https://links.example.com/s/abcdefghijkl`,
          StatusCallback: "http://127.0.0.1/hooks/sms/twilio/pnl/token",
          From: "+15005550006",
        });
        const response = await fetch(endpoint, { method: "POST", headers: { authorization, "content-type": "application/x-www-form-urlencoded" }, body });
        const answer = (await response.json()) as { sid?: string };
        if (response.ok && answer.sid) ok++;
      }
    }),
  );
  return Response.json({ ok });
}
