import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { erasedIdentifier } from "../../src/domain/erasure";
import { eraseArchivedEvents } from "../../src/services/contacts/erase";
import { recordEvents } from "../../src/services/pipeline/record";
import { startSegmentExport } from "../../src/services/segments/export";
import { getPanel } from "../../src/store/panels";
import { archiveOldEvents, recheckArchived } from "../../src/services/segments/archived-events";
import { archivePanel } from "../../src/services/retention/archive";
import type { EventRow } from "../../src/store/events";
import type { ShardDb } from "../../src/store/shards";
import { isAddressSuppressed, suppressAddress } from "../../src/store/suppressions";
import { phoneSuppression, suppressPhone } from "../../src/store/sms";
import { pipelineSettled } from "../support/activity";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { broadcastData, fireCron, publish, scheduleIn, waitForCampaign, waitForImport } from "../support/broadcasts";
import { admin, apiFor, call, countRows, createPanel, panelData, receiver, TEST_SHARD, type TestPanel } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";
import { archivedRows, placesNaming, seedEvents } from "../support/erasure";

const ADA = "ada@example.com";
const ADA_MOBILE = "919812345678";

async function contactId(panel: TestPanel, key: string): Promise<number> {
  return (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<{ id: number }>())!.id;
}

/** A panel with ada and bob: list members, segment members, events in the shard and in the archive, a test copy in the outbox, waiting webhook events. */
async function panelWithAda() {
  const panel = await createPanel();
  expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
  const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body;
  const api = apiFor(panel);
  expect((await api("contact", "add", { data: { EMAIL: ADA, NAME: "Ada", MOBILE: ADA_MOBILE }, listid: list.id })).body.result).toBe("Success");
  expect((await api("contact", "add", { data: { EMAIL: "bob@example.com", NAME: "Bob" }, listid: list.id })).body.result).toBe("Success");
  const segment = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Everyone", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@example.com" }] } })).body;
  expect(segment.count).toBe(2);
  return { panel, list, segment, ada: await contactId(panel, ADA) };
}

describe("erasing a contact", () => {
  it("exports everything held about it first, then leaves nothing of it in any route, export or archive", async () => {
    const { panel, list, segment, ada } = await panelWithAda();
    await seedEvents(panel, ADA, 3, 2);
    await seedEvents(panel, "bob@example.com", 3, 1, 100);
    await archiveOldEvents.run(env, Date.now());
    expect((await archivedRows(panel.id)).filter((r) => r.contact_id === ada)).toHaveLength(3);

    const published = await publish(panel, await broadcastData({}, "EMAIL\nbob@example.com\n"));
    const campaignId: string = published.body.CampaignID;
    await waitForImport(panel, campaignId);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${campaignId}/test`, { email: ADA })).status).toBe(200);
    await suppressAddress(panelData, panel.id, ADA, "unsubscribe", null, Date.now());
    await suppressPhone(panelData, panel.id, ADA_MOBILE, "stop", Date.now());
    // A browser and an app install registered for push under ada's key, and bob's browser.
    const device = (address: string, key: string) =>
      panelData
        .prepare("INSERT INTO push_subscriptions (panel_id, kind, address, contact_key, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 0)")
        .bind(panel.id, address.startsWith("https") ? "web" : "app", address, key);
    await panelData.batch([device("https://push.example.net/ada", ADA), device("ada-app-token-0123456789", ADA), device("https://push.example.net/bob", "bob@example.com")]);

    const hook = (await admin("POST", `/panels/${panel.id}/webhooks`, { label: "Orders", url: receiver.url("/hooks/erasure") })).body;
    const { enqueueWebhookEvents } = await import("../../src/services/webhooks/enqueue");
    const waiting = (identity: string) => ({ channel: "custom_activity" as const, journeyName: "J", occurredAt: Date.now(), details: { identity, activity_name: "view" } });
    await enqueueWebhookEvents(env, panel.id, hook.id, [waiting(ADA), waiting("bob@example.com"), waiting(ADA)]);
    expect((await admin("GET", `/panels/${panel.id}/webhooks/${hook.id}`)).body.backlog).toBe(3);
    const exported = await admin("POST", `/panels/${panel.id}/segments/${segment.id}/export`);
    for (let i = 0; i < 100 && (await admin("GET", `/panels/${panel.id}/jobs/${exported.body.jobid}`)).body.status !== "completed"; i++) await new Promise((r) => setTimeout(r, 100));

    // One more export, queued and not yet run (its nudge kept): it may come to list the contact too.
    const quiet = { ...env, IMPORTS: { send: async () => {}, sendBatch: async () => {} } as unknown as Queue } as Env;
    const queued = await startSegmentExport(quiet, panelData, (await getPanel(env.DB, panel.id))!, { id: segment.id }, [], Date.now());
    if (!queued.ok) throw new Error("the queued export did not start");

    // Right of access: one JSON document with everything, archived days included.
    const owner = await operatorWithRole(panel.id, "owner");
    const access = await asOperator(owner, "GET", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}/export`);
    expect(access.status).toBe(200);
    expect(access.body.contact.attributes).toMatchObject({ EMAIL: ADA, NAME: "Ada", MOBILE: ADA_MOBILE });
    expect(access.body.lists.map((l: any) => l.id)).toEqual([list.id]);
    expect(access.body.segments.map((s: any) => s.name)).toEqual(["Everyone"]);
    expect(access.body.events.map((e: any) => e.params.n).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(access.body.suppression).toMatchObject({ address: ADA, reason: "unsubscribe" });
    expect(access.body.sms_suppression).toBe("stop");

    const marketer = await operatorWithRole(panel.id, "marketer");
    expect((await asOperator(marketer, "DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`)).status).toBe(403);
    expect((await asOperator(marketer, "GET", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}/export`)).status).toBe(403);
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/nobody%40example.com`)).status).toBe(404);

    const erased = await asOperator(owner, "DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body).toMatchObject({ state: "done", archive_parts_rewritten: 3 });

    // No route answers anything of it.
    const key = encodeURIComponent(ADA);
    expect((await admin("GET", `/panels/${panel.id}/contacts/${key}`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/contacts/${key}/events`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/contacts/${key}/export`)).status).toBe(404);
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${key}`)).status).toBe(404);
    const answers = [
      await admin("GET", `/panels/${panel.id}/contacts?q=ada`),
      await admin("GET", `/panels/${panel.id}/lists/${list.id}/members`),
      await admin("GET", `/panels/${panel.id}/segments/${segment.id}`),
      await admin("GET", `/panels/${panel.id}/outbox?limit=100`),
      await admin("GET", `/panels/${panel.id}/audit?limit=100`),
      await admin("GET", `/panels/${panel.id}/sms/suppressions`),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(JSON.stringify(answer.body)).not.toContain("ada@");
      expect(JSON.stringify(answer.body)).not.toContain(ADA_MOBILE);
    }
    expect(answers[2]!.body).toMatchObject({ count: 1, members: 1 });
    // The archive holds bob's days only; ada's rows are gone from every table that had them.
    const archived = await archivedRows(panel.id);
    expect(archived.filter((r) => r.contact_id === ada)).toEqual([]);
    expect(archived).toHaveLength(3);
    for (const table of ["events", "list_members", "segment_members", "segment_changes", "campaign_messages", "journey_instances", "anon_profiles"]) {
      expect(await countRows(`SELECT COUNT(*) AS n FROM ${table} WHERE panel_id = ? AND contact_id = ?`, panel.id, ada), table).toBe(0);
    }
    // The stop stays under the address's salted hash (hex, so "ada" may appear in it by chance).
    const stops = await panelData.prepare("SELECT address FROM email_suppressions WHERE panel_id = ?").bind(panel.id).all<{ address: string }>();
    expect(stops.results.map((row) => row.address)).toEqual([await erasedIdentifier(panel.id, ADA)]);
    const devices = await panelData.prepare("SELECT address FROM push_subscriptions WHERE panel_id = ?").bind(panel.id).all<{ address: string }>();
    expect(devices.results.map((d) => d.address)).toEqual(["https://push.example.net/bob"]);
    expect((await env.FILES.list({ prefix: `outbox/${panel.id}/` })).objects).toHaveLength(0);
    // Its waiting webhook events went; bob's stays.
    expect((await admin("GET", `/panels/${panel.id}/webhooks/${hook.id}`)).body.backlog).toBe(1);
    // The segment export that listed it was withdrawn, its file deleted.
    const job = (await admin("GET", `/panels/${panel.id}/jobs/${exported.body.jobid}`)).body;
    expect(job.status).toBe("failed");
    expect(JSON.stringify(job)).toContain("erased");
    expect((await call(`/admin/v1/panels/${panel.id}/jobs/${exported.body.jobid}/export.csv`, { headers: { authorization: "Bearer test-admin-token" } })).status).not.toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/jobs/${queued.value.id}`)).body.status).toBe("failed");

    // The stops hold when the address and number come back, kept only as hashes.
    expect(await isAddressSuppressed(panelData, panel.id, ADA)).toBe(true);
    expect(await phoneSuppression(panelData, panel.id, ADA_MOBILE)).toBe("stop");
    // Who erased what and when, naming the contact by id only.
    const log = (await admin("GET", `/panels/${panel.id}/audit?action=contact.erased`)).body.entries;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ actor: { kind: "operator", email: owner.email }, target: String(ada), detail: { erasure_id: erased.body.erasure_id } });
  });

  it("takes every event of the visitor ids linked to it, anonymous or recorded for another contact, and their links", async () => {
    const panel = await createPanel();
    const event = (identity: string | undefined, uniqueid: string | undefined, n: number) => ({
      channel: "custom_activity" as const, name: "view", identity, uniqueid, params: { n }, occurredAt: Date.now() - (10 - n) * 60_000,
    });
    // "tablet" was bob's, then ada's (its link now); "laptop" only ever ada's.
    await recordEvents(env, { id: panel.id }, [event(undefined, "tablet", 0), event("bob@example.com", "tablet", 1), event(ADA, "tablet", 2), event(undefined, "tablet", 3)]);
    await recordEvents(env, { id: panel.id }, [event(ADA, "laptop", 4), event("bob@example.com", undefined, 5), event("bob@example.com", "phone", 6), event(undefined, "phone", 7)]);
    await pipelineSettled(panel.id);
    expect((await admin("GET", `/panels/${panel.id}/profiles/tablet/events`)).body.events).toHaveLength(4);

    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`)).status).toBe(200);
    const left = await panelData.prepare("SELECT json_extract(params, '$.n') AS n FROM events WHERE panel_id = ? ORDER BY n").bind(panel.id).all<{ n: number }>();
    expect(left.results.map((r) => r.n)).toEqual([5, 6, 7]);
    expect((await admin("GET", `/panels/${panel.id}/profiles/tablet/events`)).body.events).toEqual([]);
    const pairs = await panelData.prepare("SELECT uniqueid FROM uniqueid_contacts WHERE panel_id = ? ORDER BY uniqueid").bind(panel.id).all<{ uniqueid: string }>();
    expect(pairs.results.map((p) => p.uniqueid)).toEqual(["phone"]);
    expect((await admin("GET", `/panels/${panel.id}/profiles/phone/events`)).body.events).toHaveLength(2);
  });

  it("blanks the contact's records in a broadcast's uploaded contact file; nothing in any R2 object or table names it after", async () => {
    const panel = await createPanel();
    const eve = `eve.${crypto.randomUUID().slice(0, 8)}@example.com`;
    const eveMobile = `9198${String(Date.now()).slice(-8)}`;
    const spaced = `+${eveMobile.slice(0, 2)} ${eveMobile.slice(2, 7)} ${eveMobile.slice(7)}`;
    // Eve twice (the second time in capitals, by her number only on the first), between records kept byte for byte.
    const csv = `EMAIL,NAME,MOBILE\r\n${eve},Eve,${spaced}\r\nbob@example.com,"Bob, ""B""",\r\n  ${eve.toUpperCase()} ,Eve again,\r\ncarol@example.com,Carol,911234567890\r\n`;
    const published = await publish(panel, await broadcastData({}, csv));
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    const campaignId: string = published.body.CampaignID;
    expect((await waitForImport(panel, campaignId)).status).toBe("completed");
    const files = (await env.FILES.list({ prefix: `broadcasts/${panel.id}/${campaignId}/contacts/` })).objects;
    expect(files.map((f) => f.key)).toEqual([`broadcasts/${panel.id}/${campaignId}/contacts/0-contacts.csv`]);

    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(eve)}`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);

    // Rewritten, not deleted: eve's records are blank lines of their length (an import under way resumes at the same offsets), the rest as uploaded.
    const file = await env.FILES.get(files[0]!.key);
    const blank = (record: string) => "\n".repeat(new TextEncoder().encode(record).byteLength);
    expect(await file!.text()).toBe(
      `EMAIL,NAME,MOBILE\r\n${blank(`${eve},Eve,${spaced}\r\n`)}bob@example.com,"Bob, ""B""",\r\n${blank(`  ${eve.toUpperCase()} ,Eve again,\r\n`)}carol@example.com,Carol,911234567890\r\n`,
    );
    expect(file!.size).toBe(files[0]!.size);
    expect(file!.httpMetadata?.contentType).toBe("text/csv");

    // Every R2 object and every row of every table, in the control database and the shards.
    const names = (text: string) => text.toLowerCase().includes(eve) || text.replace(/\D/g, "").includes(eveMobile);
    const search = await placesNaming(names);
    expect(search.found).toEqual([]);
    expect(search.objects).toBeGreaterThanOrEqual(2);
  });

  it("rewrites many archived days in the background, and a suppressed address that comes back is still skipped by campaigns", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    await apiFor(panel)("contact", "add", { data: { EMAIL: ADA } });
    await seedEvents(panel, ADA, 25, 0);
    await seedEvents(panel, "bob@example.com", 2, 0, 100);
    for (let i = 0; i < 5; i++) await archiveOldEvents.run(env, Date.now());
    const ada = await contactId(panel, ADA);
    expect((await archivedRows(panel.id)).filter((r) => r.contact_id === ada)).toHaveLength(25);
    await suppressAddress(panelData, panel.id, ADA, "hard_bounce", null, Date.now());

    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`);
    expect(erased.body).toMatchObject({ state: "archive", archive_parts_rewritten: 20 });
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body.state).toBe("archive");
    await eraseArchivedEvents.run(env, Date.now());
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body).toMatchObject({ state: "done", archive_parts_rewritten: 25 });
    const archived = await archivedRows(panel.id);
    expect(archived.filter((r) => r.contact_id === ada)).toEqual([]);
    expect(archived).toHaveLength(2);
    // Another run finds nothing; another panel's erasure cannot be read here.
    await eraseArchivedEvents.run(env, Date.now());
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/erasures/${erased.body.erasure_id}`)).status).toBe(404);

    // The address comes back in a campaign's contacts file: the hard bounce still stops it.
    const published = await publish(panel, await broadcastData({ schedule_date: scheduleIn(137) }, `EMAIL\n${ADA}\nbob@example.com\n`));
    const campaignId: string = published.body.CampaignID;
    await waitForImport(panel, campaignId);
    const stored = await getCampaign(panelData, panel.id, campaignId);
    await fireCron(stored!.sendAt);
    expect((await waitForCampaign(panel, campaignId)).counters).toMatchObject({ sent: 1, skipped: 1 });
    expect((await admin("GET", `/panels/${panel.id}/outbox?campaign=${campaignId}`)).body.messages.map((m: any) => m.to)).toEqual(["bob@example.com"]);
    // The contact the campaign file made again shows the stop its sends read (kept under the erased address's hash).
    const page = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`);
    expect(page.body.suppression).toMatchObject({ address: ADA, reason: "hard_bounce" });
  });

  it("finds and removes archived events indexed before the index was compacted per owner and 32 days (shard migration 0066)", async () => {
    const { panel, ada } = await panelWithAda();
    await seedEvents(panel, ADA, 3, 2);
    await seedEvents(panel, "bob@example.com", 3, 1, 100);
    await archiveOldEvents.run(env, Date.now());
    // The parts as they were then: their keys and rows without the shard (shard migration 0116 came later).
    for (const object of (await env.FILES.list({ prefix: `events/${panel.id}/` })).objects) {
      await env.FILES.put(object.key.replace(/-s\d+\.ndjson\.gz$/, ".ndjson.gz"), await (await env.FILES.get(object.key))!.arrayBuffer(), { customMetadata: object.customMetadata });
      await env.FILES.delete(object.key);
    }
    await panelData.prepare("UPDATE event_archive_parts SET shard = NULL WHERE panel_id = ?").bind(panel.id).run();
    // The index as it was: a row per owner, day and part. Migration 0066 compacts it again.
    await panelData.batch([
      panelData.prepare("CREATE TABLE event_archive_owners (panel_id TEXT NOT NULL, owner TEXT NOT NULL, day INTEGER NOT NULL, part INTEGER NOT NULL, PRIMARY KEY (panel_id, owner, day, part))"),
      panelData
        .prepare("INSERT INTO event_archive_owners SELECT o.panel_id, o.owner, (e.value ->> 0) * 86400000, e.value ->> 1 FROM event_archive_owner_blocks o, json_each(o.parts) e WHERE o.panel_id = ?")
        .bind(panel.id),
      panelData.prepare("DELETE FROM event_archive_owner_blocks WHERE panel_id = ?").bind(panel.id),
    ]);
    expect(await countRows("SELECT COUNT(*) AS n FROM event_archive_owners WHERE panel_id = ? AND owner = ?", panel.id, `c:${ada}`)).toBe(3);
    const migration = env.SHARD_MIGRATIONS.find((m) => m.name.startsWith("0066_"))!;
    for (const query of migration.queries) await panelData.prepare(query).run();
    expect(await countRows("SELECT COUNT(*) AS n FROM sqlite_schema WHERE name = 'event_archive_owners'")).toBe(0);

    const access = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}/export`);
    expect(access.body.events.map((e: any) => e.params.n).sort()).toEqual([0, 1, 2, 3, 4]);
    const erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`);
    expect(erased.status).toBe(200);
    await eraseArchivedEvents.run(env, Date.now());
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body).toMatchObject({ state: "done", archive_parts_rewritten: 3 });
    const archived = await archivedRows(panel.id);
    expect(archived.filter((r) => r.contact_id === ada || r.identity === ADA)).toEqual([]);
    expect(archived).toHaveLength(3);
    // Nothing names ada's owners now; bob's archived days are still found for his history.
    expect(await countRows("SELECT COUNT(*) AS n FROM event_archive_owner_blocks WHERE panel_id = ? AND owner = ?", panel.id, `c:${ada}`)).toBe(0);
    const bob = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent("bob@example.com")}/export`);
    expect(bob.body.events.map((e: any) => e.params.n).sort()).toEqual([100, 101, 102, 103]);
  });
  it("erased while the archive writes a part of its old events: the part is written again without them", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    for (const email of [ADA, "bob@example.com"]) await apiFor(panel)("contact", "add", { data: { EMAIL: email } });
    // One old day holding both, so one part holds both.
    await seedEvents(panel, ADA, 1, 0);
    await seedEvents(panel, "bob@example.com", 1, 0, 100);
    const ada = await contactId(panel, ADA);

    // The archive has read the day's rows; the contact is erased before the part's object is stored.
    let erased: any = null;
    const bucket = new Proxy(env.FILES, {
      get(target, name) {
        if (name !== "put") return Reflect.get(target, name).bind(target);
        return async (key: string, body: any, options: any) => {
          if (erased === null && key.startsWith(`events/${panel.id}/`)) {
            erased = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(ADA)}`);
            expect(erased.status).toBe(200);
          }
          return target.put(key, body, options);
        };
      },
    });
    const after = (db: ShardDb, panelId: string, rows: readonly EventRow[], now: number) => recheckArchived(env, db, panelId, rows, now);
    expect(await archivePanel(bucket, { db: panelData, index: TEST_SHARD }, { id: panel.id, eventRetentionDays: 30 }, Date.now(), 10, after)).toBe(1);
    expect(erased).not.toBeNull();
    await eraseArchivedEvents.run(env, Date.now());

    const rows = await archivedRows(panel.id);
    expect(rows.filter((r) => r.contact_id === ada || r.identity === ADA)).toEqual([]);
    expect(rows.map((r: any) => JSON.parse(r.params).n)).toEqual([100]);
    expect(await countRows("SELECT COUNT(*) AS n FROM event_archive_owner_blocks WHERE panel_id = ? AND owner = ?", panel.id, `c:${ada}`)).toBe(0);
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erased.body.erasure_id}`)).body.state).toBe("done");
  });
});
