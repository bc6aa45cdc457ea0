declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    SHARD_MIGRATIONS: import("cloudflare:test").D1Migration[];
    RECEIVER_URL: string;
    FUZZ_SEED: string;
  }
}
