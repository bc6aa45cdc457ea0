import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pageQuery, windowEndQuery } from "../../src/store/panel-move/rows";
import { BATCH_SCRATCH_TABLES, BUCKETED_TABLES, CONTACT_TABLES, MOVE_MACHINERY_TABLES, MOVED_TABLES, PARENT_SCOPED_TABLES, partitionTables } from "../../src/store/panel-move/tables";

// A panel's move copies the tables MOVED_TABLES lists: a shard table missing there would stay
// behind when its panel moves. This compares the list with the shard's schema as migrated.

const db = env.SHARD_1;

async function columnsOf(table: string) {
  const { results } = await db.prepare(`PRAGMA table_info(${table})`).all<{ name: string; pk: number }>();
  return results;
}

describe("the tables a panel's move copies", () => {
  it("are every table of a shard, each with its primary key, its panel and its foreign keys", async () => {
    const { results } = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY name")
      .all<{ name: string }>();
    const schema = results.map((r) => r.name);
    expect([...MOVED_TABLES.map((t) => t.name), ...MOVE_MACHINERY_TABLES, ...BATCH_SCRATCH_TABLES].sort()).toEqual(schema);

    for (const [index, table] of MOVED_TABLES.entries()) {
      const columns = await columnsOf(table.name);
      const key = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      expect(table.key, table.name).toEqual(key);
      expect(table.scope.includes("{row}.panel_id"), table.name).toBe(columns.some((c) => c.name === "panel_id"));
      const { results: keys } = await db.prepare(`PRAGMA foreign_key_list(${table.name})`).all<{ from: string; table: string }>();
      // A parent numbered per panel (lists) is named by (panel_id, column): two rows of the pragma.
      const declared = (table.parents ?? []).flatMap((p) => [`${p.column}->${p.table}`, ...(p.inPanel ? [`panel_id->${p.table}`] : [])]);
      expect(declared.sort(), table.name).toEqual(keys.map((k) => `${k.from}->${k.table}`).sort());
      // A parent comes first, so a page copied in order never names a row not yet copied.
      for (const parent of table.parents ?? []) expect(MOVED_TABLES.findIndex((t) => t.name === parent.table), `${table.name} after ${parent.table}`).toBeLessThan(index);
      const { sql } = (await db.prepare("SELECT sql FROM sqlite_master WHERE name = ?").bind(table.name).first<{ sql: string }>())!;
      expect(Boolean(table.autoincrement), table.name).toBe(/AUTOINCREMENT/i.test(sql));
    }
  });

  it("of a partition (decision 0047) are every table with a bucket, those naming a contact without one, and an instance's or a message's rows", async () => {
    const bucketed: string[] = [];
    for (const table of MOVED_TABLES) if ((await columnsOf(table.name)).some((c) => c.name === "bucket")) bucketed.push(table.name);
    expect([...BUCKETED_TABLES].sort()).toEqual(bucketed.sort());
    for (const name of CONTACT_TABLES) expect((await columnsOf(name)).map((c) => c.name), name).toContain("contact_id");
    // Every other table naming a contact, an instance or a journey message is scoped through its
    // parent, or stays where it was written: the segments' history (summed over the shards) and
    // an erasure's record and its messages' copies still to delete (its contact is gone already).
    const byParent = Object.keys(PARENT_SCOPED_TABLES);
    const STAYING = ["segment_changes", "contact_erasures", "erased_message_copies"];
    for (const table of MOVED_TABLES) {
      const columns = (await columnsOf(table.name)).map((c) => c.name);
      const keyed = ["contact_id", "instance_id", "entry_key"].some((c) => columns.includes(c)) || (columns.includes("msgid") && table.name.startsWith("journey_"));
      const moved = bucketed.includes(table.name) || (CONTACT_TABLES as readonly string[]).includes(table.name) || byParent.includes(table.name);
      if (keyed && !STAYING.includes(table.name)) expect(moved, table.name).toBe(true);
    }
    const tables = partitionTables({ first: 2048, last: 4095 });
    const scoped = (n: string) => bucketed.includes(n) || (CONTACT_TABLES as readonly string[]).includes(n) || byParent.includes(n);
    expect(tables.map((t) => t.name)).toEqual(MOVED_TABLES.map((t) => t.name).filter(scoped));
    for (const t of tables) expect(t.scope, t.name).toContain("BETWEEN 2048 AND 4095");
    // A parent-scoped row's parent is copied before it and deleted after it.
    const order = tables.map((t) => t.name);
    expect(order.indexOf("journey_instances")).toBeLessThan(order.indexOf("journey_step_runs"));
    expect(order.indexOf("journey_messages")).toBeLessThan(order.indexOf("journey_message_marks"));
    expect(order.indexOf("contacts")).toBeLessThan(order.indexOf("journey_entry_keys"));
  });

  it("are copied in the order of their primary key, each page read without a sort", async () => {
    // A sort per page of the panel's rows made the copy quadratic (issue 42): every page query
    // walks the primary key's index from the cursor, as SQLite plans it on a migrated shard.
    const plan = async (sql: string) => {
      const params = Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));
      const { results } = await db.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...Array.from({ length: params }, () => 0)).all<{ detail: string }>();
      return results.map((r) => r.detail).join(" | ");
    };
    for (const table of [...MOVED_TABLES, ...partitionTables({ first: 2048, last: 4095 })]) {
      for (const [cursor, end] of [[false, false], [true, false], [true, true], [false, true]] as const) {
        const detail = await plan(pageQuery(table, cursor, end, 500));
        expect(detail, `${table.name} page (cursor ${cursor}, end ${end})`).not.toContain("TEMP B-TREE");
        // The key's own order: its index (a rowid table's INTEGER PRIMARY KEY or the table itself, a WITHOUT ROWID table, an autoindex).
        expect(detail, `${table.name} page`).toMatch(/^(SEARCH|SCAN) r( USING (INTEGER PRIMARY KEY|PRIMARY KEY|(COVERING )?INDEX sqlite_autoindex_)|$| \|)/);
        if (table.key[0] === "panel_id") expect(detail, `${table.name} page`).toMatch(/\(panel_id[=>]/);
      }
      const window = await plan(windowEndQuery(table, true, 5_000));
      expect(window, `${table.name} window`).not.toContain("TEMP B-TREE");
    }
  });
});
