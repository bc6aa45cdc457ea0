import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { DATABASES, readSnapshot, snapshotMigrations, snapshotStatements } from "./scripts/schema-snapshot.ts";

// Values the tests run with; the Worker reads them exactly as it reads secrets and vars.
export const TEST_ADMIN_TOKEN = "test-admin-token";
const TEST_SECRETS_KEY = "dGVzdC1zZWNyZXRzLWtleS0tMzItYnl0ZXMtbG9uZyE=";

// wrangler checks the secrets wrangler.toml requires against process.env; these satisfy it.
process.env.ADMIN_TOKEN ??= TEST_ADMIN_TOKEN;
process.env.SECRETS_KEY ??= TEST_SECRETS_KEY;

export default defineConfig(async () => {
  // The control database's migrations and every shard's (wrangler.toml binds SHARD_0, SHARD_1),
  // and their schema snapshots (migrations/schema), which test/setup/apply-migrations.ts makes
  // each database from in one batch.
  const [migrations, shardMigrations] = await Promise.all([readD1Migrations("./migrations"), readD1Migrations("./migrations/shard")]);
  const schemaOf = (name: string) => {
    const text = readSnapshot(DATABASES.find((database) => database.name === name)!);
    return { statements: snapshotStatements(text), migrations: snapshotMigrations(text) };
  };
  const [controlSchema, shardSchema] = [schemaOf("control"), schemaOf("shard")];
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            SHARD_MIGRATIONS: shardMigrations,
            TEST_SCHEMA: controlSchema,
            SHARD_SCHEMA: shardSchema,
            ADMIN_TOKEN: TEST_ADMIN_TOKEN,
            SECRETS_KEY: TEST_SECRETS_KEY,
            // Off in the pool: a console line written from the Worker's own I/O context can leave
            // `vitest run` waiting forever at a file's end (workers-sdk issue 15719); the
            // observability test turns the lines on for its own calls.
            LOG_LINES: "false",
            ALLOW_PRIVATE_FETCH: "true",
            // The loopback HTTP receiver started by test/node/global-setup.ts.
            RECEIVER_URL: inject<string>("receiverUrl"),
            // The receiver's stand-in of the DNS-over-HTTPS JSON API (test/support/dns.ts).
            DOH_URL: `${inject<string>("receiverUrl")}/dns/test`,
            // The receiver's stand-ins of the SMS providers' APIs (test/services/channels/sms.test.ts).
            TWILIO_API_URL: `${inject<string>("receiverUrl")}/hooks/twilio-api`,
            MSG91_API_URL: `${inject<string>("receiverUrl")}/hooks/msg91-api`,
            // ...and of FCM and Google's token endpoint (test/services/channels/push.test.ts).
            FCM_API_URL: `${inject<string>("receiverUrl")}/hooks/fcm-api`,
            FCM_TOKEN_URL: `${inject<string>("receiverUrl")}/hooks/google-token`,
            // Downloads measure their minimum rate over 1 s, not 5-10 s, so hostile-source tests stay short.
            DOWNLOAD_RATE_WINDOW_MS: "1000",
            // The fuzz test's seed (test/http/fuzz.test.ts); empty: its fixed default.
            FUZZ_SEED: process.env.FUZZ_SEED ?? "",
          },
          // Two empty databases that test/store/schema-snapshot.test.ts migrates file by file, to
          // check the snapshots the others are made from against the migrations run by D1 itself.
          d1Databases: { MIGRATED_CONTROL: "migrated-control", MIGRATED_SHARD: "migrated-shard" },
        },
      })),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      reporters: ["default", "./test/node/summary-reporter.ts"],
      exclude: ["test/node/**", "test/e2e/**"],
      globalSetup: ["./test/node/global-setup.ts"],
      setupFiles: ["./test/setup/apply-migrations.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
