import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// The other tests run on databases made from the schema snapshots (migrations/schema), which
// `npm run schema` writes with Node's SQLite. Here D1 itself runs every migration file, in
// order, on an empty database, and must end with the snapshot's schema and seed rows: a
// migration D1 refuses, or one D1 runs differently, fails here.

/** Every table, index, trigger and view, as SQLite keeps them (blank lines and trailing blanks aside, as the snapshot writes them). */
async function schemaOf(db: D1Database) {
  const { results } = await db
    .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations' ORDER BY type, name")
    .all<{ type: string; name: string; tbl_name: string; sql: string }>();
  return results.map((entry) => ({ ...entry, sql: entry.sql.split("\n").map((line) => line.trimEnd()).filter(Boolean).join("\n") }));
}

async function rowsOf(db: D1Database, tables: string[]) {
  const counts: Record<string, unknown[]> = {};
  for (const table of tables) counts[table] = (await db.prepare(`SELECT * FROM "${table}" ORDER BY 1`).all()).results;
  return counts;
}

describe("the schema snapshots", () => {
  for (const [name, migrated, snapshotMade, migrations, schema] of [
    ["control", env.MIGRATED_CONTROL, env.DB, env.TEST_MIGRATIONS, env.TEST_SCHEMA],
    ["shard", env.MIGRATED_SHARD, env.SHARD_0, env.SHARD_MIGRATIONS, env.SHARD_SCHEMA],
  ] as const) {
    it(`are what D1 makes of the ${name} migrations, covering every one of them`, async () => {
      await applyD1Migrations(migrated, migrations);
      const expected = await schemaOf(migrated);
      expect(expected.length).toBeGreaterThan(10);
      expect(await schemaOf(snapshotMade)).toEqual(expected);
      const tables = expected.filter((entry) => entry.type === "table").map((entry) => entry.name);
      // Shard 0 has no id floors: its rows are the migrations' own (the control database's id_ranges row).
      expect(await rowsOf(snapshotMade, tables)).toEqual(await rowsOf(migrated, tables));
      expect(schema.migrations).toEqual(migrations.map((migration) => migration.name));
    });
  }
});
