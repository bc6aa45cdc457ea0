import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Setup files may run more than once; applyD1Migrations skips what is already applied.
// The control database, then every shard binding (SHARD_0, SHARD_1, … as wrangler.toml has them).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const bindings = env as unknown as Record<string, D1Database | undefined>;
for (let i = 0; bindings[`SHARD_${i}`]; i++) await applyD1Migrations(bindings[`SHARD_${i}`]!, env.SHARD_MIGRATIONS);
