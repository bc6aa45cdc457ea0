import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { idFloorStatements } from "../../src/store/id-ranges";

// Setup files may run more than once; applyD1Migrations skips what is already applied, and the
// id floors (decision 0030) skip the tables that have theirs.
// The control database, then every shard binding (SHARD_0, SHARD_1, … as wrangler.toml has them).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const bindings = env as unknown as Record<string, D1Database | undefined>;
for (let i = 0; bindings[`SHARD_${i}`]; i++) {
  const shard = bindings[`SHARD_${i}`]!;
  await applyD1Migrations(shard, env.SHARD_MIGRATIONS);
  const floors = idFloorStatements(i);
  if (floors.length) await shard.batch(floors.map((sql) => shard.prepare(sql)));
}
