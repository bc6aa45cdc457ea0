// npm run bench:storage: bytes per stored row of each contact-keyed kind (contact, list
// membership, event live and archived, caller's event guid, campaign recipient row, journey
// instance), measured with SQLite's dbstat on a scratch shard (docs/operations.md: storage model).
//
// The shard is the benchmark runtime's SHARD_0 (bench/lib.ts: the shard migrations and their
// triggers applied as in production). Local D1 has no dbstat virtual table, so the shard's
// SQLite file, which Miniflare keeps under the state directory, is read with node:sqlite
// (read-only) between the steps. Each kind's bytes are the growth of every table and index
// (pages in use, 4 KiB each, so page slack is counted as D1 bills it) after ROWS rows of it,
// divided by ROWS.
//
// How the rows are written: lists through the admin API, the old events' archiving by the
// service's own retention code (archivePanel, as bench:retention runs it); contacts, memberships,
// events, guids, campaign recipients and journey instances by direct SQL with the columns and
// values the service writes (src/store/contacts.ts, event-batches.ts, campaigns.ts,
// journeys/instances.ts), with their triggers firing. Shapes: a contact keyed by email with
// four attributes; an event of the web SDK (uniqueid, identity, three params); a campaign
// recipient sent through a provider (its message id, 60 characters); a journey instance that
// entered on an event and completed, with its start point. Each event's visitor (uniqueid) is
// its contact's own, as the SDK keeps one per browser.
//
//   ROWS=100000 npm run bench:storage      (default 100,000 of each kind)
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { adminCall, BENCH_SHARD, createBenchPanel, startRuntime } from "./lib.ts";

const ROWS = Number(process.env.ROWS ?? 100_000);
// Rows per seeding statement: larger ones ended the local runtime's D1 proxy (bench/segments.ts).
const CHUNK = 20_000;
const DAY = 86_400_000;
// Events per contact: the archived residue (event_archive_owner_blocks) is a pair per contact and day, so it
// depends on how many events a contact has on a day; here one a day over ten days.
const EVENTS_PER_CONTACT = 10;

interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): { run(): Promise<unknown>; first<T>(): Promise<T | null> } };
}

const scratch = mkdtempSync(join(tmpdir(), "apiv2-storage-"));
const stateDir = join(scratch, "state");
const runtime = await startRuntime({ stateDir });

/** Every file under `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The SQLite file of the shard holding the panel's lists (the control database has legacy tables of the same names, empty). */
function shardFile(panelId: string): string {
  for (const file of filesUnder(stateDir).filter((f) => f.endsWith(".sqlite"))) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const hasLists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lists'").get();
      if (hasLists && db.prepare("SELECT 1 FROM lists WHERE panel_id = ?").get(panelId)) return file;
    } finally {
      db.close();
    }
  }
  throw new Error(`no SQLite file under ${stateDir} holds the panel's lists`);
}

type Sizes = Map<string, { table: string; bytes: number }>;

/** Bytes in use per table and index (dbstat: the pages of each b-tree, overflow pages included). */
function sizes(file: string): Sizes {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const rows = db
      .prepare(
        `SELECT d.name AS name, COALESCE(m.tbl_name, d.name) AS tbl, SUM(d.pgsize) AS bytes
         FROM dbstat d LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY d.name`,
      )
      .all() as unknown as { name: string; tbl: string; bytes: number }[];
    return new Map(rows.map((r) => [r.name, { table: r.tbl, bytes: r.bytes }]));
  } finally {
    db.close();
  }
}

interface Measured {
  kind: string;
  rows: number;
  perRow: number;
  parts: { name: string; perRow: number }[];
}

/** Growth from `before` to `after`, per row, with the b-trees that grew (or shrank) by at least half a byte a row. */
function growth(kind: string, rows: number, before: Sizes, after: Sizes): Measured {
  const names = new Set([...before.keys(), ...after.keys()]);
  const parts = [...names]
    .map((name) => ({ name, perRow: ((after.get(name)?.bytes ?? 0) - (before.get(name)?.bytes ?? 0)) / rows }))
    .filter((p) => Math.abs(p.perRow) >= 0.5 && p.name !== "sqlite_schema")
    .sort((a, b) => b.perRow - a.perRow);
  return { kind, rows, perRow: parts.reduce((sum, p) => sum + p.perRow, 0), parts };
}

async function chunked(total: number, run: (from: number, to: number) => Promise<unknown>): Promise<void> {
  for (let from = 1; from <= total; from += CHUNK) await run(from, Math.min(total, from + CHUNK - 1));
}

const results: Measured[] = [];
try {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const panel = await createBenchPanel(runtime.origin);
  const lists: number[] = [];
  for (let i = 0; i < 2; i++) lists.push((await adminCall(runtime.origin, "POST", `/panels/${panel.id}/lists`, { name: `List ${i}` })).id);
  const file = shardFile(panel.id);
  console.log(`shard file: ${file}`);
  const now = Date.now();
  const seq = "WITH RECURSIVE seq(n) AS (SELECT CAST(?2 AS INTEGER) UNION ALL SELECT n + 1 FROM seq WHERE n < ?3)";

  // Contacts, as store/contacts.ts upserts them: attrs a JSON object of the panel's attributes.
  let before = sizes(file);
  await chunked(ROWS, (from, to) =>
    db
      .prepare(
        `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
         ${seq}
         SELECT ?1, 'customer' || n || '@example.com',
           json_object('EMAIL', 'customer' || n || '@example.com', 'FIRSTNAME', 'Asha', 'CITY', 'Pune', 'MOBILE', '+9198' || printf('%08d', n), 'SIGNUP', '2025-0' || (1 + n % 9) || '-1' || (n % 10)),
           ?4 + n, ?4 + n FROM seq`,
      )
      .bind(panel.id, from, to, now)
      .run(),
  );
  let after = sizes(file);
  results.push(growth("contact (email key, 4 attributes)", ROWS, before, after));
  const first = (await db.prepare("SELECT MIN(id) AS id FROM contacts WHERE panel_id = ?1").bind(panel.id).first<{ id: number }>())!.id;

  // List memberships: each contact in both lists (the member-count triggers fire).
  before = after;
  for (const list of lists) {
    await chunked(ROWS, (from, to) =>
      db
        .prepare(`INSERT INTO list_members (list_id, contact_id, panel_id, added_at) ${seq} SELECT ?4, ?5 + n - 1, ?1, ?6 FROM seq`)
        .bind(panel.id, from, to, list, first, now)
        .run(),
    );
  }
  after = sizes(file);
  results.push(growth("list membership", ROWS * lists.length, before, after));

  // Events, as the pipeline records a web SDK event (record.ts: a uuidV7 guid; event-batches.ts):
  // 200 days old, so the retention step below archives them all.
  const contactsWithEvents = Math.max(1, Math.floor(ROWS / EVENTS_PER_CONTACT));
  const old = now - 200 * DAY;
  const beforeEvents = after;
  await chunked(ROWS, (from, to) =>
    db
      .prepare(
        `INSERT INTO events (panel_id, batch_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params, occurred_at, received_at)
         ${seq}
         SELECT ?1, 1 + n / 100, lower(printf('0190%04x-%04x-7%03x-8%03x-%012x', n % 65536, n / 65536, n % 4096, n % 4095, n * 2654435761 % 281474976710655)),
           'custom_activity', 'add_to_cart', 1, ?4 + n % ?5, 'visitor-' || printf('%016x', (n % ?5) * 2654435761), 'customer' || (n % ?5 + 1) || '@example.com', 'web',
           json_object('name', 'Steel kettle 1.5 l', 'prid', 'SKU-' || (n % 5000), 'price', 1299.5),
           ?6 + ((n / ?5) % 10) * 86400000 + n, ?6 + ((n / ?5) % 10) * 86400000 + n FROM seq`,
      )
      .bind(panel.id, from, to, first, contactsWithEvents, old)
      .run(),
  );
  after = sizes(file);
  results.push(growth("event, live (web SDK: uniqueid, identity, 3 params)", ROWS, beforeEvents, after));

  // Archiving them with the service's own code; what stays in the shard per archived event.
  const archived = (await (await fetch(`${runtime.origin}/__bench/archive-service?panel=${panel.id}`)).json()) as { moved: number };
  if (archived.moved !== ROWS) throw new Error(`archiving moved ${archived.moved} of ${ROWS} events`);
  after = sizes(file);
  results.push(growth(`event, archived (${EVENTS_PER_CONTACT} events a contact, one a day)`, ROWS, beforeEvents, after));

  // A caller's guid or Idempotency-Key, claimed as event-batches.ts claims it.
  before = after;
  await chunked(ROWS, (from, to) =>
    db
      .prepare(`INSERT INTO event_guids (panel_id, guid, batch_id, at) ${seq} SELECT ?1, 'order-' || n || '-' || hex(randomblob(6)), 1 + n / 100, ?4 FROM seq`)
      .bind(panel.id, from, to, now)
      .run(),
  );
  after = sizes(file);
  results.push(growth("event guid claimed by the caller", ROWS, before, after));

  // Campaign recipients: published queued (campaigns.ts), then sent through a provider
  // (finishClaims: address, provider message id, sent_at; the claim stays), a third opened,
  // a tenth clicked. The campaign row is bench/worker/seed-campaign.ts's.
  const campaign = "cmp_STORAGEBENCH0000";
  await fetch(`${runtime.origin}/__bench/seed-campaign?panel=${panel.id}&campaign=${campaign}&recipients=${ROWS}`);
  before = sizes(file);
  const range = "campaign_id = ?1 AND batch = ?2";
  for (let batch = 0; batch * 1000 < ROWS; batch++) {
    await db
      .prepare(
        `INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, address)
         SELECT ?1, id, panel_id, ?2, 'queued', pk_value FROM contacts WHERE panel_id = ?3 AND id >= ?4 AND id < ?5`,
      )
      .bind(campaign, batch, panel.id, first + batch * 1000, first + Math.min(ROWS, (batch + 1) * 1000))
      .run();
  }
  const sent = `UPDATE campaign_messages SET status = 'sent', claim = hex(randomblob(8)), claimed_at = ?3, attempted_at = ?3, sent_at = ?3,
    provider_msg_id = '0109019' || lower(hex(randomblob(16))) || '-' || lower(hex(randomblob(8))) || '-000000' WHERE ${range}`;
  for (let batch = 0; batch * 1000 < ROWS; batch++) {
    await db.prepare(sent).bind(campaign, batch, now).run();
    await db.prepare(`UPDATE campaign_messages SET opens = opens + 1, first_open_at = ?3 WHERE ${range} AND contact_id % 3 = 0`).bind(campaign, batch, now).run();
    await db.prepare(`UPDATE campaign_messages SET clicks = clicks + 1, first_click_at = ?3 WHERE ${range} AND contact_id % 10 = 0`).bind(campaign, batch, now).run();
  }
  after = sizes(file);
  results.push(growth("campaign recipient row (sent)", ROWS, before, after));

  // Journey instances as instances.ts enters them (instance and start point), each then
  // completed. The journey row is written here, not through the API (one row, not measured).
  const journey = "jrn_STORAGEBENCH0000";
  await db
    .prepare(
      `INSERT INTO journeys (id, panel_id, name, definition, trigger_type, trigger_key, status, created_at, updated_at)
       VALUES (?1, ?2, 'Storage bench', '{}', 'activity', 'add_to_cart', 'running', ?3, ?3)`,
    )
    .bind(journey, panel.id, now)
    .run();
  before = sizes(file);
  await chunked(ROWS, async (from, to) => {
    await db
      .prepare(
        `INSERT INTO journey_instances (id, panel_id, journey_id, contact_id, entry_key, status, entered_at, version)
         ${seq}
         SELECT 'jin_' || substr(upper(hex(randomblob(8))), 1, 16), ?1, ?4, ?5 + n - 1, 'event:' || (1099511627776 + n), 'active', ?6, 1 FROM seq`,
      )
      .bind(panel.id, from, to, journey, first, now)
      .run();
  });
  await db
    .prepare(
      `INSERT INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, event_id, outcome, created_at, resolved_at, leased_until)
       SELECT id, '', panel_id, journey_id, contact_id, 'start', 1099511627776 + contact_id, 'start', ?2, ?2, 0 FROM journey_instances WHERE journey_id = ?1`,
    )
    .bind(journey, now)
    .run();
  await db.prepare("UPDATE journey_instances SET status = 'completed', ended_at = ?2 WHERE journey_id = ?1").bind(journey, now).run();
  after = sizes(file);
  results.push(growth("journey instance (completed, with its start point)", ROWS, before, after));

  console.log(`\nbytes per row on a scratch shard (dbstat: pages in use, ${ROWS} rows of each kind)`);
  for (const r of results) {
    console.log(`${r.kind.padEnd(60)} ${r.perRow.toFixed(0).padStart(6)} B`);
    for (const p of r.parts) console.log(`    ${p.name.padEnd(56)} ${p.perRow.toFixed(0).padStart(6)} B`);
  }
} finally {
  await runtime.stop();
  rmSync(scratch, { recursive: true, force: true });
}
