// A database's schema snapshot (migrations/schema/<database>.sql): the tables, indexes, triggers
// and seed rows its migrations leave, in one readable file (decision: listmonk's schema.sql beside
// its migrations). `npm run schema` writes it (scripts/schema.ts), `npm test` fails when it is
// stale, scripts/check-shards.ts reads the shard tables from it, and a fresh local database is
// made from it in one batch (scripts/local-databases.ts, `npm start`).
//
// The file is a list of blocks separated by a blank line: comment blocks (`-- ...`) and one SQL
// statement per block (blank lines inside a statement are left out when it is written), so
// reading it back needs no SQL parser. Its `-- migration <name>` lines name every migration it
// covers: a database made from it records them in wrangler's d1_migrations table, so a later
// `wrangler d1 migrations apply` applies only the migrations written after it.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";

export const root = join(import.meta.dirname, "..");

export interface Database {
  /** The word in the file name and the header: control, shard. */
  name: string;
  /** Where its migrations live, relative to the repository (wrangler.toml's migrations_dir). */
  migrationsDir: string;
  /** Its snapshot, relative to the repository. */
  snapshot: string;
  /** What it is, for the snapshot's header. */
  what: string;
}

export const DATABASES: readonly Database[] = [
  { name: "control", migrationsDir: "migrations", snapshot: "migrations/schema/control.sql", what: "The control database (binding DB)" },
  { name: "shard", migrationsDir: "migrations/shard", snapshot: "migrations/schema/shard.sql", what: "Every shard (bindings SHARD_0, SHARD_1, ...)" },
];

/** The migration files of a directory in the order wrangler applies them (`<dir>/*.sql`, by name). */
export function migrationNames(migrationsDir: string): string[] {
  return readdirSync(join(root, migrationsDir))
    .filter((name) => name.endsWith(".sql"))
    .sort();
}

/** The SQL statements of a snapshot, in order (its comment blocks left out). */
export function snapshotStatements(text: string): string[] {
  return text
    .split(/\n[ \t]*\n/)
    .map((block) => block.trim())
    .filter((block) => block !== "" && !block.split("\n").every((line) => line.trimStart().startsWith("--")));
}

/** The migrations a snapshot covers (its `-- migration <name>` lines). */
export function snapshotMigrations(text: string): string[] {
  return [...text.matchAll(/^-- migration (\S+)$/gm)].map((match) => match[1]!);
}

export function readSnapshot(database: Database): string {
  return readFileSync(join(root, database.snapshot), "utf8");
}

/**
 * An in-memory SQLite database holding a snapshot's schema (and seed rows). node:sqlite is
 * loaded here only (still experimental in Node 22: `npm start` imports this file and prints
 * no warning).
 */
export async function openSnapshot(text: string): Promise<DatabaseSync> {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(":memory:");
  for (const statement of snapshotStatements(text)) db.exec(statement);
  return db;
}

/** The snapshot's tables with their CREATE TABLE statement as SQLite keeps it. */
export function snapshotTables(db: DatabaseSync): { name: string; sql: string }[] {
  return db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string; sql: string }[];
}
