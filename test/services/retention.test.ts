import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { gunzipText } from "../../src/lib/gzip";
import { archiveOldEvents } from "../../src/services/segments/archived-events";
import { recordEvents } from "../../src/services/pipeline/record";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";
import { defineActivity, eventually, pipelineSettled, postUpload } from "../support/activity";
import { importCsv } from "../support/imports";
import { housekeeping } from "../../src/services/retention/housekeeping";
import { countReplayEvents, selectionOf } from "../../src/services/replays/events";

const DAY = 86_400_000;

/** Events of ada@example.com: `old` of them 40 and 41 days back, `recent` of them in the last days. */
async function seedHistory(panel: TestPanel, old: number, recent: number): Promise<void> {
  const now = Date.now();
  // Old events at midday UTC, so that each old day stays one day whatever the time of the run.
  const midday = Math.floor(now / DAY) * DAY + DAY / 2;
  const events = [
    ...Array.from({ length: old }, (_, i) => ({ occurredAt: midday - (40 + (i % 2)) * DAY - i * 1000, n: i })),
    ...Array.from({ length: recent }, (_, i) => ({ occurredAt: now - (i % 3) * DAY - i * 1000, n: old + i })),
  ];
  await recordEvents(env, { id: panel.id }, events.map((e) => ({ channel: "custom_activity" as const, name: "view", identity: "ada@example.com", params: { n: e.n }, occurredAt: e.occurredAt })));
  await pipelineSettled(panel.id);
  // As if each had been recorded when it happened (a late event stays its full window).
  await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();
}

async function archivedLines(panelId: string): Promise<Array<{ id: number; params: string }>> {
  const listed = await env.FILES.list({ prefix: `events/${panelId}/` });
  const lines = [];
  for (const object of listed.objects) {
    expect(object.key).toMatch(new RegExp(`^events/${panelId}/\\d{4}/\\d{2}/\\d{2}/part-\\d+-s\\d+\\.ndjson\\.gz$`));
    const text = await gunzipText(await (await env.FILES.get(object.key))!.arrayBuffer());
    lines.push(...text.split("\n").filter(Boolean).map((line) => JSON.parse(line)));
  }
  return lines;
}

async function hotCount(panelId: string, before?: number): Promise<number> {
  return (await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND occurred_at < ?").bind(panelId, before ?? Number.MAX_SAFE_INTEGER).first<{ n: number }>())!.n;
}

async function wholeHistory(panel: TestPanel, limit: number): Promise<number[]> {
  const seen: number[] = [];
  let cursor = "";
  for (let page = 0; page < 100; page++) {
    const answer = await admin("GET", `/panels/${panel.id}/contacts/ada%40example.com/events?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(answer.status).toBe(200);
    seen.push(...answer.body.events.map((e: { params: { n: number } }) => e.params.n));
    if (!answer.body.next_cursor) break;
    cursor = encodeURIComponent(answer.body.next_cursor);
  }
  return seen;
}

describe("event retention", () => {
  it("moves events older than the panel's window to R2 per day, and the history reads them transparently", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).body.event_retention_days).toBe(30);
    await seedHistory(panel, 6, 4);
    const before = await wholeHistory(panel, 3);

    await archiveOldEvents.run(env, Date.now());
    expect(await hotCount(panel.id, Date.now() - 30 * DAY)).toBe(0);
    expect(await hotCount(panel.id)).toBe(4);
    const lines = await archivedLines(panel.id);
    expect(lines.map((l) => JSON.parse(l.params).n).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    // Two days: two objects.
    expect((await env.FILES.list({ prefix: `events/${panel.id}/` })).objects).toHaveLength(2);

    // Every page size gives the same newest-first history as before the move.
    expect(await wholeHistory(panel, 3)).toEqual(before);
    expect(await wholeHistory(panel, 1)).toEqual(before);
    expect(await wholeHistory(panel, 50)).toEqual(before);
    expect(before).toHaveLength(10);

    // A second run finds nothing to move and changes nothing.
    await archiveOldEvents.run(env, Date.now());
    expect(await archivedLines(panel.id)).toHaveLength(6);
  });

  it("reads, replays and erases the parts written before their key named the shard", async () => {
    const panel = await createPanel();
    await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 });
    await seedHistory(panel, 6, 4);
    const before = await wholeHistory(panel, 3);
    await archiveOldEvents.run(env, Date.now());
    // As written before shard migration 0116: the key, the part's row and the owners' pairs without the shard.
    for (const object of (await env.FILES.list({ prefix: `events/${panel.id}/` })).objects) {
      const body = await (await env.FILES.get(object.key))!.arrayBuffer();
      await env.FILES.put(object.key.replace(/-s\d+\.ndjson\.gz$/, ".ndjson.gz"), body, { customMetadata: object.customMetadata });
      await env.FILES.delete(object.key);
    }
    await panelData.prepare("UPDATE event_archive_parts SET shard = NULL WHERE panel_id = ?").bind(panel.id).run();
    await panelData
      .prepare("UPDATE event_archive_owner_blocks SET parts = (SELECT json_group_array(json_array(e.value ->> 0, e.value ->> 1)) FROM json_each(parts) e) WHERE panel_id = ?")
      .bind(panel.id)
      .run();
    const keys = (await env.FILES.list({ prefix: `events/${panel.id}/` })).objects.map((o) => o.key);
    expect(keys.map((k) => /\/part-\d+\.ndjson\.gz$/.test(k))).toEqual([true, true]);

    expect(await wholeHistory(panel, 3)).toEqual(before);
    const week = { from: Date.now() - 50 * DAY, to: Date.now() + DAY };
    expect(await countReplayEvents(env.FILES, [{ db: panelData, buckets: null }], panel.id, selectionOf({ channels: null, journeyId: null }), week.from, week.to)).toBe(10);

    // An erasure rewrites them under their old keys.
    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/ada%40example.com`);
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body.state).toBe("done");
    expect((await env.FILES.list({ prefix: `events/${panel.id}/` })).objects.map((o) => o.key)).toEqual(keys);
    for (const key of keys) expect(await gunzipText(await (await env.FILES.get(key))!.arrayBuffer())).toBe("\n");
  });

  it("loses and doubles nothing when the write's read-back fails or the deletes stop part-way", async () => {
    const panel = await createPanel();
    await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 });
    await seedHistory(panel, 8, 0);

    // The object is written but reading it back fails: the rows stay, the part stays unverified.
    const unreadable = { ...env, FILES: new Proxy(env.FILES, { get: (t, n) => (n === "get" ? async () => null : Reflect.get(t, n).bind(t)) }) };
    await expect(archiveOldEvents.run(unreadable, Date.now())).rejects.toThrow(/did not read back/);
    expect(await hotCount(panel.id)).toBe(8);

    // The next run rewrites the same part, verifies it, deletes the rows.
    await archiveOldEvents.run(env, Date.now());
    expect(await hotCount(panel.id)).toBe(0);
    expect((await archivedLines(panel.id)).length).toBe(8);

    // A crash after verification and the first chunk of deletes: the next run deletes the rest only.
    const other = await createPanel();
    await admin("PATCH", `/panels/${other.id}`, { event_retention_days: 30 });
    await seedHistory(other, 4, 0);
    const ids = (await panelData.prepare("SELECT id FROM events WHERE panel_id = ? ORDER BY id").bind(other.id).all<{ id: number }>()).results.map((r) => r.id);
    await archiveOldEvents.run(unreadable, Date.now()).catch(() => undefined);
    const parts = await panelData.prepare("UPDATE event_archive_parts SET state = 'verified' WHERE panel_id = ? RETURNING part").bind(other.id).all<{ part: number }>();
    expect(parts.results.length).toBeGreaterThan(0);
    await panelData.prepare("DELETE FROM events WHERE id = ?").bind(parts.results[0]!.part).run();
    await archiveOldEvents.run(env, Date.now());
    expect(await hotCount(other.id)).toBe(0);
    expect((await archivedLines(other.id)).map((l) => l.id).sort((a, b) => a - b)).toEqual(ids);
  });

  it("keeps a behaviour segment's stored members equal to its count when its events are archived, negated segments included", async () => {
    const panel = await createPanel();
    await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 });
    const api = apiFor(panel);
    for (const email of ["ada@example.com", "bob@example.com", "cy@example.com"]) expect((await api("contact", "add", { data: { EMAIL: email } })).status).toBe(200);
    await defineActivity(panel, "purchase", {});
    const at = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY).toISOString().slice(0, 19);
    // ada bought recently and long ago, bob only long ago (past the 30-day window), cy never.
    const uploaded = await postUpload(panel.apiKey, [
      { activity_name: "purchase", identity: "ada@example.com", timestamp: at(1) },
      { activity_name: "purchase", identity: "ada@example.com", timestamp: at(60) },
      { activity_name: "purchase", identity: "bob@example.com", timestamp: at(45) },
    ]);
    expect(uploaded.body).toMatchObject({ recorded: 3 });
    await pipelineSettled(panel.id);
    await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();

    const did = { activity: "purchase", op: "performed" };
    const twice = { activity: "purchase", op: "performed", min: 2 };
    const didNot = { not: { activity: "purchase", op: "performed" } };
    const saved = new Map<unknown, string>();
    for (const match of [did, twice, didNot]) {
      const created = await admin("POST", `/panels/${panel.id}/segments`, { name: JSON.stringify(match), match });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      saved.set(match, created.body.id);
    }
    /** The live count, and the stored members as their addresses: they must agree. */
    const answer = async (match: unknown) => {
      const counted = (await admin("POST", `/panels/${panel.id}/segments/count`, { match })).body.count as number;
      const members = await eventually(async () => {
        const read = await admin("GET", `/panels/${panel.id}/segments/${saved.get(match)}`);
        if (read.body.building) return undefined;
        const page = await admin("GET", `/panels/${panel.id}/segments/${saved.get(match)}/contacts?limit=100`);
        return (page.body.contacts as Array<{ EMAIL: string }>).map((c) => c.EMAIL.split("@")[0]!).sort();
      });
      expect(members).toHaveLength(counted);
      return members;
    };
    expect(await answer(did)).toEqual(["ada", "bob"]);
    expect(await answer(twice)).toEqual(["ada"]);
    expect(await answer(didNot)).toEqual(["cy"]);

    // Archiving is driven part by part; the second part is left verified with its rows deleted,
    // as a crash would, and the next run re-checks its contacts from the object.
    const unreadable = { ...env, FILES: new Proxy(env.FILES, { get: (t, n) => (n === "get" ? async () => null : Reflect.get(t, n).bind(t)) }) };
    await archiveOldEvents.run(unreadable, Date.now()).catch(() => undefined);
    const parts = await panelData.prepare("UPDATE event_archive_parts SET state = 'verified' WHERE panel_id = ? RETURNING part, ids").bind(panel.id).all<{ part: number; ids: string }>();
    expect(parts.results.length).toBe(1);
    for (const id of JSON.parse(parts.results[0]!.ids) as number[]) await panelData.prepare("DELETE FROM events WHERE id = ?").bind(id).run();
    await archiveOldEvents.run(env, Date.now());
    expect(await hotCount(panel.id)).toBe(1);

    // Behaviour conditions count the events the shard keeps: bob's only purchase is archived.
    expect(await answer(did)).toEqual(["ada"]);
    expect(await answer(twice)).toEqual([]);
    expect(await answer(didNot)).toEqual(["bob", "cy"]);
    // A later run changes nothing.
    await archiveOldEvents.run(env, Date.now());
    expect(await answer(didNot)).toEqual(["bob", "cy"]);
  });

  it("refuses a retention outside 1 to 3650 days, naming the field, and changes nothing", async () => {
    const panel = await createPanel();
    for (const bad of [0, 3651, 1.5, "90"]) {
      const answer = await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: bad });
      expect(answer.status).toBe(400);
      expect(answer.body.errors[0].field).toBe("event_retention_days");
    }
    expect((await admin("GET", `/panels/${panel.id}`)).body.event_retention_days).toBe(90);
  });

  it("housekeeping removes import jobs and outbox messages past their 30 days, objects included, and keeps a job a campaign waits for", async () => {
    const panel = await createPanel();
    const old = await importCsv(panel, "EMAIL\nada@example.com\nnot-an-email\n");
    const waited = await importCsv(panel, "EMAIL\nbob@example.com\n");
    const recent = await importCsv(panel, "EMAIL\ncy@example.com\n");
    const report = (await panelData.prepare("SELECT error_report_key AS k FROM import_jobs WHERE id = ?").bind(old.jobid).first<{ k: string }>())!.k;
    expect(await env.FILES.head(report)).not.toBeNull();
    const longAgo = Date.now() - 31 * DAY;
    for (const job of [old, waited]) await panelData.prepare("UPDATE import_jobs SET finished_at = ? WHERE id = ?").bind(longAgo, job.jobid).run();
    await panelData
      .prepare(
        `INSERT INTO campaigns (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key, status, request_id, import_job_id, created_at, updated_at)
         VALUES ('cmp_waiting', ?, ?, 'Later', 'Hi', 'Shop', 'shop@example.com', '[]', '', ?, 'x', 'scheduled', 'r', ?, 0, 0)`,
      )
      .bind(panel.id, (await apiFor(panel)("lists", "add", { listname: "Later" })).body.listid, Date.now() + 40 * DAY, waited.jobid)
      .run();
    await env.FILES.put(`outbox/${panel.id}/old.eml`, "x");
    await env.FILES.put(`outbox/${panel.id}/new.eml`, "x");
    await panelData
      .prepare("INSERT INTO outbox (id, panel_id, channel, recipient, sender, subject, campaign_id, r2_key, size, created_at) VALUES ('old', ?1, 'email', 'a', 'b', 's', NULL, ?2, 1, ?3), ('new', ?1, 'email', 'a', 'b', 's', NULL, ?4, 1, ?5)")
      .bind(panel.id, `outbox/${panel.id}/old.eml`, longAgo, `outbox/${panel.id}/new.eml`, Date.now())
      .run();

    await housekeeping.run(env, Date.now());
    const jobs = (await panelData.prepare("SELECT id FROM import_jobs WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ id: string }>()).results.map((r) => r.id);
    expect(jobs.sort()).toEqual([waited.jobid, recent.jobid].sort());
    expect(await env.FILES.head(report)).toBeNull();
    expect((await panelData.prepare("SELECT id FROM outbox WHERE panel_id = ?").bind(panel.id).all<{ id: string }>()).results).toEqual([{ id: "new" }]);
    expect(await env.FILES.head(`outbox/${panel.id}/old.eml`)).toBeNull();
    expect(await env.FILES.head(`outbox/${panel.id}/new.eml`)).not.toBeNull();
  });
});
