import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eraseContactRows } from "../../src/store/erasure";
import { listEventsOf } from "../../src/store/events";
import type { ShardDb } from "../../src/store/shards";

// A contact's or a uniqueid's events are read and erased through their own indexes
// (events_by_contact, the partial events_by_uniqueid and uniqueid_contacts: shard migration
// 0057), never through a scan of the table or of the panel's rows in events_by_name. The
// statements are the store's own, caught as they are prepared and planned on the shard.

const db = env.SHARD_0 as ShardDb;

interface Caught {
  sql: string;
  values: unknown[];
}

/** A database that records what it is asked to run and runs nothing (every read is empty). */
function catching(): { db: ShardDb; caught: Caught[] } {
  const caught: Caught[] = [];
  const statement = (sql: string) => ({
    bind(...values: unknown[]) {
      caught.push({ sql, values });
      return { all: async () => ({ results: [] }), run: async () => ({ results: [] }), first: async () => null };
    },
  });
  const fake = { prepare: statement, batch: async (statements: unknown[]) => statements.map(() => ({ results: [] })) };
  return { db: fake as unknown as ShardDb, caught };
}

async function planOf({ sql, values }: Caught): Promise<string> {
  const { results } = await db.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...values).all<{ detail: string }>();
  return results.map((row) => row.detail).join(" | ");
}

const readsEventsBadly = (plan: string) => /SCAN (events|e)\b|events_by_name/.test(plan);

describe("reads and erasures of one owner's events", () => {
  it("a contact's history pages through events_by_contact", async () => {
    const { db: fake, caught } = catching();
    await listEventsOf(fake, "pnl_plan", { contactId: 7 }, 25, { occurredAt: Date.now(), id: 100 });
    const plan = await planOf(caught[0]!);
    expect(plan).toContain("events_by_contact");
    expect(readsEventsBadly(plan), plan).toBe(false);
  });

  it("a uniqueid's history reads its anonymous events in events_by_uniqueid and the others through its contacts", async () => {
    const { db: fake, caught } = catching();
    await listEventsOf(fake, "pnl_plan", { uniqueid: "visitor-1" }, 25);
    const plan = await planOf(caught[0]!);
    expect(plan).toContain("events_by_uniqueid");
    expect(plan).toContain("events_by_contact");
    expect(readsEventsBadly(plan), plan).toBe(false);
  });

  it("a uniqueid's unjoined anonymous events (a contact's history on another partition) read events_by_uniqueid alone", async () => {
    const { db: fake, caught } = catching();
    await listEventsOf(fake, "pnl_plan", { uniqueid: "visitor-1", unjoined: true }, 25, { occurredAt: Date.now(), id: 100 });
    const plan = await planOf(caught[0]!);
    expect(plan).toContain("events_by_uniqueid");
    expect(plan).not.toContain("events_by_contact");
    expect(readsEventsBadly(plan), plan).toBe(false);
  });

  it("an erasure finds each of the contact's event and pair rows by key", async () => {
    const { db: fake, caught } = catching();
    const target = { panelId: "pnl_plan", contactId: 7, uniqueids: ["visitor-1", "visitor-2"], email: null, phone: null };
    const erasure = { id: "era_plan", panelId: "pnl_plan", contactId: 7, owners: [], state: "archive" as const, partsDone: 0, createdAt: 0, finishedAt: null, requestedBy: null };
    await eraseContactRows(fake, [[0, 511]], target, erasure, 0);
    const onEvents = caught.filter((c) => /^DELETE FROM (events|uniqueid_contacts)\b/.test(c.sql));
    expect(onEvents.length).toBeGreaterThanOrEqual(3);
    for (const statement of onEvents) {
      const plan = await planOf(statement);
      expect(readsEventsBadly(plan), `${statement.sql}\n${plan}`).toBe(false);
      expect(plan, statement.sql).not.toMatch(/SCAN uniqueid_contacts|uniqueid_contacts USING PRIMARY KEY \(panel_id=\?\)$/);
    }
  });

  it("joining a uniqueid's anonymous events to a contact reads them in events_by_uniqueid", async () => {
    const trigger = await db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'anon_profiles_join_history'").first<{ sql: string }>();
    const update = /UPDATE events[\s\S]*?;/.exec(trigger!.sql)![0].replace(/;$/, "").replace(/NEW\.\w+/g, "?");
    const plan = await planOf({ sql: update, values: [1, "pnl_plan", "visitor-1"] });
    expect(plan).toContain("events_by_uniqueid");
  });
});
