import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig, type ViteUserConfig } from "vitest/config";
import { DATABASES, readSnapshot, snapshotMigrations, snapshotStatements } from "./scripts/schema-snapshot.ts";

// Values the tests run with; the Worker reads them exactly as it reads secrets and vars.
export const TEST_ADMIN_TOKEN = "test-admin-token";
const TEST_SECRETS_KEY = "dGVzdC1zZWNyZXRzLWtleS0tMzItYnl0ZXMtbG9uZyE=";

// wrangler checks the secrets wrangler.toml requires against process.env; these satisfy it.
process.env.ADMIN_TOKEN ??= TEST_ADMIN_TOKEN;
process.env.SECRETS_KEY ??= TEST_SECRETS_KEY;

// Test files that need a Miniflare (workerd, storage, modules) of their own: they run a cron
// tick, a queue's consumer, publishDueBroadcasts or a back-fill over every panel (another
// file's panels make a run's bounded work miss the file's own, or take minutes), read ids, id
// ranges, counts or alerts of the whole deployment, switch a module-level setting (json_each),
// stub with vi, or read the MIGRATED_ databases. Every other file touches only the panels it
// creates, so those share one Miniflare per pool worker (`isolate: false`): starting workerd
// and loading src/ once per file was two thirds of the run. A new test file that needs fresh
// storage or fresh modules belongs here.
const ISOLATED = [
  "test/admin/contact-erasure-race.test.ts",
  "test/services/segments/sms-stops.test.ts",
  "test/admin/contact-erasure.test.ts",
  "test/admin/email-templates.test.ts",
  "test/admin/operators.test.ts",
  "test/admin/ops-owner.test.ts",
  "test/admin/ops.test.ts",
  "test/admin/overview-history.test.ts",
  "test/admin/panel-screens.test.ts",
  "test/admin/partition-resync.test.ts",
  "test/admin/partitioned-reads.test.ts",
  "test/admin/responses.test.ts",
  "test/admin/segment-export.test.ts",
  "test/admin/segments.test.ts",
  "test/api/partitioned-ab-tests.test.ts",
  "test/api/partitioned-address-stops.test.ts",
  "test/api/partitioned-aggregates.test.ts",
  "test/api/partitioned-campaigns.test.ts",
  "test/api/partitioned-events.test.ts",
  "test/api/partitioned-history.test.ts",
  "test/api/partitioned-journeys.test.ts",
  "test/api/partitioned-segments.test.ts",
  "test/api/partitioned-stops.test.ts",
  "test/api/signup-forms.test.ts",
  "test/api/topics.test.ts",
  "test/http/fuzz.test.ts",
  "test/http/local-mailbox.test.ts",
  "test/jobs/cron-scale.test.ts",
  "test/jobs/dispatch.test.ts",
  "test/lib/observability/observability.test.ts",
  "test/services/broadcasts/ab-test.test.ts",
  "test/services/broadcasts/audience.test.ts",
  "test/services/broadcasts/caps.test.ts",
  "test/services/broadcasts/lifecycle.test.ts",
  "test/services/broadcasts/local-time.test.ts",
  "test/services/broadcasts/publish-steps.test.ts",
  "test/services/broadcasts/races.test.ts",
  "test/services/broadcasts/report.test.ts",
  "test/services/broadcasts/send.test.ts",
  "test/services/broadcasts/unsent-pages.test.ts",
  "test/services/channels/email/sender-recheck.test.ts",
  "test/services/channels/email/sender-standing.test.ts",
  "test/services/channels/email/ses.test.ts",
  "test/services/channels/merge-tags.test.ts",
  "test/services/channels/push.test.ts",
  "test/services/channels/sms.test.ts",
  "test/services/contacts/reactions.test.ts",
  "test/services/dead-letters.test.ts",
  "test/services/imports/imports-json-each.test.ts",
  "test/services/imports/imports.test.ts",
  "test/services/journeys/conditions.test.ts",
  "test/services/journeys/lifecycle.test.ts",
  "test/services/journeys/list-entries.test.ts",
  "test/services/journeys/many-entries.test.ts",
  "test/services/journeys/message-rules.test.ts",
  "test/services/journeys/messages.test.ts",
  "test/services/journeys/races.test.ts",
  "test/services/journeys/recovery.test.ts",
  "test/services/journeys/simulations.test.ts",
  "test/services/journeys/splits.test.ts",
  "test/services/journeys/triggers.test.ts",
  "test/services/journeys/versions.test.ts",
  "test/services/lists/clear.test.ts",
  "test/services/move-races.test.ts",
  "test/services/overview-counts.test.ts",
  "test/services/panel-move-ids.test.ts",
  "test/services/panel-move.test.ts",
  "test/services/panel-split.test.ts",
  "test/services/partitions.test.ts",
  "test/services/pipeline/pipeline.test.ts",
  "test/services/retention.test.ts",
  "test/services/retention/contact-buckets.test.ts",
  "test/services/segments/panel-segments.test.ts",
  "test/services/shards.test.ts",
  "test/services/stop-copies.test.ts",
  "test/services/storage-retention.test.ts",
  "test/services/webhooks/failures.test.ts",
  "test/services/webhooks/replay.test.ts",
  "test/store/event-batches-json-each.test.ts",
  "test/store/id-ranges.test.ts",
  "test/store/json-arrays.test.ts",
  "test/store/schema-snapshot.test.ts",
];

export default defineConfig(async (): Promise<ViteUserConfig> => {
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
            // The receiver stands in for Amazon SNS: the subscription URLs it is given and the
            // test signing certificate it serves (test/support/sns.ts) are trusted as SNS's.
            SES_SNS_ORIGIN: inject<string>("receiverUrl"),
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
      reporters: ["default", "./test/node/summary-reporter.ts"],
      globalSetup: ["./test/node/global-setup.ts"],
      setupFiles: ["./test/setup/apply-migrations.ts"],
      // Two files at a time, one per core: with vitest's default for `run` (the cores less one)
      // a 2-core machine ran one file at a time at a load near 1 (README, Tests).
      maxWorkers: 2,
      testTimeout: 30_000,
      hookTimeout: 30_000,
      // The plugin sets this in its Vite `config` hook, which projects sharing the root's Vite
      // server do not run: without it a project externalizes dependencies workerd cannot load.
      server: { deps: { inline: true } },
      // include/exclude only in the projects: a project's arrays are appended to the root's.
      projects: [
        { extends: true, test: { name: "shared", isolate: false, include: ["test/**/*.test.ts"], exclude: ["test/node/**", "test/e2e/**", ...ISOLATED] } },
        { extends: true, test: { name: "isolated", include: ISOLATED } },
      ],
    },
  };
});
