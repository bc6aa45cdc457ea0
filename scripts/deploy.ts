// `npm run deploy -- --env <name>`: makes what a region's deployment lacks, then deploys it
// (docs/operations.md "Deploying", decision 0046). With wrangler's own commands, in this order:
//
//   1. the panel's build (web/dist), unless it is up to date or --no-build is given
//   2. the Worker's secrets: `wrangler secret list`; each required one it lacks is asked for once
//      (ADMIN_TOKEN; with EMAIL_PROVIDER=ses the SES credentials) or, SECRETS_KEY, generated.
//      A value in this process's environment (ADMIN_TOKEN=… npm run deploy …) is taken instead of
//      asking. They go up with the deploy (`wrangler deploy --secrets-file`, a file only this
//      user can read, removed afterwards), never on a command line and never printed.
//   3. the D1 databases (control database and every shard of the environment):
//      `wrangler d1 list --json`, `wrangler d1 create <name> [--location <hint>]` for each missing
//   4. the R2 bucket: `wrangler r2 bucket list`, `wrangler r2 bucket create`
//   5. the queues, the dead-letter queue last: `wrangler queues list`, `wrangler queues create`
//   6. the remote migrations of every database (scripts/migrate.ts, as `npm run migrate -- --remote`)
//   7. `wrangler deploy`; prints the Worker's URL
//
// Everything is looked up first, so a second run creates nothing, asks nothing and applies no
// migration (it uploads the same Worker again). A step that fails stops the run with the command
// and what wrangler said; what was made before it stays and is found by the next run.
//
//   npm run deploy -- --env default       the default region (wrangler.toml's top level)
//   npm run deploy -- --env india         the India region ([env.india])
//   --location <hint>                     location hint of new D1 databases and the R2 bucket
//                                         (default: LOCATIONS below, none for the default region)
//   --no-build                            deploy web/dist as last built
//
// `WRANGLER=<path>` runs another wrangler (tests: test/node/fake-wrangler.ts).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { fileURLToPath } from "node:url";
import { applyAllMigrations, wranglerCommand } from "./migrate.ts";
import { panelUpToDate } from "./panel-build.ts";

const root = join(import.meta.dirname, "..");

/** Where each environment's new databases and bucket are placed (CONTRACT 1: India data stays in the India deployment). */
const LOCATIONS: Record<string, string> = { india: "apac" };

/** Secrets the Worker reads besides wrangler.toml's required ones, by the vars that make them needed (src/lib/config.ts). */
const SES_SECRETS = ["SES_ACCESS_KEY_ID", "SES_SECRET_ACCESS_KEY"];

/** What one environment's deployment is made of, as wrangler reads wrangler.toml. */
export interface Plan {
  /** wrangler's --env value: "" for the top level. */
  env: string;
  worker: string;
  location: string | undefined;
  databases: { binding: string; name: string }[];
  buckets: string[];
  queues: string[];
  secrets: string[];
  /** The origin links in sent email are written with (vars.PUBLIC_BASE_URL). */
  publicBaseUrl: string;
}

/** The part of wrangler's configuration read here (wrangler's own types of it are not published). */
interface WranglerConfig {
  name?: string;
  d1_databases: { binding: string; database_name?: string }[];
  r2_buckets: { bucket_name?: unknown }[];
  queues: { producers?: { queue: string }[]; consumers?: { queue: string; dead_letter_queue?: string }[] };
  vars: Record<string, unknown>;
  secrets?: { required?: string[] };
}

/** A step that failed; its message says which and what wrangler answered. */
export class DeployError extends Error {}

/** The environments wrangler.toml defines: "default" (its top level) and each [env.<name>]. */
async function environments(): Promise<string[]> {
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config: join(root, "wrangler.toml") }) as { rawConfig: { env?: Record<string, unknown> } };
  return ["default", ...Object.keys(rawConfig.env ?? {})];
}

/** Reads one environment's resources through wrangler's own configuration reader. */
export async function readPlan(name: string, location?: string): Promise<Plan> {
  const known = await environments();
  if (!known.includes(name)) throw new DeployError(`--env ${JSON.stringify(name)} is not an environment of wrangler.toml; it has ${known.join(", ")}`);
  const env = name === "default" ? "" : name;
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: join(root, "wrangler.toml"), env: env || undefined }) as WranglerConfig;
  const databases = config.d1_databases.map(({ binding, database_name }) => {
    if (!database_name) throw new DeployError(`wrangler.toml: the D1 binding ${binding} of --env ${name} has no database_name`);
    return { binding, name: database_name };
  });
  const buckets = config.r2_buckets.flatMap(({ bucket_name }) => (typeof bucket_name === "string" ? [bucket_name] : []));
  const consumers = config.queues.consumers ?? [];
  const queues = [
    ...(config.queues.producers ?? []).map((producer) => producer.queue),
    ...consumers.map((consumer) => consumer.queue),
    // Dead-letter queues last: they have no producer binding, so wrangler's own provisioning never makes them.
    ...consumers.flatMap((consumer) => (consumer.dead_letter_queue ? [consumer.dead_letter_queue] : [])),
  ];
  const secrets = [...(config.secrets?.required ?? []), ...(config.vars.EMAIL_PROVIDER === "ses" ? SES_SECRETS : [])];
  return {
    env,
    worker: config.name ?? "",
    location: location ?? LOCATIONS[env],
    databases,
    buckets: [...new Set(buckets)],
    queues: [...new Set(queues)].sort((a, b) => Number(queueIsDeadLetter(consumers, a)) - Number(queueIsDeadLetter(consumers, b))),
    secrets: [...new Set(secrets)],
    publicBaseUrl: String(config.vars.PUBLIC_BASE_URL ?? ""),
  };
}

function queueIsDeadLetter(consumers: { dead_letter_queue?: string }[], queue: string): boolean {
  return consumers.some((consumer) => consumer.dead_letter_queue === queue);
}

/** What a run of wrangler printed. */
interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs wrangler with `args`, without prompts (CI=1); `env` adds to this process's environment. */
function wrangler(command: string[], args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const [program, ...prefix] = command;
  return new Promise((resolve) => {
    const child = spawn(program!, [...prefix, ...args], { cwd: root, env: { ...process.env, CI: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", (error) => resolve({ code: -1, stdout, stderr: `${stderr}${error.message}` }));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The end of what wrangler printed, for an error message. */
function tail(text: string, lines = 15): string {
  return stripVTControlCharacters(text)
    .trim()
    .split("\n")
    .slice(-lines)
    .map((line) => `  | ${line}`)
    .join("\n");
}

function failed(step: string, args: string[], ran: Ran): DeployError {
  return new DeployError(`${step} failed: \`wrangler ${args.map((arg) => (arg === "" ? '""' : arg)).join(" ")}\` exited with ${ran.code}:\n${tail(`${ran.stdout}\n${ran.stderr}`)}`);
}

/** The JSON value wrangler printed, past any warning line before it or note after it. */
function printedJson(step: string, text: string): unknown {
  const plain = stripVTControlCharacters(text);
  const start = plain.search(/^[[{]/m);
  const end = Math.max(plain.lastIndexOf("]"), plain.lastIndexOf("}"));
  try {
    return JSON.parse(plain.slice(start, end + 1));
  } catch {
    throw new DeployError(`${step}: wrangler's answer is not the JSON expected:\n${tail(text)}`);
  }
}

/** The names in `wrangler r2 bucket list`'s output ("name:  <bucket>" per bucket). */
function bucketNames(text: string): string[] {
  return [...stripVTControlCharacters(text).matchAll(/^name:\s+(\S+)\s*$/gm)].map((match) => match[1]!);
}

/** The "name" column of `wrangler queues list`'s table. */
function queueNames(text: string): string[] {
  const rows = stripVTControlCharacters(text)
    .split("\n")
    .filter((line) => line.startsWith("│"))
    .map((line) => line.split("│").slice(1, -1).map((cell) => cell.trim()));
  const column = rows[0]?.indexOf("name") ?? -1;
  return column < 0 ? [] : rows.slice(1).map((row) => row[column] ?? "").filter(Boolean);
}

/** Reads a value typed at the terminal without echoing it. */
function askHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const input = process.stdin;
    process.stderr.write(question);
    input.setRawMode(true);
    input.resume();
    let value = "";
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n") {
          done();
          return resolve(value);
        }
        if (char === "\u0003") {
          done();
          return reject(new DeployError("stopped at the prompt (Ctrl-C)"));
        }
        value = char === "\u007f" || char === "\b" ? value.slice(0, -1) : value + char;
      }
    };
    const done = () => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write("\n");
    };
    input.on("data", onData);
  });
}

/** The value of a secret the Worker lacks: generated (SECRETS_KEY), from this process's environment, or asked for. */
async function secretValue(name: string, worker: string): Promise<{ value: string; source: string }> {
  // 32 random bytes, base64: the AES-GCM key src/lib/config.ts requires.
  if (name === "SECRETS_KEY") return { value: randomBytes(32).toString("base64"), source: "generated" };
  const given = process.env[name];
  if (given) return { value: given, source: "from the environment" };
  if (!process.stdin.isTTY) throw new DeployError(`${worker} has no ${name} yet: run this in a terminal to be asked for it, or put it in the environment (${name}=… npm run deploy -- …)`);
  for (;;) {
    const value = (await askHidden(`${name} for ${worker} (typed, not shown): `)).trim();
    if (value) return { value, source: "asked" };
    process.stderr.write(`${name} cannot be empty.\n`);
  }
}

/** The migration files wrangler named in its output of one database (applied, or to apply). */
function migrationFiles(text: string): string[] {
  return [...new Set([...stripVTControlCharacters(text).matchAll(/\b(\d{4}_[\w.-]+?\.sql)\b/g)].map((match) => match[1]!))];
}

/** The addresses the Worker answers on, from the deploy's record (WRANGLER_OUTPUT_FILE_PATH) or, without one, its output. */
function deployedUrls(outputFile: string, printed: string): string[] {
  const entries = existsSync(outputFile)
    ? readFileSync(outputFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { type?: string; targets?: string[] })
    : [];
  const targets = entries.find((entry) => entry.type === "deploy")?.targets ?? stripVTControlCharacters(printed).split("\n").map((line) => line.trim());
  return targets.flatMap((target) => {
    if (/^https?:\/\/\S+$/.test(target)) return [target];
    const domain = /^(\S+) \(custom domain\)$/.exec(target);
    return domain ? [`https://${domain[1]}`] : [];
  });
}

export interface Options {
  env: string;
  location?: string;
  build?: boolean;
  /** The wrangler to run (default: wranglerCommand(), node_modules' own or WRANGLER). */
  wrangler?: string[];
  log?: (line: string) => void;
}

/** Provisions what `env` lacks and deploys it; returns the Worker's URLs. Throws a DeployError at the first step that fails. */
export async function deploy(options: Options): Promise<{ created: string[]; urls: string[] }> {
  const command = options.wrangler ?? wranglerCommand();
  const log = options.log ?? ((line: string) => console.log(line));
  const run = async (step: string, args: string[], env?: Record<string, string>) => {
    const ran = await wrangler(command, args, env);
    if (ran.code !== 0) throw failed(step, args, ran);
    return ran;
  };
  const created: string[] = [];

  const plan = await readPlan(options.env, options.location);
  const envArgs = ["--env", plan.env];
  log(`Deploying ${plan.worker} (--env ${options.env})`);

  if (options.build !== false && !panelUpToDate()) {
    log("Panel: building web/dist");
    const built = await new Promise<Ran>((resolve) => {
      const child = spawn(process.execPath, [join(root, "scripts", "panel-build.ts")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (chunk) => (output += chunk));
      child.stderr.on("data", (chunk) => (output += chunk));
      child.on("close", (code) => resolve({ code: code ?? -1, stdout: output, stderr: "" }));
    });
    if (built.code !== 0) throw new DeployError(`the panel's build failed (node scripts/panel-build.ts):\n${tail(built.stdout)}`);
  }

  // Secrets first, so that the rest runs without anyone at the terminal.
  const listed = await wrangler(command, ["secret", "list", ...envArgs]);
  let existingSecrets: string[];
  if (listed.code === 0) existingSecrets = (printedJson("Listing the Worker's secrets", listed.stdout) as { name: string }[]).map((secret) => secret.name);
  else if (/not found/i.test(`${listed.stdout}\n${listed.stderr}`) && /new Worker/i.test(`${listed.stdout}\n${listed.stderr}`)) existingSecrets = [];
  else throw failed("Listing the Worker's secrets", ["secret", "list", ...envArgs], listed);
  const secrets: Record<string, string> = {};
  const secretNotes: string[] = [];
  for (const name of plan.secrets.filter((secret) => !existingSecrets.includes(secret))) {
    const { value, source } = await secretValue(name, plan.worker);
    secrets[name] = value;
    secretNotes.push(`${name} (${source})`);
  }
  log(`Secrets: ${secretNotes.length ? `${secretNotes.join(", ")} set with the deploy` : "all set"}${existingSecrets.length ? `; already set: ${plan.secrets.filter((s) => existingSecrets.includes(s)).join(", ")}` : ""}`);

  const locationArgs = plan.location ? ["--location", plan.location] : [];
  const where = plan.location ? ` (location ${plan.location})` : "";

  const d1 = await run("Listing D1 databases", ["d1", "list", "--json"]);
  const haveDatabases = new Set((printedJson("Listing D1 databases", d1.stdout) as { name: string }[]).map((database) => database.name));
  const newDatabases: string[] = [];
  for (const { name } of plan.databases) {
    if (haveDatabases.has(name)) continue;
    await run(`Creating the D1 database ${name}`, ["d1", "create", name, ...locationArgs]);
    newDatabases.push(name);
    created.push(`D1 database ${name}${where}`);
  }
  log(`D1: ${summary(newDatabases, plan.databases.map((database) => database.name), where)}`);

  const r2 = await run("Listing R2 buckets", ["r2", "bucket", "list"]);
  const haveBuckets = new Set(bucketNames(r2.stdout));
  const newBuckets: string[] = [];
  for (const bucket of plan.buckets) {
    if (haveBuckets.has(bucket)) continue;
    await run(`Creating the R2 bucket ${bucket}`, ["r2", "bucket", "create", bucket, ...locationArgs]);
    newBuckets.push(bucket);
    created.push(`R2 bucket ${bucket}${where}`);
  }
  log(`R2: ${summary(newBuckets, plan.buckets, where)}`);

  // `wrangler queues list` shows one page of the account's queues; read pages until one adds no name.
  const haveQueues = new Set<string>();
  for (let page = 1; page <= 100; page++) {
    const listedPage = await run("Listing queues", ["queues", "list", "--page", String(page)]);
    const names = queueNames(listedPage.stdout).filter((name) => !haveQueues.has(name));
    if (names.length === 0) break;
    for (const name of names) haveQueues.add(name);
  }
  const newQueues: string[] = [];
  for (const queue of plan.queues) {
    if (haveQueues.has(queue)) continue;
    await run(`Creating the queue ${queue}`, ["queues", "create", queue]);
    newQueues.push(queue);
    created.push(`queue ${queue}`);
  }
  log(`Queues: ${summary(newQueues, plan.queues, "")}`);

  const migrated = await applyAllMigrations(["--remote", ...envArgs], command);
  if (!migrated.ok) {
    const last = migrated.databases.at(-1);
    throw new DeployError(`Migrating ${last?.binding ?? "the databases"} failed (npm run migrate -- --remote --env ${JSON.stringify(plan.env)}):\n${tail(last?.output ?? migrated.output)}`);
  }
  log(
    `Migrations (remote): ${migrated.databases
      .map(({ binding, output }) => {
        const files = /No migrations to apply/i.test(output) ? [] : migrationFiles(output);
        if (files.length === 0) return `${binding} up to date`;
        return `${binding} applied ${files.length > 3 ? `${files.length} migrations (${files[0]} … ${files.at(-1)})` : files.join(", ")}`;
      })
      .join("; ")}`,
  );

  const scratch = mkdtempSync(join(tmpdir(), "apiv2-deploy-"));
  try {
    const outputFile = join(scratch, "wrangler-output.json");
    const args = ["deploy", ...envArgs];
    if (Object.keys(secrets).length) {
      const secretsFile = join(scratch, "secrets.json");
      writeFileSync(secretsFile, JSON.stringify(secrets), { mode: 0o600 });
      args.push("--secrets-file", secretsFile);
      created.push(...Object.keys(secrets).map((name) => `secret ${name}`));
    }
    const deployed = await run(`Deploying ${plan.worker}`, args, { WRANGLER_OUTPUT_FILE_PATH: outputFile });
    const urls = deployedUrls(outputFile, deployed.stdout);
    log(`Created: ${created.length ? created.join(", ") : "nothing (every resource and secret was there)"}`);
    log(`Deployed ${plan.worker}: ${urls.length ? urls.join(" ") : "no workers.dev address or custom domain (see its routes in wrangler.toml)"}`);
    // The Worker's address is known only now; links in sent email are written with PUBLIC_BASE_URL (docs/operations.md: addresses).
    if (urls.length && !urls.some((url) => new URL(url).origin === plan.publicBaseUrl.replace(/\/+$/, ""))) {
      log(`Note: PUBLIC_BASE_URL of --env ${options.env} is ${JSON.stringify(plan.publicBaseUrl)}: links in sent email point there. Set it to the address above (or your custom domain) in wrangler.toml and deploy again.`);
    }
    return { created, urls };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function summary(made: string[], all: string[], where: string): string {
  const there = all.filter((name) => !made.includes(name));
  return [made.length ? `created ${made.join(", ")}${where}` : "", there.length ? `already there: ${there.join(", ")}` : ""].filter(Boolean).join("; ") || "none configured";
}

/** `--name value` or `--name=value` from argv. */
function option(argv: string[], name: string): string | undefined {
  const at = argv.indexOf(name);
  if (at >= 0) return argv[at + 1];
  return argv.find((arg) => arg.startsWith(`${name}=`))?.slice(name.length + 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = process.argv.slice(2);
  const env = option(argv, "--env");
  try {
    if (env === undefined) throw new DeployError(`say which region: npm run deploy -- --env <name> (${(await environments()).join(", ")})`);
    await deploy({ env: env === "" ? "default" : env, location: option(argv, "--location"), build: !argv.includes("--no-build") });
  } catch (error) {
    if (!(error instanceof DeployError)) throw error;
    console.error(`\nDeploy stopped: ${error.message}\nWhat was made before this step stays; run the same command again once it is fixed.`);
    process.exit(1);
  }
}
