// `npm run migrate`: applies the migrations to every D1 database of a region, the control
// database DB (migrations/) and each shard SHARD_0 … SHARD_{N-1} (migrations/shard), as
// wrangler.toml binds them. Arguments go to `wrangler d1 migrations apply`:
//
//   npm run migrate                           local databases of the default region
//   npm run migrate -- --env india            local databases of the India region
//   npm run migrate -- --remote               the deployed databases (npm run deploy runs this)
//   npm run migrate -- --persist-to <dir>     local databases kept in <dir> (npm start's STATE_DIR)
//
// `WRANGLER=<path>` runs another wrangler in its place (tests: a stand-in, test/node/fake-wrangler.ts).
//
// Each shard SHARD_k with k ≥ 1 then gets its id floors (src/store/id-ranges.ts, decision 0030):
// its tables hand out ids from k * 2^40, unique across the region's shards. Applying them
// again changes nothing.
//
// `npm start` makes its local databases faster, from the schema snapshots
// (scripts/local-databases.ts); the result is the same.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { idFloorStatements, shardIndexOf } from "../src/store/id-ranges.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The wrangler command: node_modules' own, or the one WRANGLER names (a .js/.ts script run with
 * this Node, or an executable), which is how tests put a stand-in in its place.
 */
export function wranglerCommand(override = process.env.WRANGLER): string[] {
  if (!override) return [process.execPath, join(root, "node_modules", "wrangler", "bin", "wrangler.js")];
  return /\.[cm]?[jt]s$/.test(override) ? [process.execPath, resolve(override)] : [override];
}

/**
 * The D1 databases of a region in wrangler.toml, DB first: `[[d1_databases]]` or
 * `[[env.<region>.d1_databases]]`, each with the id its local copy is kept under (wrangler's:
 * preview_database_id, else database_id).
 */
export function d1Databases(region: string): { binding: string; localId: string }[] {
  const header = region ? `[[env.${region}.d1_databases]]` : "[[d1_databases]]";
  const blocks = readFileSync(join(root, "wrangler.toml"), "utf8").split(/^(?=\[)/m);
  const value = (block: string, key: string) => new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, "m").exec(block)?.[1];
  const databases = blocks
    .filter((block) => block.startsWith(header))
    .flatMap((block) => {
      const binding = value(block, "binding");
      return binding ? [{ binding, localId: value(block, "preview_database_id") ?? value(block, "database_id") ?? binding }] : [];
    });
  return databases.sort(({ binding: a }, { binding: b }) => (a === "DB" ? -1 : b === "DB" ? 1 : a.localeCompare(b, "en", { numeric: true })));
}

/** The D1 bindings of a region in wrangler.toml, DB first. */
export function d1Bindings(region: string): string[] {
  return d1Databases(region).map((database) => database.binding);
}

/** Runs `wrangler d1 <command…> <binding>` (local unless args say --remote); resolves with what it printed. */
function wranglerD1(wrangler: string[], command: string[], binding: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  const where = args.includes("--remote") || args.includes("--local") ? [] : ["--local"];
  const [program, ...prefix] = wrangler;
  return new Promise((resolve) => {
    const child = spawn(program!, [...prefix, "d1", ...command, binding, ...where, ...args], { cwd: root, env: { ...process.env, CI: "1" } });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolve({ ok: false, output: `${binding}:\n${error.message}` }));
    child.on("close", (code) => resolve({ ok: code === 0, output: `${binding}:\n${output}` }));
  });
}

/** Applies one binding's migrations and, for a shard past the first, its id floors (one `d1 execute`: one transaction). */
async function applyTo(binding: string, args: string[], wrangler: string[]): Promise<{ ok: boolean; output: string }> {
  const migrated = await wranglerD1(wrangler, ["migrations", "apply"], binding, args);
  const floors = idFloorStatements(shardIndexOf(binding) ?? 0);
  if (!migrated.ok || floors.length === 0) return migrated;
  const floored = await wranglerD1(wrangler, ["execute"], binding, [...args, "--command", floors.join(";\n")]);
  return { ok: floored.ok, output: `${migrated.output}\n${floored.output}` };
}

/**
 * Applies every database's migrations, one database after the other (local databases share
 * wrangler's state directory, which two at once would find locked); `args` are wrangler's
 * (--local or --remote, --env, --persist-to). Returns what wrangler printed, in all and per
 * database (up to the first that failed).
 */
export async function applyAllMigrations(args: string[], wrangler = wranglerCommand()): Promise<{ ok: boolean; output: string; databases: { binding: string; ok: boolean; output: string }[] }> {
  const envAt = args.indexOf("--env");
  const region = envAt >= 0 ? (args[envAt + 1] ?? "") : "";
  let output = "";
  const databases: { binding: string; ok: boolean; output: string }[] = [];
  for (const binding of d1Bindings(region)) {
    const result = await applyTo(binding, args, wrangler);
    output += `${result.output}\n`;
    databases.push({ binding, ...result });
    if (!result.ok) return { ok: false, output, databases };
  }
  return { ok: true, output, databases };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { ok, output } = await applyAllMigrations(process.argv.slice(2));
  console.log(output);
  if (!ok) process.exit(1);
}
