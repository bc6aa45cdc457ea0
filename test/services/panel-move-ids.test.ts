import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MOVE_TUNING, readyTargetIds, runMoveStep, startPanelMove, type MoveStepOutcome } from "../../src/services/panels/move";
import { FIRST_MOVE_RANGE, ID_RANGE_SIZE, LAST_MOVE_RANGE } from "../../src/store/id-ranges";
import { getPanelMove } from "../../src/store/panel-moves";
import { getPanel } from "../../src/store/panels";
import type { ShardDb } from "../../src/store/shards";
import { admin, createPanel, type TestPanel } from "../support/helpers";

// Id ranges a move hands out (decisions 0031, 0037) come from a bounded pool: however often a
// panel goes back and forth, every id stays below 2^53, exact in JavaScript and JSON clients.
// Contacts are added straight into the panel's shard: the moves below run on a clock that skips
// the settling wait, so the Worker's cached place of the panel may still name the old shard.

const shard = (n: number) => (n === 0 ? env.SHARD_0 : env.SHARD_1) as unknown as ShardDb;

async function placeOf(panel: TestPanel): Promise<number> {
  return (await getPanel(env.DB, panel.id))!.shard;
}

/** Adds a contact on the panel's shard, as the API does; its id. */
async function addContact(db: ShardDb, panelId: string, email: string): Promise<number> {
  const row = await db.prepare("INSERT INTO contacts (panel_id, pk_value, created_at, updated_at) VALUES (?, ?, 0, 0) RETURNING id").bind(panelId, email).first<{ id: number }>();
  return row!.id;
}

/** Runs a move to `to` to its end, step after step, on a clock that skips the settling wait. */
async function move(panel: TestPanel, to: number, clock: { now: number }): Promise<any> {
  const started = await startPanelMove(env, (await getPanel(env.DB, panel.id))!, to, clock.now);
  if (!started.ok) return started;
  for (let outcome: MoveStepOutcome = { next: "now" }; outcome.next !== "none"; ) {
    outcome = await runMoveStep(env, started.value.id, MOVE_TUNING, () => clock.now);
    clock.now += outcome.next === "later" ? outcome.ms : 1;
  }
  return getPanelMove(env.DB, panel.id, started.value.id);
}

const nextRange = async () => (await env.DB.prepare("SELECT next FROM id_ranges").first<{ next: number }>())!.next;

describe("id ranges of moved panels", () => {
  it("are taken once per move that needs one: whole moves back and forth, a contact added between each", async () => {
    // A whole move costs about 300 statements (3 s locally): ten of them, and a thousand of the
    // step that takes ranges below.
    const panel = await createPanel({ shard: 1 });
    const clock = { now: Date.now() };
    const first = await nextRange();
    for (let i = 0; i < 10; i++) {
      const id = await addContact(shard(await placeOf(panel)), panel.id, `c${i}@example.com`);
      expect(id).toBeLessThan(Number.MAX_SAFE_INTEGER);
      const done = await move(panel, i % 2 === 0 ? 0 : 1, clock);
      expect(done, JSON.stringify(done)).toMatchObject({ state: "done" });
    }
    // The first move (to shard 0, below the panel's range) and every later one took a range.
    expect((await nextRange()) - first).toBe(10);
    const { n } = (await shard(await placeOf(panel)).prepare("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!;
    expect(n).toBe(10);
    const last = await addContact(shard(await placeOf(panel)), panel.id, "last@example.com");
    // The panel's shard counts in the range it took last.
    expect(last).toBeGreaterThan(((await nextRange()) - 1) * ID_RANGE_SIZE);
  }, 180_000);

  it("keep every id below 2^53 through a thousand moves back and forth, a contact added between each", async () => {
    const panel = await createPanel({ shard: 1 });
    const first = await nextRange();
    let at = 1;
    let largest = 0;
    for (let i = 0; i < 1000; i++) {
      const [from, to] = [shard(at), shard(1 - at)];
      largest = Math.max(largest, await addContact(from, panel.id, `c${i}@example.com`));
      // What a move does with ids: the target takes a range if it must, the rows keep theirs.
      expect(await readyTargetIds(env, from, to, panel.id)).toBe(true);
      const { results } = await from.prepare("SELECT * FROM contacts WHERE panel_id = ?").bind(panel.id).all<Record<string, unknown>>();
      // All of them in one statement: a statement per row was half a million over the loop, most of this file's minutes.
      const columns = Object.keys(results[0]!);
      await to
        .prepare(`INSERT INTO contacts (${columns.join(", ")}) SELECT ${columns.map((column) => `value ->> '$.${column}'`).join(", ")} FROM json_each(?)`)
        .bind(JSON.stringify(results))
        .run();
      await from.prepare("DELETE FROM contacts WHERE panel_id = ?").bind(panel.id).run();
      at = 1 - at;
    }
    const next = await nextRange();
    expect(next - first).toBeLessThanOrEqual(1000);
    expect(next).toBeLessThanOrEqual(LAST_MOVE_RANGE + 1);
    expect(largest).toBeLessThan(next * ID_RANGE_SIZE);
    expect(largest).toBeLessThan(Number.MAX_SAFE_INTEGER);
    // The shards go on below 2^53 too.
    for (const n of [0, 1]) expect(await addContact(shard(n), panel.id, `after${n}@example.com`)).toBeLessThan(Number.MAX_SAFE_INTEGER);
  }, 300_000);

  it("refuses a move that would need a range past the pool's last, saying why, and makes one that needs none", async () => {
    const saved = await nextRange();
    const counter = async (n: number) => (await shard(n).prepare("SELECT seq FROM sqlite_sequence WHERE name = 'contacts'").first<{ seq: number }>())!.seq;
    // The shard counting higher (which one depends on the moves above) and the other.
    const high = (await counter(0)) > (await counter(1)) ? 0 : 1;
    const low = 1 - high;
    const above = await createPanel({ shard: high });
    const below = await createPanel({ shard: low });
    await addContact(shard(high), above.id, "ada@example.com");
    await addContact(shard(low), below.id, "bob@example.com");
    await env.DB.prepare("UPDATE id_ranges SET next = ?").bind(LAST_MOVE_RANGE + 1).run();
    try {
      const refused = await admin("POST", `/panels/${above.id}/moves`, { shard: low });
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.errors[0]).toMatchObject({ field: "shard" });
      expect(refused.body.errors[0].message).toContain(`id ranges for moves (${FIRST_MOVE_RANGE} to ${LAST_MOVE_RANGE}, decision 0037) are used up`);
      expect(await placeOf(above)).toBe(high);
      // A move whose target counts above the panel's ids takes no range.
      expect(await move(below, high, { now: Date.now() })).toMatchObject({ state: "done" });
      expect(await nextRange()).toBe(LAST_MOVE_RANGE + 1);
    } finally {
      await env.DB.prepare("UPDATE id_ranges SET next = ?").bind(saved).run();
    }
  }, 120_000);
});
