// `npm start`: the service on the embedded local D1, R2, Durable Objects and Queues, with
// migrations applied, a demo panel whose key is printed, and the per-minute cron fired
// (wrangler dev does not fire Cron Triggers by itself).
//
// A fresh local database is made from its schema snapshot in one step, and only the migrations
// newer than it are applied (scripts/local-databases.ts); the panel is built only when a file it
// is made of changed (scripts/panel-build.ts). Both happen at once, before wrangler dev starts.
//
//   npm start                      default region on http://127.0.0.1:8787 (PORT overrides)
//   npm start -- --env india       India region, by default on port 8788
//   npm start -- --no-build        serve the panel as last built (web/dist), even if its sources changed
//   EMAIL_PROVIDER=ses npm start   another email provider; DOH_URL=… another DNS-over-HTTPS resolver
//
// STATE_DIR=<dir> keeps the local D1, R2, Durable Objects and the demo panel's details there
// instead of .wrangler/ (the end-to-end tests start a service of their own on fresh state).
// INSPECTOR_PORT=<port> gives wrangler dev's devtools inspector that port instead of the first
// free one from 9229: two services starting at once would both pick 9229, and one would fail to
// bind it (the end-to-end tests pass a free port of their own).
// DEV_VARS=<file> reads the local secrets from that file instead of .dev.vars (.dev.vars.india
// for --env india when it exists), as the end-to-end tests do.
//
// It prints what a person needs (the address, the demo panel's owner, key and client id as an
// export line for the shell, a curl line), then one line per request; the output of wrangler
// and of the panel's build goes to the log file it names.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { prepareLocalDatabases } from "./local-databases.ts";
import { panelUpToDate } from "./panel-build.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const envIndex = process.argv.indexOf("--env");
const region = envIndex > 0 ? (process.argv[envIndex + 1] ?? "") : "";
const port = Number(process.env.PORT ?? (region === "india" ? 8788 : 8787));
const origin = `http://127.0.0.1:${port}`;
const envArgs = region ? ["--env", region] : ["--env", ""];
const stateDir = process.env.STATE_DIR;
const persistArgs = stateDir ? ["--persist-to", stateDir] : [];
const inspectorArgs = process.env.INSPECTOR_PORT ? ["--inspector-port", process.env.INSPECTOR_PORT] : [];
// Links in sent email (tracking, unsubscribe) point at the service as it runs, on this port.
// EMAIL_PROVIDER and DOH_URL in the environment replace wrangler.toml's (a local DNS stand-in,
// or a look at what the panel says when real email is configured).
const varArgs = [
  "--var",
  `PUBLIC_BASE_URL:${origin}`,
  // Transactional mail (password resets...) kept and linked from the log: local only, never deployed.
  "--var",
  "LOCAL_MAILBOX:true",
  ...(["EMAIL_PROVIDER", "DOH_URL"] as const).flatMap((name) => (process.env[name] ? ["--var", `${name}:${process.env[name]}`] : [])),
];
const logFile = join(stateDir ?? join(root, ".wrangler"), `dev${region ? `.${region}` : ""}.log`);

mkdirSync(dirname(logFile), { recursive: true });
writeFileSync(logFile, `npm start ${new Date().toISOString()}\n`);
const log = (text: string) => appendFileSync(logFile, text);

/** The local secrets: what wrangler dev would read (.dev.vars, or .dev.vars.<env> when it exists), or DEV_VARS. */
function localVars(): Record<string, string> {
  const regional = join(root, `.dev.vars.${region}`);
  const file = process.env.DEV_VARS ?? (region && existsSync(regional) ? regional : join(root, ".dev.vars"));
  if (!existsSync(file)) {
    // Copied aside and renamed into place: two starts at once on a fresh clone (the end-to-end
    // tests) would otherwise read a file the other is still writing, and lose ADMIN_TOKEN.
    const making = `${file}.${process.pid}.tmp`;
    copyFileSync(join(root, ".dev.vars.example"), making);
    renameSync(making, file);
    console.log(`Created ${relative(root, file)} with the local defaults from .dev.vars.example`);
  }
  // The dotenv syntax wrangler reads (quotes, comments, `export`).
  return parseEnv(readFileSync(file, "utf8")) as Record<string, string>;
}

async function applyMigrations(): Promise<void> {
  // The control database and every shard of the region, with the shards' id floors.
  try {
    log(`${await prepareLocalDatabases(region, stateDir)}\n`);
  } catch (error) {
    log(`${(error as Error).stack}\n`);
    throw new Error(`making the local D1 databases failed: ${(error as Error).message}; see ${logFile}`);
  }
}

/** The panel's static files, served by the same Worker through [assets] (web/dist); kept when nothing they are made of changed. */
async function buildPanel(): Promise<void> {
  if (process.argv.includes("--no-build") || panelUpToDate()) return log("panel: web/dist kept\n");
  const child = spawn(process.execPath, [join(root, "scripts", "panel-build.ts")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.on("data", (chunk) => log(String(chunk)));
  child.stderr.on("data", (chunk) => log(String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`building the panel failed; see ${logFile}`);
}

/**
 * wrangler's request lines (`[wrangler:info] POST /apiv2 200 OK (12ms)`) without its prefix and
 * colours; null for everything else it prints, and for the script's own health polls and cron
 * ticks.
 */
function requestLine(line: string): string | null {
  const plain = line.replace(/\x1b\[[0-9;]*m/g, "").trim();
  // The Worker's link to each transactional mail it sent (services/channels/mailer.ts, LOCAL_MAILBOX).
  const mail = /(Local mailbox: .*https?:\/\/\S+)/.exec(plain);
  if (mail) return mail[1]!;
  const match = /^\[wrangler:info\]\s+([A-Z]+ \S+ \d{3}\b.*)$/.exec(plain);
  if (!match || /^GET \/(health|__scheduled)\b/.test(match[1]!)) return null;
  return match[1]!;
}

let ready = false;

/** Sends a child's output to the log file, echoing its request lines once the service is ready. */
function follow(stream: NodeJS.ReadableStream): void {
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    log(chunk);
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const request = ready ? requestLine(line) : null;
      if (request) console.log(`${new Date().toISOString().slice(11, 19)}  ${request}`);
    }
  });
}

async function waitForHealth(): Promise<void> {
  for (let attempt = 0; attempt < 120; attempt++) {
    try {
      if ((await fetch(`${origin}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the Worker did not answer at ${origin}/health`);
}

interface Demo {
  panel_id: string;
  api_key: string;
  client_id: string;
  owner_email?: string;
  owner_password?: string;
}

async function adminCall(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** The demo panel's owner, who signs in to the panel; the admin token creates a panel's first owner. */
async function addDemoOwner(token: string, panelId: string): Promise<{ owner_email: string; owner_password: string }> {
  const owner_password = randomBytes(12).toString("base64url");
  // A fresh address each time: an operator that exists keeps the password it has.
  const owner_email = `owner-${randomBytes(3).toString("hex")}@example.com`;
  const added = await adminCall(token, "POST", `/panels/${panelId}/operators`, { email: owner_email, password: owner_password, role: "owner", name: "Demo owner" });
  if (added.status !== 201) throw new Error(`creating the demo owner failed: ${added.status} ${JSON.stringify(added.body)}`);
  return { owner_email, owner_password };
}

/**
 * What the README's examples need in the demo panel: a list (the first example adds a contact
 * to list 1) and the add_to_cart activity (the single-activity example posts activity 1).
 */
async function addDemoContent(token: string, demo: Demo): Promise<void> {
  const envelope = `${origin}/apiv2?type=lists&activity=add&apikey=${encodeURIComponent(demo.api_key)}`;
  const list = await fetch(envelope, { method: "POST", body: new URLSearchParams({ listname: "Demo list", desc: "Made by npm start" }) });
  if (!list.ok) throw new Error(`creating the demo list failed: ${await list.text()}`);
  const activity = await adminCall(token, "POST", `/panels/${demo.panel_id}/activities`, {
    name: "add_to_cart",
    params: { name: "string", prid: "integer", price: "float", prqt: "integer" },
  });
  if (activity.status !== 201) throw new Error(`defining the demo activity failed: ${activity.status} ${JSON.stringify(activity.body)}`);
}

/** Reuses the demo panel of an earlier start when the local data still has it. */
async function ensureDemoPanel(token: string): Promise<Demo> {
  const file = join(stateDir ?? join(root, ".wrangler"), `demo-panel${region ? `.${region}` : ""}.json`);
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as Demo;
    if ((await adminCall(token, "GET", `/panels/${saved.panel_id}`)).status === 200) {
      if (!saved.owner_password) {
        Object.assign(saved, await addDemoOwner(token, saved.panel_id));
        writeFileSync(file, JSON.stringify(saved, null, 2));
      }
      return saved;
    }
  }
  const panel = await adminCall(token, "POST", "/panels", { name: "Demo" });
  if (panel.status !== 201) throw new Error(`creating the demo panel failed: ${panel.status} ${JSON.stringify(panel.body)}`);
  await adminCall(token, "PATCH", `/panels/${panel.body.id}`, { api_mode: true });
  const user = await adminCall(token, "POST", `/panels/${panel.body.id}/users`, { email: "demo@example.com", name: "Demo" });
  const demo: Demo = { panel_id: panel.body.id, api_key: user.body.api_key, client_id: panel.body.client_id, ...(await addDemoOwner(token, panel.body.id)) };
  await addDemoContent(token, demo);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(demo, null, 2));
  return demo;
}

const vars = localVars();
// With [secrets] declared in wrangler.toml, wrangler dev takes from .dev.vars only the secrets
// listed as required there, and the optional ones (SES_*, which a deploy without SES does not
// have) would never reach the Worker. So every key of the file is handed over with --var, which
// wins over what wrangler reads itself; placed before the --var's above so that those win. Like
// the copy wrangler gives workerd's environment, the values show in local process listings.
const devVarArgs = Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
console.log(`Starting the service (region ${region || "default"}); wrangler's output goes to ${logFile}`);
await Promise.all([buildPanel(), applyMigrations()]).catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});
const dev = spawn(
  process.execPath,
  [wrangler, "dev", "--ip", "127.0.0.1", "--port", String(port), "--test-scheduled", "--show-interactive-dev-session=false", ...devVarArgs, ...varArgs, ...persistArgs, ...inspectorArgs, ...envArgs],
  // The secrets are the file's only: without .dev.vars (DEV_VARS elsewhere), wrangler would read
  // .env and take same-named keys from this process's environment.
  { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FORCE_COLOR: "0", CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "false" } },
);
follow(dev.stdout!);
follow(dev.stderr!);
let stopping = false;
const stop = () => {
  stopping = true;
  dev.kill("SIGINT");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
dev.on("exit", (code) => {
  if (stopping) process.exit(0);
  console.error(`wrangler stopped (exit code ${code}); its output is in ${logFile}`);
  process.exit(code || 1);
});

await waitForHealth().catch((error: Error) => {
  console.error(`${error.message}; wrangler's output is in ${logFile}`);
  stop();
  process.exit(1);
});
// Fire the per-minute Cron Trigger locally, as production does. The first tick comes at once:
// after a restart, overdue timers and work a crash left behind must not wait a further minute.
const tick = () => fetch(`${origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(() => undefined);
void tick();
setInterval(tick, 60_000);
const demo = await ensureDemoPanel(vars.ADMIN_TOKEN ?? "");
// What happens to campaign and journey email, in the Worker's own words (the panel's home shows the same).
const { email } = (await adminCall(vars.ADMIN_TOKEN ?? "", "GET", `/panels/${demo.panel_id}/overview`)).body;
const emailLine = email.problem
  ? `${email.provider}: ${email.problem}`
  : email.real_email
    ? `${email.provider}: real email is sent`
    : `${email.provider}: each message is kept (R2 + D1, the panel's outbox), none is sent`;
ready = true;
if (email.problem) console.warn(`\nWarning: EMAIL_PROVIDER is ${email.provider}, but ${email.problem}: no campaign or journey email is sent until it is fixed.`);
console.log(`
Service ready at ${origin} (region ${region || "default"})
  panel        ${origin}/
  owner email  ${demo.owner_email}
  password     ${demo.owner_password}
  demo panel   ${demo.panel_id}
  API key      ${demo.api_key}
  client id    ${demo.client_id}
  admin token  ${vars.ADMIN_TOKEN}
  email        ${emailLine}

  export KEY=${demo.api_key} CLIENT_ID=${demo.client_id} PANEL=${demo.panel_id}

  curl -X POST "${origin}/apiv2?type=contact&activity=add&apikey=$KEY" \\
       --data-urlencode 'data={"EMAIL":"ada@example.com","NAME":"Ada","AGE":36}' --data listid=1

Requests:`);
