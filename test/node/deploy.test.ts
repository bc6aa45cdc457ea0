// `npm run deploy` (scripts/deploy.ts) against a stand-in of wrangler (test/node/fake-wrangler.ts)
// that keeps a Cloudflare account in a JSON file: what a first run creates and in which order,
// that a second run creates nothing, that a partly made deployment gets only what it lacks, that
// no secret is printed or put on a command line, and that a failing step stops the run. The last
// test runs the real wrangler against a loopback stand-in of the Cloudflare API
// (CLOUDFLARE_API_BASE_URL), so that what the script reads of wrangler's output is wrangler's own.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { FakeEnvironment, FakeState } from "./fake-wrangler.ts";

const root = join(import.meta.dirname, "..", "..");
const scratch = mkdtempSync(join(tmpdir(), "deploy-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const QUEUES = ["imports", "events", "sends", "journeys", "cron", "dlq"];
/** What wrangler.toml configures per environment, as the stand-in's Cloudflare checks deploys against it. */
const environment = (region: string, worker: string): FakeEnvironment => ({
  worker,
  databases: { DB: `apiv2-${region}`, SHARD_0: `apiv2-${region}-shard-0`, SHARD_1: `apiv2-${region}-shard-1` },
  bucket: `apiv2-files-${region}`,
  queues: QUEUES.map((queue) => `apiv2-${queue}-${region}`),
  required: ["ADMIN_TOKEN", "SECRETS_KEY"],
});
const ENVIRONMENTS = { "": environment("default", "apiv2"), india: environment("india", "apiv2-india") };

let files = 0;
function account(state: Partial<FakeState> = {}): string {
  const file = join(scratch, `state-${++files}.json`);
  const full: FakeState = { d1: [], r2: [], queues: [], workers: {}, migrated: [], environments: ENVIRONMENTS, queuePageSize: 4, calls: [], ...state };
  writeFileSync(file, JSON.stringify(full));
  return file;
}
const read = (file: string) => JSON.parse(readFileSync(file, "utf8")) as FakeState;

/** Runs `node scripts/deploy.ts <args> --no-build` with the stand-in, not at a terminal; `env` adds to (or, undefined, removes from) its environment. */
function deploy(stateFile: string, args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    ADMIN_TOKEN: undefined,
    SES_ACCESS_KEY_ID: undefined,
    SES_SECRET_ACCESS_KEY: undefined,
    WRANGLER: join(root, "test", "node", "fake-wrangler.ts"),
    FAKE_WRANGLER_STATE: stateFile,
    ...env,
  };
  for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, "scripts", "deploy.ts"), ...args, "--no-build"], { cwd: root, env: childEnv as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A recorded command line, its secrets file and SQL replaced by placeholders. */
function commandLine(call: string[]): string {
  return call.map((word, i) => (call[i - 1] === "--secrets-file" ? "<file>" : call[i - 1] === "--command" ? "<sql>" : word === "" ? '""' : word)).join(" ");
}
const creations = (calls: string[][]) => calls.map(commandLine).filter((line) => / create /.test(` ${line} `));

const ADMIN_TOKEN = "admin-token-typed-by-the-operator";

describe("npm run deploy", () => {
  const india = account();

  test("a first run creates every resource, in order, sets the secrets with the deploy, migrates every database and prints the URL", async () => {
    const { code, stdout, stderr } = await deploy(india, ["--env", "india"], { ADMIN_TOKEN });
    assert.equal(code, 0, stderr);
    const state = read(india);
    assert.deepEqual(state.calls.map(commandLine), [
      "secret list --env india",
      "d1 list --json",
      "d1 create apiv2-india --location apac",
      "d1 create apiv2-india-shard-0 --location apac",
      "d1 create apiv2-india-shard-1 --location apac",
      "r2 bucket list",
      "r2 bucket create apiv2-files-india --location apac",
      "queues list --page 1",
      ...QUEUES.map((queue) => `queues create apiv2-${queue}-india`),
      "d1 migrations apply DB --remote --env india",
      "d1 migrations apply SHARD_0 --remote --env india",
      "d1 migrations apply SHARD_1 --remote --env india",
      "d1 execute SHARD_1 --remote --env india --command <sql>",
      "deploy --env india --secrets-file <file>",
    ]);
    assert.deepEqual(
      state.d1.map((db) => [db.name, db.location]),
      ["apiv2-india", "apiv2-india-shard-0", "apiv2-india-shard-1"].map((name) => [name, "apac"]),
    );
    const secrets = state.workers["apiv2-india"]!.secrets;
    assert.equal(secrets.ADMIN_TOKEN, ADMIN_TOKEN);
    assert.equal(Buffer.from(secrets.SECRETS_KEY!, "base64").length, 32, "SECRETS_KEY is 32 random bytes, base64");
    // Never printed, never on a command line, and the file that carried them is gone.
    for (const value of [ADMIN_TOKEN, secrets.SECRETS_KEY!]) {
      assert.ok(!stdout.includes(value) && !stderr.includes(value), "a secret's value was printed");
      assert.ok(!state.calls.flat().some((word) => word.includes(value)), "a secret's value was on a command line");
    }
    const secretsFile = state.calls.at(-1)![state.calls.at(-1)!.indexOf("--secrets-file") + 1]!;
    assert.ok(!existsSync(secretsFile), "the secrets file is removed after the deploy");
    assert.match(stdout, /Secrets: ADMIN_TOKEN \(from the environment\), SECRETS_KEY \(generated\) set with the deploy/);
    assert.match(stdout, /D1: created apiv2-india, apiv2-india-shard-0, apiv2-india-shard-1 \(location apac\)/);
    assert.match(stdout, /Queues: created apiv2-imports-india, apiv2-events-india, apiv2-sends-india, apiv2-journeys-india, apiv2-cron-india, apiv2-dlq-india/);
    assert.match(stdout, /Migrations \(remote\): DB applied \d+ migrations \(0001_foundation\.sql … \w+\.sql\); SHARD_0 applied \d+ migrations \(0001_panel_data\.sql … /);
    assert.match(stdout, /Deployed apiv2-india: https:\/\/apiv2-india\.test-account\.workers\.dev\n/);
    assert.match(stdout, /Note: PUBLIC_BASE_URL of --env india is "http:\/\/127\.0\.0\.1:8788": links in sent email point there\./);
  });

  test("a second run creates nothing, asks for nothing and applies no migration", async () => {
    const before = read(india);
    const { code, stdout, stderr } = await deploy(india, ["--env", "india"]);
    assert.equal(code, 0, stderr);
    const state = read(india);
    const calls = state.calls.slice(before.calls.length).map(commandLine);
    assert.deepEqual(calls, [
      "secret list --env india",
      "d1 list --json",
      "r2 bucket list",
      // Four queues a page: the account's six take two, the third adds none.
      "queues list --page 1",
      "queues list --page 2",
      "queues list --page 3",
      "d1 migrations apply DB --remote --env india",
      "d1 migrations apply SHARD_0 --remote --env india",
      "d1 migrations apply SHARD_1 --remote --env india",
      "d1 execute SHARD_1 --remote --env india --command <sql>",
      "deploy --env india",
    ]);
    assert.deepEqual(state.d1, before.d1);
    assert.deepEqual(state.queues, before.queues);
    assert.deepEqual(state.workers["apiv2-india"]!.secrets, before.workers["apiv2-india"]!.secrets);
    assert.match(stdout, /Secrets: all set; already set: ADMIN_TOKEN, SECRETS_KEY/);
    assert.match(stdout, /Migrations \(remote\): DB up to date; SHARD_0 up to date; SHARD_1 up to date/);
    assert.match(stdout, /Created: nothing \(every resource and secret was there\)/);
    assert.match(stdout, /Deployed apiv2-india: https:\/\/apiv2-india\.test-account\.workers\.dev/);
  });

  test("a partly made deployment gets only what it lacks; other resources of the account are left alone", async () => {
    const file = account({
      d1: [
        { name: "someone-elses", uuid: "u0" },
        { name: "apiv2-default", uuid: "u1" },
        { name: "apiv2-default-shard-0", uuid: "u2" },
      ],
      r2: [{ name: "apiv2-files-default" }],
      queues: ["apiv2-imports-default", "apiv2-events-default", "apiv2-sends-default"],
      workers: { apiv2: { secrets: { ADMIN_TOKEN: "set-before" }, deploys: 1 } },
      migrated: ["apiv2-default", "apiv2-default-shard-0"],
    });
    const { code, stdout, stderr } = await deploy(file, ["--env", "default"]);
    assert.equal(code, 0, stderr);
    const state = read(file);
    assert.deepEqual(creations(state.calls), ["d1 create apiv2-default-shard-1", "queues create apiv2-journeys-default", "queues create apiv2-cron-default", "queues create apiv2-dlq-default"]);
    assert.equal(state.calls.at(-1)!.join(" ").replace(/--secrets-file \S+/, "--secrets-file <file>"), 'deploy --env  --secrets-file <file>');
    assert.equal(state.workers.apiv2!.secrets.ADMIN_TOKEN, "set-before", "a secret already set is not asked for or replaced");
    assert.equal(Buffer.from(state.workers.apiv2!.secrets.SECRETS_KEY!, "base64").length, 32);
    assert.equal(state.d1.length, 4);
    assert.match(stdout, /D1: created apiv2-default-shard-1; already there: apiv2-default, apiv2-default-shard-0/);
    assert.match(stdout, /R2: already there: apiv2-files-default/);
    assert.match(stdout, /Migrations \(remote\): DB up to date; SHARD_0 up to date; SHARD_1 applied \d+ migrations \(0001_panel_data\.sql … /);
    assert.match(stdout, /Deployed apiv2: https:\/\/apiv2\.test-account\.workers\.dev/);
  });

  test("a failing step stops the run with the command and wrangler's answer; the next run does the rest", async () => {
    const file = account({ failOn: "queues create apiv2-sends-india" });
    const failed = await deploy(file, ["--env", "india"], { ADMIN_TOKEN });
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /Deploy stopped: Creating the queue apiv2-sends-india failed: `wrangler queues create apiv2-sends-india` exited with 1:\n.*Authentication error \[code: 10000\]/s);
    assert.match(failed.stderr, /run the same command again once it is fixed/);
    const state = read(file);
    assert.equal(commandLine(state.calls.at(-1)!), "queues create apiv2-sends-india", "nothing runs after the failed step");
    assert.ok(!state.calls.some((call) => call[0] === "deploy" || call.includes("migrations")));

    writeFileSync(file, JSON.stringify({ ...state, failOn: undefined, calls: [] }));
    const again = await deploy(file, ["--env", "india"], { ADMIN_TOKEN });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(creations(read(file).calls), ["queues create apiv2-sends-india", "queues create apiv2-journeys-india", "queues create apiv2-cron-india", "queues create apiv2-dlq-india"]);
  });

  test("a new Worker's ADMIN_TOKEN, neither in the environment nor typed at a terminal, stops the run before anything is made", async () => {
    const file = account();
    const { code, stderr } = await deploy(file, ["--env", "india"]);
    assert.equal(code, 1);
    assert.match(stderr, /apiv2-india has no ADMIN_TOKEN yet: run this in a terminal to be asked for it, or put it in the environment \(ADMIN_TOKEN=… npm run deploy -- …\)/);
    assert.deepEqual(read(file).calls.map(commandLine), ["secret list --env india"]);
  });

  test("an environment wrangler.toml lacks, or none, is refused naming those it has", async () => {
    const file = account();
    for (const args of [["--env", "mars"], []]) {
      const { code, stderr } = await deploy(file, args);
      assert.equal(code, 1);
      assert.match(stderr, /default, india/);
    }
    assert.deepEqual(read(file).calls, []);
  });

  test("with the real wrangler against a stand-in of the Cloudflare API, it reads wrangler's listings, creates what they lack and stops at a failing step", async () => {
    const requests: string[] = [];
    const bodies: Record<string, unknown>[] = [];
    const answer = (result: unknown) => JSON.stringify({ success: true, errors: [], messages: [], result });
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        const url = new URL(request.url!, "http://stand-in");
        const path = url.pathname.replace("/client/v4/accounts/test-account", "");
        requests.push(`${request.method} ${path}`);
        if (body) bodies.push(JSON.parse(body) as Record<string, unknown>);
        response.setHeader("content-type", "application/json");
        const page = url.searchParams.get("page") ?? "1";
        if (path === "/workers/scripts/apiv2-india/secrets") return response.end(answer([{ name: "ADMIN_TOKEN", type: "secret_text" }, { name: "SECRETS_KEY", type: "secret_text" }]));
        if (path === "/d1/database" && request.method === "GET") return response.end(answer(page === "1" ? [{ uuid: "u1", name: "apiv2-india" }, { uuid: "u2", name: "apiv2-india-shard-0" }, { uuid: "u9", name: "someone-elses" }] : []));
        if (path === "/d1/database") return response.end(answer({ uuid: "u3", name: "apiv2-india-shard-1", created_in_region: "APAC" }));
        if (path === "/r2/buckets" && request.method === "GET") return response.end(answer({ buckets: [{ name: "someone-elses", creation_date: "2026-11-29T00:00:00Z" }] }));
        if (path === "/r2/buckets") return response.end(answer({}));
        const queue = (name: string, i: number) => ({ queue_id: `q${i}`, queue_name: name, created_on: "2026-11-29", modified_on: "2026-11-29", producers_total_count: 1, consumers_total_count: 1 });
        if (path === "/queues" && request.method === "GET") return response.end(answer(page === "1" ? QUEUES.slice(0, 5).map((name, i) => queue(`apiv2-${name}-india`, i)) : []));
        if (path === "/queues") return response.end(answer(queue("apiv2-dlq-india", 5)));
        // The migrations' lookup of the control database: D1 is down.
        response.statusCode = 500;
        response.end(JSON.stringify({ success: false, errors: [{ code: 7500, message: "D1 is unavailable (stand-in)" }], messages: [], result: null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { code, stdout, stderr } = await deploy(account(), ["--env", "india"], {
        WRANGLER: undefined,
        CLOUDFLARE_API_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/client/v4`,
        CLOUDFLARE_API_TOKEN: "stand-in-token",
        CLOUDFLARE_ACCOUNT_ID: "test-account",
        WRANGLER_SEND_METRICS: "false",
        WRANGLER_HIDE_BANNER: "true",
        WRANGLER_LOG_PATH: scratch,
      });
      assert.equal(code, 1, stdout);
      assert.deepEqual(requests, [
        "GET /workers/scripts/apiv2-india/secrets",
        "GET /d1/database",
        "POST /d1/database",
        "GET /r2/buckets",
        "POST /r2/buckets",
        "GET /queues",
        "GET /queues",
        "POST /queues",
        "GET /d1/database/apiv2-india",
      ]);
      assert.deepEqual(bodies, [{ name: "apiv2-india-shard-1", primary_location_hint: "apac" }, { name: "apiv2-files-india", locationHint: "apac" }, { queue_name: "apiv2-dlq-india" }]);
      assert.match(stdout, /Secrets: all set; already set: ADMIN_TOKEN, SECRETS_KEY/);
      assert.match(stdout, /D1: created apiv2-india-shard-1 \(location apac\); already there: apiv2-india, apiv2-india-shard-0/);
      assert.match(stdout, /R2: created apiv2-files-india \(location apac\)/);
      assert.match(stdout, /Queues: created apiv2-dlq-india; already there: apiv2-imports-india/);
      assert.match(stderr, /Deploy stopped: Migrating DB failed \(npm run migrate -- --remote --env "india"\):\n.*D1 is unavailable \(stand-in\)/s);
    } finally {
      server.close();
    }
  });
});
