// A stand-in of wrangler for test/node/deploy.test.ts (`WRANGLER=test/node/fake-wrangler.ts`): it
// answers the commands scripts/deploy.ts and scripts/migrate.ts run, the way wrangler 4.155
// prints them, from an account kept in a JSON file (FAKE_WRANGLER_STATE), and records each
// command line there. It checks what Cloudflare would: a database exists before it is migrated,
// and a deploy finds its databases, bucket, queues and required secrets.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** What the stand-in needs to know of each environment's configuration (the test gives it). */
export interface FakeEnvironment {
  worker: string;
  databases: Record<string, string>;
  bucket: string;
  queues: string[];
  required: string[];
}

export interface FakeState {
  d1: { name: string; uuid: string; location?: string }[];
  r2: { name: string; location?: string }[];
  queues: string[];
  /** Deployed Workers by name: their secrets (values, as Cloudflare keeps them) and deploy count. */
  workers: Record<string, { secrets: Record<string, string>; deploys: number }>;
  /** Databases (by name) whose migrations were applied. */
  migrated: string[];
  environments: Record<string, FakeEnvironment>;
  /** Queues one page of `queues list` shows. */
  queuePageSize: number;
  /** A command line (its words joined by spaces) starting with this fails as an API error would. */
  failOn?: string;
  calls: string[][];
}

const root = join(import.meta.dirname, "..", "..");
const stateFile = process.env.FAKE_WRANGLER_STATE!;
const state = JSON.parse(readFileSync(stateFile, "utf8")) as FakeState;
const argv = process.argv.slice(2);
state.calls.push(argv);
const save = () => writeFileSync(stateFile, JSON.stringify(state, null, 2));

function option(name: string): string | undefined {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
}

function fail(message: string): never {
  save();
  process.stderr.write(`\n✘ [ERROR] ${message}\n\n`);
  process.exit(1);
}

function table(rows: Record<string, string>[]): string {
  if (rows.length === 0) return "┌┐\n└┘";
  const head = Object.keys(rows[0]!);
  const line = (cells: string[]) => `│ ${cells.join(" │ ")} │`;
  return ["┌─┐", line(head), "├─┤", ...rows.map((row) => line(head.map((key) => row[key]!))), "└─┘"].join("\n");
}

const positional = argv.filter((arg, i) => !arg.startsWith("--") && !argv[i - 1]?.startsWith("--"));
const env = option("--env") ?? "";
const environment = state.environments[env];
const words = argv.join(" ");

if (state.failOn && words.startsWith(state.failOn)) fail("A request to the Cloudflare API (/accounts/test/…) failed.\n  Authentication error [code: 10000]");

const [group, action, name] = positional;
if (group === "d1" && action === "list") {
  console.log(JSON.stringify(state.d1.map((db) => ({ uuid: db.uuid, name: db.name, created_at: "2026-11-29T00:00:00Z", version: "production" })), null, 2));
} else if (group === "d1" && action === "create") {
  state.d1.push({ name: name!, uuid: `uuid-${state.d1.length + 1}`, location: option("--location") });
  console.log(`✅ Successfully created DB '${name}'\nCreated your new D1 database.\n\n[[d1_databases]]\nbinding = "${name}"\ndatabase_name = "${name}"\ndatabase_id = "uuid-${state.d1.length}"`);
} else if (group === "d1" && (action === "migrations" || action === "execute")) {
  // `d1 migrations apply <binding>` / `d1 execute <binding>`: the binding's database by name, as wrangler looks it up.
  const binding = action === "migrations" ? positional[3]! : name!;
  const database = environment?.databases[binding];
  if (!database || !state.d1.some((db) => db.name === database)) fail(`Couldn't find a D1 DB named '${database}' (bound as '${binding}') in the API. Run 'wrangler d1 create ${database}' to create it.`);
  if (action === "migrations") {
    if (state.migrated.includes(database)) console.log("✅ No migrations to apply!");
    else {
      const files = readdirSync(join(root, binding === "DB" ? "migrations" : "migrations/shard")).filter((file) => file.endsWith(".sql"));
      console.log(`Migrations to be applied:\n${table(files.map((file) => ({ name: file })))}\n${files.map((file) => `🌀 Applying ${file}\n✅ ${file}`).join("\n")}`);
      state.migrated.push(database);
    }
  } else console.log("🚣 Executed 1 command");
} else if (group === "r2" && action === "bucket" && positional[2] === "list") {
  console.log(`Listing buckets...\n${state.r2.map((bucket) => `name:           ${bucket.name}\ncreation_date:  2026-11-29T00:00:00.000Z`).join("\n\n")}`);
} else if (group === "r2" && action === "bucket" && positional[2] === "create") {
  state.r2.push({ name: positional[3]!, location: option("--location") });
  console.log(`Creating bucket '${positional[3]}'...\n✅ Created bucket '${positional[3]}' with default storage class of Standard.`);
} else if (group === "queues" && action === "list") {
  const page = Number(option("--page") ?? "1");
  const shown = state.queues.slice((page - 1) * state.queuePageSize, page * state.queuePageSize);
  console.log(table(shown.map((queue, i) => ({ id: `q${i}`, name: queue, created_on: "2026-11-29", modified_on: "2026-11-29", producers: "0", consumers: "0" }))));
} else if (group === "queues" && action === "create") {
  state.queues.push(name!);
  console.log(`🌀 Creating queue '${name}'\n✅ Created queue '${name}'`);
} else if (group === "secret" && action === "list") {
  const worker = state.workers[environment!.worker];
  if (!worker) fail(`Worker "${environment!.worker}"${env ? ` (env: ${env})` : ""} not found.\n\nIf this is a new Worker, run \`wrangler deploy\` first to create it.\nOtherwise, check that the Worker name is correct and you're logged into the right account.`);
  console.log(JSON.stringify(Object.keys(worker.secrets).map((secret) => ({ name: secret, type: "secret_text" })), null, "  "));
} else if (group === "deploy") {
  const { worker: workerName, databases, bucket, queues, required } = environment!;
  for (const database of Object.values(databases)) if (!state.d1.some((db) => db.name === database)) fail(`Couldn't find a D1 DB named '${database}'`);
  if (!state.r2.some((candidate) => candidate.name === bucket)) fail(`R2 bucket '${bucket}' not found`);
  for (const queue of queues) if (!state.queues.includes(queue)) fail(`Queue "${queue}" does not exist.`);
  const file = option("--secrets-file");
  const given = file ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, string>) : {};
  const secrets = { ...state.workers[workerName]?.secrets, ...given };
  const missing = required.filter((secret) => !(secret in secrets));
  if (missing.length) fail(`The following required secrets have not been set: ${missing.join(", ")}`);
  state.workers[workerName] = { secrets, deploys: (state.workers[workerName]?.deploys ?? 0) + 1 };
  const url = `https://${workerName}.test-account.workers.dev`;
  writeFileSync(process.env.WRANGLER_OUTPUT_FILE_PATH!, `${JSON.stringify({ type: "deploy", version: 1, worker_name: workerName, targets: [url, "schedule: * * * * *"] })}\n`);
  console.log(`Uploaded ${workerName} (1.00 sec)\nDeployed ${workerName} triggers (0.50 sec)\n  ${url}\n  schedule: * * * * *\nCurrent Version ID: v${state.workers[workerName].deploys}`);
} else fail(`the stand-in does not know \`wrangler ${words}\``);
save();
