// npm run bench:segments: saved segments at scale (issue 18), in one runtime and one run.
//
// Data: CONTACTS contacts (default 1,000,000) with CITY and AGE, one of 20 lists each,
// EVENTS_PER_CONTACT x CONTACTS events (default 5) across 10 activities over the last 60 days,
// written straight into D1 (the figures are about reading them, not about ingest).
//
// 1. Count of a three-condition segment (CITY is Pune + in a list + performed act2 at least twice
//    in 30 days; act2, because the seeding's arithmetic gives act3 none of that list's Pune contacts) through POST /segments/count, beside one hand-written SQL query answering the
//    same question (/__bench/segment-count), alternating, ROUNDS each. Goal: >= 70% of the
//    query's speed, and under 2 s.
// 2. Keeping membership current: events/s through the pipeline (posted to /v1/activity/upload,
//    1,000 a call, until every batch is done) with the panel's 20 saved segments reading events
//    and with none (the same segments switched off), alternating, PIPE_ROUNDS each. Goal: >= 70%
//    of the throughput without segments.
// 3. Publish to a segment of every contact: time of the publish task (recipients fixed in D1 and
//    every send nudge queued). The SENDS consumer is left out, so nothing is sent.
import { adminCall, BENCH_SHARD, createBenchPanel, startRuntime } from "./lib.ts";

const contacts = Number(process.env.CONTACTS ?? 1_000_000);
const eventsPerContact = Number(process.env.EVENTS_PER_CONTACT ?? 5);
const rounds = Number(process.env.ROUNDS ?? 5);
const pipeRounds = Number(process.env.PIPE_ROUNDS ?? 3);
const pipeEvents = Number(process.env.PIPE_EVENTS ?? 10_000);
const DAY = 86_400_000;
const CITIES = ["Pune", "Mumbai", "Delhi", "Goa", "Chennai", "Kolkata", "Jaipur", "Surat", "Indore", "Bhopal"];
const CHUNK = 50_000;
// Events per seeding statement: 100,000 at once ended the local runtime (its D1 proxy closed the socket).
const EVENT_CHUNK = Number(process.env.EVENT_CHUNK ?? 20_000);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);

const runtime = await startRuntime({ withoutConsumersOf: ["apiv2-sends-default"] });
const { origin } = runtime;
const db = await runtime.miniflare.getD1Database(BENCH_SHARD);
try {
  const panel = await createBenchPanel(origin);
  const p = `/panels/${panel.id}`;
  for (let i = 0; i < 10; i++) await adminCall(origin, "POST", `${p}/activities`, { name: `act${i}`, params: { price: "float" } });
  const lists: number[] = [];
  for (let i = 0; i < 20; i++) lists.push((await adminCall(origin, "POST", `${p}/lists`, { name: `List ${i}` })).id);

  const now = Date.now();
  let t0 = performance.now();
  for (let from = 1; from <= contacts; from += CHUNK) {
    const to = Math.min(contacts, from + CHUNK - 1);
    await db
      .prepare(
        `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
         WITH RECURSIVE seq(n) AS (SELECT CAST(?2 AS INTEGER) UNION ALL SELECT n + 1 FROM seq WHERE n < ?3)
         SELECT ?1, 'c' || n || '@example.com',
           json_object('EMAIL', 'c' || n || '@example.com', 'CITY', json_extract(?4, '$[' || (n % 10) || ']'), 'AGE', 18 + n % 60), 0, 0 FROM seq`,
      )
      .bind(panel.id, from, to, JSON.stringify(CITIES))
      .run();
  }
  const { first } = (await db.prepare("SELECT MIN(id) AS first FROM contacts WHERE panel_id = ?").bind(panel.id).first<{ first: number }>())!;
  await db
    .prepare(
      `INSERT INTO list_members (list_id, contact_id, panel_id, added_at)
       SELECT json_extract(?2, '$[' || ((id / 10) % 20) || ']'), id, ?1, 0 FROM contacts WHERE panel_id = ?1`,
    )
    .bind(panel.id, JSON.stringify(lists))
    .run();
  console.log(`seeded ${contacts} contacts and their list memberships in ${seconds(t0)}s`);
  t0 = performance.now();
  const events = contacts * eventsPerContact;
  for (let from = 1; from <= events; from += EVENT_CHUNK) {
    const to = Math.min(events, from + EVENT_CHUNK - 1);
    await db
      .prepare(
        `INSERT INTO events (panel_id, guid, channel, name, activity_id, contact_id, params, occurred_at, received_at)
         WITH RECURSIVE seq(k) AS (SELECT CAST(?2 AS INTEGER) UNION ALL SELECT k + 1 FROM seq WHERE k < ?3)
         SELECT ?1, 'seed-' || k, 'custom_activity', 'act' || (k % 10), 1 + k % 10, CAST(?4 AS INTEGER) + (k * 7919 + k / 7) % CAST(?5 AS INTEGER),
           json_object('price', (k % 500) * 1.0), CAST(?6 AS INTEGER) - (k * 104729) % CAST(?7 AS INTEGER), CAST(?6 AS INTEGER) FROM seq`,
      )
      .bind(panel.id, from, to, first, contacts, now, 60 * DAY)
      .run();
  }
  console.log(`seeded ${events} events in ${seconds(t0)}s`);

  // 1. Count.
  const match = {
    all: [
      { attribute: "CITY", op: "eq", value: "Pune" },
      { list: lists[3], op: "in" },
      { activity: "act2", op: "performed", min: 2, within_days: 30 },
    ],
  };
  const service: number[] = [];
  const baseline: number[] = [];
  let counts: [number, number] = [0, 0];
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    const b = (await (await fetch(`${origin}/__bench/segment-count?panel=${panel.id}&list=${lists[3]}&activity=act2`)).json()) as { count: number };
    baseline.push(performance.now() - t);
    t = performance.now();
    const s = await adminCall(origin, "POST", `${p}/segments/count`, { match });
    service.push(performance.now() - t);
    counts = [s.count, b.count];
  }
  if (counts[0] !== counts[1]) throw new Error(`the counts differ: service ${counts[0]}, hand-written ${counts[1]}`);
  console.log(`\n1. Count of a three-condition segment over ${contacts} contacts and ${events} events (${counts[0]} match), median of ${rounds}`);
  console.log(`   hand-written SQL: ${median(baseline).toFixed(0)} ms   POST /segments/count: ${median(service).toFixed(0)} ms   speed vs hand-written: ${((median(baseline) / median(service)) * 100).toFixed(0)}%`);

  // 2. Pipeline throughput with and without 20 saved segments that read events.
  for (let i = 0; i < 20; i++) {
    await adminCall(origin, "POST", `${p}/segments`, {
      name: `Segment ${i}`,
      match: {
        all: [
          { attribute: "CITY", op: "eq", value: CITIES[i % 10] },
          { list: lists[i], op: "in" },
          { activity: `act${i % 10}`, op: "performed", min: 1 + (i % 3), within_days: 30 },
        ],
      },
    });
  }
  // The builds after each create run for 20 s; let them end, then leave membership to the pipeline alone.
  await new Promise((resolve) => setTimeout(resolve, 25_000));
  await db.prepare("UPDATE segments SET build_cursor = NULL, rebuild_due = 0 WHERE panel_id = ?").bind(panel.id).run();
  const pending = async () => (await db.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE state = 'pending'").first<{ n: number }>())!.n;
  let sequence = 0;
  const throughput = async (): Promise<number> => {
    const start = performance.now();
    const calls = pipeEvents / 1000;
    for (let c = 0; c < calls; c += 2) {
      await Promise.all(
        [c, c + 1].filter((x) => x < calls).map(() =>
          fetch(`${origin}/v1/activity/upload`, {
            method: "POST",
            headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
            body: JSON.stringify(
              Array.from({ length: 1000 }, () => {
                const n = 1 + ((sequence++ * 7919) % contacts);
                return { activity_name: `act${n % 10}`, identity: `c${n}@example.com`, activity_params: { price: 10 } };
              }),
            ),
          }).then(async (r) => {
            if (!r.ok) throw new Error(`upload: ${r.status} ${await r.text()}`);
          }),
        ),
      );
    }
    while ((await pending()) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const failed = await db.prepare("SELECT last_error FROM event_batches WHERE last_error IS NOT NULL LIMIT 1").first<{ last_error: string }>();
      if (failed) throw new Error(`the pipeline failed: ${failed.last_error}`);
    }
    return pipeEvents / ((performance.now() - start) / 1000);
  };
  const without: number[] = [];
  const withSegments: number[] = [];
  await throughput(); // warm-up
  for (let r = 0; r < pipeRounds; r++) {
    // Isolates keep a panel's segments for 10 s (services/segments/panel-segments.ts): each
    // switch is waited out, so no round runs with the other setting.
    await db.prepare("UPDATE segments SET on_events = 0 WHERE panel_id = ?").bind(panel.id).run();
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    without.push(await throughput());
    await db.prepare("UPDATE segments SET on_events = 1 WHERE panel_id = ?").bind(panel.id).run();
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    withSegments.push(await throughput());
  }
  const members = (await db.prepare("SELECT COUNT(*) AS n FROM segment_members WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n;
  console.log(`\n2. Pipeline, ${pipeEvents} events a round through /v1/activity/upload, median of ${pipeRounds} (${members} segment memberships at the end)`);
  console.log(
    `   without segments: ${median(without).toFixed(0)} events/s   with 20 saved segments: ${median(withSegments).toFixed(0)} events/s   ratio: ${((median(withSegments) / median(without)) * 100).toFixed(0)}%`,
  );

  // 3. Publish to a segment of every contact.
  const everyone = await adminCall(origin, "POST", `${p}/segments`, { name: "Everyone", match: { all: [{ attribute: "AGE", op: "gte", value: 0 }] } });
  await new Promise((resolve) => setTimeout(resolve, 25_000));
  const campaign = await adminCall(origin, "POST", `${p}/campaigns`, {
    name: "Everyone",
    subject: "Hello",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    html: "<p>Hello {{CITY}}</p>",
    audience: { segments: [everyone.id] },
  });
  t0 = performance.now();
  const published = (await (await fetch(`${origin}/__bench/publish-due`)).json()) as { ms: number };
  const wall = performance.now() - t0;
  const recipients = (await db.prepare("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = ?").bind(campaign.id).first<{ n: number }>())!.n;
  console.log(`\n3. Publish to a segment of ${everyone.count} contacts: ${recipients} recipients fixed and ${Math.ceil(recipients / 100)} send nudges queued in ${(published.ms / 1000).toFixed(1)} s (${(wall / 1000).toFixed(1)} s wall)`);
} finally {
  await runtime.stop();
}
