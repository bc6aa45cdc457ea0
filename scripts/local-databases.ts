// The local D1 databases of a region brought up to date in one runtime (`npm start`), instead of
// one `wrangler d1 migrations apply` per database (47 migrations, a workerd started for each
// database and each step).
//
// A database with no tables is made from its schema snapshot (migrations/schema/*.sql) in one
// batch, with wrangler's d1_migrations table listing every migration the snapshot covers. A
// database that has d1_migrations gets the migrations it lacks, one batch each, recorded there
// as `wrangler d1 migrations apply` does; so does a fresh one when a migration is newer than
// the snapshot. Shards past the first then get their id floors (decision 0030), as
// scripts/migrate.ts does; applying them again changes nothing.
//
// The databases are the files `wrangler dev` and `wrangler d1 … --local` use: Miniflare with
// the same ids and the same persistence directory (<state>/v3), as wrangler's own local execute.
// Once they are up to date, a note beside them (<state>/v3/d1/migrated.json) lists what each
// has; a restart whose migrations are all there starts no runtime at all. A migration applied
// by hand only adds to a database, so it at worst makes the note out of date: then the
// databases are looked at again.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Miniflare } from "miniflare";
import { idFloorStatements, shardIndexOf } from "../src/store/id-ranges.ts";
import { d1Databases } from "./migrate.ts";
import { DATABASES, migrationNames, readSnapshot, root, snapshotMigrations, snapshotStatements } from "./schema-snapshot.ts";

/** wrangler's migrations table, as `wrangler d1 migrations apply` creates it. */
const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS d1_migrations(
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT UNIQUE,
  applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`;

type D1 = Awaited<ReturnType<Miniflare["getD1Database"]>>;

/** The migrations a database lists as applied; null when it has no d1_migrations table. */
async function appliedMigrations(db: D1): Promise<string[] | null> {
  const table = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'd1_migrations'").first();
  if (!table) return null;
  const { results } = await db.prepare("SELECT name FROM d1_migrations ORDER BY id").all<{ name: string }>();
  return results.map((row) => row.name);
}

async function hasTables(db: D1): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' LIMIT 1").first()) !== null;
}

const sameNames = (a: string[], b: string[]) => a.length === b.length && a.every((name, i) => name === b[i]);

function databaseOf(binding: string) {
  return DATABASES.find((d) => d.name === (shardIndexOf(binding) === null ? "control" : "shard"))!;
}

/** Brings one database up to date; returns what it did, for the log. */
async function prepare(db: D1, binding: string, split: () => Promise<(sql: string) => string[]>): Promise<string> {
  const database = databaseOf(binding);
  const done: string[] = [];
  let applied = await appliedMigrations(db);
  if (applied === null && !(await hasTables(db))) {
    const snapshot = readSnapshot(database);
    const covered = snapshotMigrations(snapshot);
    await db.batch([
      ...snapshotStatements(snapshot).map((sql) => db.prepare(sql)),
      db.prepare(MIGRATIONS_TABLE),
      ...covered.map((name) => db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(name)),
    ]);
    done.push(`made from ${database.snapshot} (${covered.length} migrations)`);
    applied = covered;
  }
  const pending = migrationNames(database.migrationsDir).filter((name) => !applied?.includes(name));
  if (pending.length) {
    const splitSql = await split();
    await db.prepare(MIGRATIONS_TABLE).run();
    for (const name of pending) {
      const statements = splitSql(readFileSync(join(root, database.migrationsDir, name), "utf8"));
      try {
        await db.batch([...statements.map((sql) => db.prepare(sql)), db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(name)]);
      } catch (error) {
        throw new Error(`${binding}: ${database.migrationsDir}/${name} failed: ${(error as Error).message}`);
      }
    }
    done.push(`applied ${pending.join(", ")}`);
  }
  const floors = idFloorStatements(shardIndexOf(binding) ?? 0);
  if (floors.length) await db.batch(floors.map((sql) => db.prepare(sql)));
  return `${binding}: ${done.length ? done.join("; ") : "up to date"}`;
}

/**
 * Makes or migrates every local D1 database of a region (`region` "" for the default one) kept
 * under `stateDir` (wrangler's --persist-to; .wrangler/state when absent). Returns a line per database.
 */
export async function prepareLocalDatabases(region: string, stateDir: string | undefined): Promise<string> {
  const databases = d1Databases(region);
  const persistence = join(stateDir ?? join(root, ".wrangler", "state"), "v3");
  const noteFile = join(persistence, "d1", "migrated.json");
  const note = (existsSync(noteFile) ? JSON.parse(readFileSync(noteFile, "utf8")) : {}) as Record<string, string[]>;
  const wanted = Object.fromEntries(databases.map(({ binding, localId }) => [localId, migrationNames(databaseOf(binding).migrationsDir)]));
  if (Object.entries(wanted).every(([id, names]) => names.every((name) => note[id]?.includes(name)))) return "every database up to date (as v3/d1/migrated.json notes)";
  // A database made before (the note names it) or a snapshot behind its migrations: files to apply.
  const mayApplyFiles = Object.keys(note).length > 0 || DATABASES.some((d) => !sameNames(snapshotMigrations(readSnapshot(d)), migrationNames(d.migrationsDir)));
  try {
    return await prepareIn(persistence, databases, noteFile, { ...note, ...wanted }, mayApplyFiles);
  } catch (error) {
    // Under heavy load Miniflare's proxy has been seen to lose workerd's connection. Each batch
    // is one transaction that also records its migrations: a second try finds in d1_migrations
    // what the first one committed and does the rest.
    if ((error as Error).message !== "fetch failed") throw error;
    return `(retried after: ${(error as Error).message})\n${await prepareIn(persistence, databases, noteFile, { ...note, ...wanted }, true)}`;
  }
}

async function prepareIn(persistence: string, databases: { binding: string; localId: string }[], noteFile: string, note: Record<string, string[]>, mayApplyFiles: boolean): Promise<string> {
  const { convertV4MiniflareOptions, Miniflare } = await import("miniflare");
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: "",
      // No Request.cf from the network: nothing here reads it.
      cf: false,
      resourcePersistencePath: persistence,
      d1Databases: Object.fromEntries(databases.map(({ binding, localId }) => [binding, localId])),
    }),
  );
  // wrangler's statement splitter, for migration files: loading wrangler takes seconds, so only
  // when a database may lack a migration its snapshot does not cover, and before the runtime
  // starts (a long load while connected to it lost the connection).
  const loaded = mayApplyFiles ? (await import("wrangler")).unstable_splitSqlQuery : undefined;
  const split = async () => loaded ?? (await import("wrangler")).unstable_splitSqlQuery;
  try {
    // One after the other: two batches at once through Miniflare's proxy lost workerd's connection.
    const lines: string[] = [];
    for (const { binding } of databases) lines.push(await prepare(await miniflare.getD1Database(binding), binding, split));
    mkdirSync(dirname(noteFile), { recursive: true });
    writeFileSync(noteFile, JSON.stringify(note, null, 2));
    return lines.join("\n");
  } finally {
    await miniflare.dispose();
  }
}
