import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { panelOwningShards, panelShards, setPartitionMap } from "../../src/services/access/partitions";
import { estimateAudience } from "../../src/services/broadcasts/audience-estimate";
import { searchPanelContaining } from "../../src/services/contacts/search";
import { housekeeping } from "../../src/services/retention/housekeeping";
import { RECEIVED_SLOT_MS } from "../../src/store/panel-counts";
import { compareStoredText } from "../../src/store/sql";
import { admin, apiFor, call, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { keyOn, keysOn, shard0, TWO } from "../support/partitions";

// Decision 0038 step 3: the reads that span a panel (its contact search and paging, a list's
// members, the Home figures, the consent records, a campaign's audience estimate and preview by
// key) read every shard holding one of its partitions: here buckets 0–2047 on SHARD_0 and
// 2048–4095 on SHARD_1, the home.

/** The first `n` keys of the panel (user0@…, user1@…) whose partition is on `shard`. */
function keysOnShard(panelId: string, shard: number, n: number): string[] {
  return Array.from({ length: n }, (_, i) => keyOn(panelId, shard, i));
}

/** A panel on two partitions: five contacts on each shard, NAME "Hay" but "Needle" for two on each, the first three of each in list A. */
async function splitPanel() {
  const panel = await createPanel();
  const api = apiFor(panel);
  const a = (await api("lists", "add", { listname: "A" })).body.listid as number;
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const on0 = keysOnShard(panel.id, 0, 5);
  const on1 = keysOnShard(panel.id, TEST_SHARD, 5);
  for (const [i, key] of [...on0.map((k, i) => [i, k] as const), ...on1.map((k, i) => [i, k] as const)]) {
    const data = { EMAIL: key, NAME: i === 1 || i === 3 ? `Needle ${key}` : "Hay" };
    expect((await api("contact", "add", { data, ...(i < 3 ? { listid: String(a) } : {}) })).status).toBe(200);
  }
  // Each contact on its own partition's shard.
  expect(await keysOn(shard0, panel.id)).toEqual([...on0].sort());
  expect(await keysOn(panelData, panel.id)).toEqual([...on1].sort());
  return { panel, api, a, on0, on1, all: [...on0, ...on1].sort() };
}

const keysOf = (answer: { body: any }) => answer.body.contacts.map((c: { key: string }) => c.key) as string[];

/** Every page of a paged admin read, through next_cursor (sent back as `param`). */
async function allPages(path: string, items: (body: any) => string[], param = "after"): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const answer: { status: number; body: any } = await admin("GET", `${path}${cursor === null ? "" : `&${param}=${encodeURIComponent(cursor)}`}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    pages.push(items(answer.body));
    cursor = answer.body.next_cursor;
  } while (cursor !== null && pages.length < 20);
  return pages;
}

async function csvOf(panel: TestPanel): Promise<string[]> {
  const response = await call(`/admin/v1/panels/${panel.id}/consent.csv`, { headers: { authorization: "Bearer test-admin-token" } });
  expect(response.status).toBe(200);
  return (await response.text()).trim().split("\r\n");
}

describe("the panel-wide reads of a panel on two partitions (decision 0038 step 3)", () => {
  it("pages through every contact once, in key order, and searches both shards by key, attribute and contained text", async () => {
    const { panel, on0, on1, all } = await splitPanel();
    const base = `/panels/${panel.id}/contacts?limit=3`;
    const pages = await allPages(base, (body) => body.contacts.map((c: { key: string }) => c.key));
    expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat()).toEqual(all);

    // Exact key: the key's partition answers, wherever it is.
    for (const key of [on0[2]!, on1[2]!]) expect(keysOf(await admin("GET", `/panels/${panel.id}/contacts?q=${encodeURIComponent(key.toUpperCase())}&match=exact`))).toEqual([key]);
    // A prefix and an attribute's value, from both shards, paged.
    expect((await allPages(`/panels/${panel.id}/contacts?q=user&limit=4`, (b) => b.contacts.map((c: { key: string }) => c.key))).flat()).toEqual(all);
    const needles = [on0[1]!, on0[3]!, on1[1]!, on1[3]!].sort();
    expect((await allPages(`/panels/${panel.id}/contacts?attribute=NAME&q=needle&limit=1`, (b) => b.contacts.map((c: { key: string }) => c.key))).flat()).toEqual(needles);

    // Contains: both shards' matches, with the scan's size over both.
    const contains = await admin("GET", `/panels/${panel.id}/contacts?match=contains&attribute=NAME&q=EEDL`);
    expect(keysOf(contains)).toEqual(needles);
    expect(contains.body).toMatchObject({ next_cursor: null, scan: { contacts: 10, bounded: false } });
    const pagedContains = await allPages(`/panels/${panel.id}/contacts?match=contains&attribute=NAME&q=eedl&limit=3`, (b) => b.contacts.map((c: { key: string }) => c.key));
    expect(pagedContains.flat()).toEqual(needles);

    // A window smaller than the panel: each shard looks at its share, the answer stops where the
    // first full window did, and paging from there finds every match once.
    const found: string[] = [];
    let after: string | undefined;
    for (let round = 0; round < 10; round++) {
      const scan = await searchPanelContaining(env, { id: panel.id, shard: TEST_SHARD, partitions: TWO }, panelData, "NAME", "needle", after, 26, 4);
      expect(scan.scanned).toBeLessThanOrEqual(4);
      found.push(...scan.contacts.map((c) => c.key));
      if (scan.lastScanned === null) break;
      after = scan.lastScanned;
    }
    expect(found).toEqual(needles);
  });

  it("pages a list's members over both shards, sums the Home figures, and lists every consent record", async () => {
    const { panel, a, on0, on1 } = await splitPanel();
    const members = await allPages(`/panels/${panel.id}/lists/${a}/members?limit=2`, (b) => b.members.map((m: { key: string }) => m.key));
    expect(members.flat().sort()).toEqual([...on0.slice(0, 3), ...on1.slice(0, 3)].sort());
    expect(new Set(members.flat()).size).toBe(6);
    expect((await admin("GET", `/panels/${panel.id}/lists/${a}/members?limit=2`)).body.list).toMatchObject({ count: 6 });

    // The day's receipts are counted on the shard that recorded them (events are not yet routed: written here by hand).
    const slot = Math.floor(Date.now() / RECEIVED_SLOT_MS) * RECEIVED_SLOT_MS;
    for (const [db, n] of [[shard0, 4], [panelData, 3]] as const) await db.prepare("INSERT INTO panel_received (panel_id, slot, n) VALUES (?, ?, ?)").bind(panel.id, slot, n).run();
    const overview = await admin("GET", `/panels/${panel.id}/overview`);
    expect(overview.status).toBe(200);
    expect(overview.body).toMatchObject({ contacts: 10, contacts_at_least: false, lists: 1, events_today: 7 });
    const history = await admin("GET", `/panels/${panel.id}/overview/history?days=2`);
    expect(history.body.contacts.at(-1)).toBe(10);
    // Housekeeping keeps the stored count of each shard's part, which the figure reads past its cap.
    const now = Date.now();
    await housekeeping.run(env, now);
    for (const db of [shard0, panelData]) {
      expect(await db.prepare("SELECT n, counted_at FROM panel_counts WHERE panel_id = ? AND subject = ''").bind(panel.id).first()).toEqual({ n: 5, counted_at: now });
    }

    // Each add to a list recorded its consent on the contact's shard; the file has all of them, oldest first.
    const lines = await csvOf(panel);
    const contacts = lines.slice(1).map((line) => line.split(",")[1]);
    expect([...contacts].sort()).toEqual([...on0.slice(0, 3), ...on1.slice(0, 3)].sort());
    const times = lines.slice(1).map((line) => line.split(",")[0]!);
    expect(times).toEqual([...times].sort());
  });

  it("estimates a campaign's audience over both shards, and previews it and shows the contact page's tabs for a contact on a shard other than the home", async () => {
    const { panel, a, on0 } = await splitPanel();
    const estimate = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: { lists: [a] } });
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    expect(estimate.body).toMatchObject({ count: 6, exact: true });
    // Past the exact cap: the summed list counters.
    const tuning = { exactUpTo: 2, readMembersUpTo: 1000, suppressionsUpTo: 1000, suppressionsComparedUpTo: 1000 };
    const audience = { lists: [a], segments: [], exclude_lists: [], exclude_segments: [] };
    expect(await estimateAudience(panelOwningShards(env, { shard: TEST_SHARD, partitions: TWO }, panelData), panel.id, audience, Date.now(), tuning)).toMatchObject({ ok: true, value: { count: 6, exact: false } });

    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Spring",
      subject: "Hello {{NAME|friend}}",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hi {{NAME|there}}</p>",
      draft: true,
      audience: { lists: [a] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = on0[1]!;
    const preview = await admin("GET", `/panels/${panel.id}/campaigns/${created.body.id}/preview?contact=${encodeURIComponent(key)}`);
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body).toEqual({ subject: `Hello Needle ${key}`, html: `<p>Hi Needle ${key}</p>`, contact: key });
    // The contact page's events and journeys tabs find it there too.
    const events = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/events`);
    expect([events.status, events.body.contact, events.body.events]).toEqual([200, key, []]);
    const journeys = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/journeys`);
    expect([journeys.status, journeys.body.journeys]).toEqual([200, []]);
  });

  it("lists the SMS stops and the audit entries of contacts on either shard", async () => {
    const { panel, on0, on1 } = await splitPanel();
    expect((await admin("PUT", `/panels/${panel.id}/attributes/MOBILE`, { type: "string" })).status).toBe(200);
    const phones = new Map([[on0[0]!, "919812345670"], [on1[0]!, "919812345671"]]);
    for (const [key, phone] of phones) {
      const contact = `/panels/${panel.id}/contacts/${encodeURIComponent(key)}`;
      const edited = await admin("PATCH", contact, { attributes: { MOBILE: phone } });
      expect(edited.status, JSON.stringify(edited.body)).toBe(200);
      const stopped = await admin("PUT", `${contact}/preferences`, { sms: "unsubscribed" });
      expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    }
    // Each contact's stop is kept on its own shard; the SMS screen lists both.
    const suppressions = await admin("GET", `/panels/${panel.id}/sms/suppressions`);
    expect(suppressions.status).toBe(200);
    expect(suppressions.body.suppressions.map((s: { phone: string; reason: string }) => `${s.phone} ${s.reason}`).sort()).toEqual(["919812345670 stop", "919812345671 stop"]);
    // A stop an operator enters reaches every shard: listed once.
    expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/919800000000`)).status).toBe(200);
    const again = (await admin("GET", `/panels/${panel.id}/sms/suppressions?limit=2`)).body.suppressions.map((s: { phone: string }) => s.phone);
    expect(again).toEqual(["919800000000", expect.any(String)]);

    // The operator's edits and preference changes of both contacts are in the panel's audit log.
    const log = await admin("GET", `/panels/${panel.id}/audit?target_kind=contact`);
    expect(log.status).toBe(200);
    const entries = log.body.entries.map((e: { action: string; target: string }) => e.action);
    expect(entries.filter((a: string) => a === "contact.edited")).toHaveLength(2);
    expect(entries.filter((a: string) => a === "contact.preferences_changed")).toHaveLength(2);
  });

  it("pages through 2,500 SMS stops on two shards, each number once at its newest stop, newest first", async () => {
    const { panel } = await splitPanel();
    const base = Date.UTC(2026, 0, 1);
    // Number i stopped at one of 700 times (numbers sharing a time are listed by number). The
    // first 1,250 are on both shards (a third of those older on SHARD_0: a contact's own stop
    // that shard kept when the cron copied the other's), the rest on one shard each.
    const stops = Array.from({ length: 2500 }, (_, i) => ({ phone: `9198${String(i * 7919 % 100000000).padStart(8, "0")}`, at: base + (i % 700) * 1000 }));
    const on = (db: typeof shard0, rows: { phone: string; at: number }[]) =>
      db
        .prepare("INSERT INTO sms_suppressions (panel_id, phone, reason, created_at) SELECT ?, value ->> '$.phone', 'stop', value ->> '$.at' FROM json_each(?)")
        .bind(panel.id, JSON.stringify(rows))
        .run();
    await on(panelData, [...stops.slice(0, 1250), ...stops.slice(1250).filter((_, i) => i % 2 === 0)]);
    await on(shard0, [...stops.slice(0, 1250).map((s, i) => (i % 3 === 0 ? { ...s, at: s.at - 500_000 } : s)), ...stops.slice(1250).filter((_, i) => i % 2 === 1)]);
    const expected = [...stops].sort((a, b) => b.at - a.at || compareStoredText(a.phone, b.phone)).map((s) => s.phone);

    const pages = await allPages(`/panels/${panel.id}/sms/suppressions?limit=1000`, (body) => body.suppressions.map((s: { phone: string }) => s.phone), "cursor");
    expect(pages.flat()).toEqual(expected);
    expect(pages.length).toBeLessThanOrEqual(5);
    // Without a cursor: the newest first, as before.
    const first = await admin("GET", `/panels/${panel.id}/sms/suppressions?limit=3`);
    expect(first.body.suppressions.map((s: { phone: string }) => s.phone)).toEqual(expected.slice(0, 3));
    expect(first.body.next_cursor).toEqual(expect.any(String));
  });

  it("merges text in the order SQLite's ORDER BY gives it, not JavaScript's", async () => {
    const texts = ["b", "a\u{1F600}", "a\uFF21", "a", "ab", "A", "\u00E9", "a\uE000", "a\u{10000}z"];
    const { results } = await shard0.prepare("SELECT value FROM json_each(?) ORDER BY value").bind(JSON.stringify(texts)).all<{ value: string }>();
    expect([...texts].sort(compareStoredText)).toEqual(results.map((r) => r.value));
    // JavaScript's own order puts U+FF21 after the astral 😀 (UTF-16 units); SQLite's puts it before.
    expect([...texts].sort()).not.toEqual(results.map((r) => r.value));
  });

  it("refuses a cursor that is not one (400 naming it) and reads a panel without a map from its home alone", async () => {
    const { panel, a } = await splitPanel();
    const badMembers = await admin("GET", `/panels/${panel.id}/lists/${a}/members?after=x1`);
    expect([badMembers.status, badMembers.body.errors[0].field]).toEqual([400, "after"]);
    const badContacts = await admin("GET", `/panels/${panel.id}/contacts?after=${"k".repeat(501)}`);
    expect([badContacts.status, badContacts.body.errors[0].field]).toEqual([400, "after"]);
    const badStops = await admin("GET", `/panels/${panel.id}/sms/suppressions?cursor=x1`);
    expect([badStops.status, badStops.body.errors[0].field]).toEqual([400, "cursor"]);

    const plain = await createPanel();
    expect(panelShards(env, { shard: TEST_SHARD, partitions: [] }, panelData)).toEqual([panelData]);
    const api = apiFor(plain);
    for (const key of keysOnShard(plain.id, 0, 2)) expect((await api("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
    expect(await keysOn(shard0, plain.id)).toEqual([]);
    expect(keysOf(await admin("GET", `/panels/${plain.id}/contacts`))).toEqual(keysOnShard(plain.id, 0, 2).sort());
    expect((await admin("GET", `/panels/${plain.id}/overview`)).body).toMatchObject({ contacts: 2 });
  });
});
