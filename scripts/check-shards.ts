// `npm run check:boundaries` (part of `npm test`): a panel's data is reached only through its
// shard. The tables of the shard's schema snapshot (migrations/schema/shard.sql) are a panel's
// data; store files outside CONTROL_FILES take a `ShardDb` (src/store/shards.ts), so `env.DB`
// cannot be passed to them (the type check refuses it); control store files take a `ControlDb`, which a `ShardDb` is not, and name no
// shard table; no file of src/ but src/store/shards.ts names a bare `D1Database` or turns a
// binding into a `ShardDb`; SQL is written in src/store alone. Every shard table with an
// `INTEGER PRIMARY KEY AUTOINCREMENT` id has its placeholder in src/store/id-ranges.ts, so each
// shard hands out its ids from its own range (decision 0030).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ID_RANGE_PLACEHOLDERS } from "../src/store/id-ranges.ts";
import { DATABASES, openSnapshot, readSnapshot, snapshotTables } from "./schema-snapshot.ts";

const root = join(import.meta.dirname, "..");
/** Store files over the control database (DB): panels and the directory, users, operators, sessions, dead letters. */
const CONTROL_FILES = new Set(["src/store/panels.ts", "src/store/users.ts", "src/store/operators.ts", "src/store/operator-sessions.ts", "src/store/dead-letters.ts", "src/store/panel-moves.ts", "src/store/panel-partitions.ts", "src/store/operations.ts", "src/store/sql.ts", "src/store/shards.ts"]);

function files(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

// The shard's tables as its schema snapshot has them (migrations/schema/shard.sql, `npm run
// schema`; `npm test` checks the snapshot against the migrations before this runs).
const shardSnapshot = DATABASES.find((database) => database.name === "shard")!;
const shardSchema = snapshotTables(await openSnapshot(readSnapshot(shardSnapshot)));
const shardTables = new Set(shardSchema.map((table) => table.name.toLowerCase()));
if (shardTables.size === 0) throw new Error(`${shardSnapshot.snapshot} names no table`);

/** Shard tables whose id AUTOINCREMENT hands out (their CREATE TABLE, comments left out). */
const autoincrementTables = shardSchema
  .filter((table) => /\bINTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b/i.test(table.sql.replace(/--[^\n]*/g, "")))
  .map((table) => table.name.toLowerCase());
const tableUse = new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\\s+(${[...shardTables].join("|")})\\b`, "gi");

const problems: string[] = [];
for (const table of autoincrementTables) {
  if (!(table in ID_RANGE_PLACEHOLDERS)) problems.push(`${shardSnapshot.snapshot}: ${table} has an INTEGER PRIMARY KEY AUTOINCREMENT id that src/store/id-ranges.ts does not cover (each shard hands out ids from its own range; add its placeholder row there)`);
}
for (const file of files("src")) {
  const path = relative(root, join(root, file)).split("\\").join("/");
  const text = readFileSync(join(root, file), "utf8");
  const lines = text.split("\n");
  const at = (index: number) => `${path}:${text.slice(0, index).split("\n").length}`;
  if (path.startsWith("src/store/")) {
    if (CONTROL_FILES.has(path)) {
      for (const match of text.matchAll(tableUse)) problems.push(`${at(match.index)}: control store file names the shard table ${match[1]} (a panel's data lives on its shard)`);
    }
  }
  if (path !== "src/store/shards.ts") {
    for (const match of text.matchAll(/\bD1Database\b/g)) problems.push(`${at(match.index)}: take a ShardDb (a panel's data) or a ControlDb (env.DB), not a bare D1Database`);
  }
  if (!path.startsWith("src/store/") && /\.prepare\(/.test(text)) {
    lines.forEach((line, i) => {
      if (/\.prepare\(/.test(line)) problems.push(`${path}:${i + 1}: SQL outside src/store`);
    });
  }
  if (path !== "src/store/shards.ts") {
    for (const match of text.matchAll(/\bas ShardDb\b|\bSHARD_\d|`SHARD_/g)) problems.push(`${at(match.index)}: only src/store/shards.ts turns a binding into a shard database`);
  }
}

if (problems.length) {
  console.error(`check:shards: ${problems.length} problem(s)\n${problems.join("\n")}`);
  process.exit(1);
}
console.log(`check:shards: ${shardTables.size} shard tables; every panel query goes through a shard`);
