import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { idFloorStatements } from "../../src/store/id-ranges";

// Each database is made from its schema snapshot (migrations/schema, `npm run schema`) in one
// batch that also records the migrations it covers, as `npm start` does; applyD1Migrations
// then applies only a migration newer than the snapshot. test/store/schema-snapshot.test.ts
// checks that D1 running the migrations themselves makes the same schema.
// Setup files may run more than once: a database that has d1_migrations is left as it is, and
// the id floors (decision 0030) skip the tables that have theirs.
// The control database, then every shard binding (SHARD_0, SHARD_1, … as wrangler.toml has them).
async function makeFromSnapshot(db: D1Database, schema: { statements: string[]; migrations: string[] }, migrations: typeof env.TEST_MIGRATIONS): Promise<void> {
  const made = await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'd1_migrations'").first();
  if (!made) {
    await db.batch([
      ...schema.statements.map((sql) => db.prepare(sql)),
      db.prepare("CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"),
      ...schema.migrations.map((name) => db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(name)),
    ]);
  }
  await applyD1Migrations(db, migrations);
}

await makeFromSnapshot(env.DB, env.TEST_SCHEMA, env.TEST_MIGRATIONS);
const bindings = env as unknown as Record<string, D1Database | undefined>;
for (let i = 0; bindings[`SHARD_${i}`]; i++) {
  const shard = bindings[`SHARD_${i}`]!;
  await makeFromSnapshot(shard, env.SHARD_SCHEMA, env.SHARD_MIGRATIONS);
  const floors = idFloorStatements(i);
  if (floors.length) await shard.batch(floors.map((sql) => shard.prepare(sql)));
}
