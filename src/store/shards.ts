/**
 * The deployment's databases: the control database `DB` (panels and the directory of their
 * shards, users and key hashes, operators, sessions, dead letters) and the shards `SHARD_0` …
 * `SHARD_{N-1}`, each holding every table of the panels the directory places on it
 * (migrations/shard). A store function over a panel's data takes a `ShardDb`, which only this
 * file makes, so passing `env.DB` there fails the type check; one over the control database
 * takes a `ControlDb`, which a `ShardDb` is not (`npm run check:shards` keeps it so).
 */
declare const shardBrand: unique symbol;
export type ShardDb = D1Database & { readonly [shardBrand]: true };
/** The control database (`env.DB`); a shard's database is refused where it is expected. */
export type ControlDb = D1Database & { readonly [shardBrand]?: never };

/** A shard's place in the deployment: its number and its database. */
export interface Shard {
  index: number;
  db: ShardDb;
}

function binding(env: Env, index: number): D1Database | undefined {
  return (env as unknown as Record<string, D1Database | undefined>)[`SHARD_${index}`];
}

/** Every shard binding, SHARD_0 upwards without gaps: adding a binding adds a shard. */
export function allShards(env: Env): Shard[] {
  const shards: Shard[] = [];
  for (let index = 0; ; index++) {
    const db = binding(env, index);
    if (!db) return shards;
    shards.push({ index, db: db as ShardDb });
  }
}

/** The shard database numbered `index`; null when the deployment has no such binding. */
export function shardByIndex(env: Env, index: number): ShardDb | null {
  const db = binding(env, index);
  return db ? (db as ShardDb) : null;
}

/** The database of a panel whose directory entry was read with it (panels.shard). */
export function shardOf(env: Env, panel: { shard: number }): ShardDb {
  const db = shardByIndex(env, panel.shard);
  if (!db) throw new Error(`the directory names shard ${panel.shard}, which has no SHARD_${panel.shard} binding`);
  return db;
}

/** How many bytes a shard's database holds (D1 reports it with every result). */
export async function shardSize(db: ShardDb): Promise<number> {
  const result = await db.prepare("SELECT 1").run();
  return result.meta.size_after ?? 0;
}

/** One statement that reads nothing: whether the database answers (the deep health check). */
export async function probeDatabase(db: ShardDb | ControlDb): Promise<void> {
  await db.prepare("SELECT 1").first();
}

/** The name of shard `index`'s binding, as an operator reads it in wrangler.toml. */
export function shardBindingName(index: number): string {
  return `SHARD_${index}`;
}
