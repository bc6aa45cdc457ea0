declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    SHARD_MIGRATIONS: import("cloudflare:test").D1Migration[];
    /** A schema snapshot (migrations/schema): its statements, and the migrations it covers. */
    TEST_SCHEMA: { statements: string[]; migrations: string[] };
    SHARD_SCHEMA: { statements: string[]; migrations: string[] };
    MIGRATED_CONTROL: D1Database;
    MIGRATED_SHARD: D1Database;
    RECEIVER_URL: string;
    FUZZ_SEED: string;
  }
}

/** Text files imported whole through Vite's `?raw` (test/support/sns.ts: the test key and certificate). */
declare module "*.pem?raw" {
  const text: string;
  export default text;
}
