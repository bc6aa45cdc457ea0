import { z } from "./z";

/**
 * The Worker's configuration: every var and secret it reads (wrangler.toml `[vars]`, `wrangler
 * secret put`), with its default and its rule, parsed once per isolate into a typed `Config`.
 * Bindings (DB, SHARD_n, FILES, queues, Durable Objects, MAILER) stay on `env`.
 *
 * A missing or empty var takes its default. A value that breaks its rule is not replaced by the
 * default: `config(env)` throws a ConfigError naming the variable and the reason, `/health`
 * answers 500 with it, and every request or job that needs configuration fails with it (a 500
 * quoting a request id, and a log line).
 */

/** Names of the vars and secrets the schema reads. */
const VARS = [
  "REGION",
  "ALLOW_PRIVATE_FETCH",
  "LOCAL_MAILBOX",
  "LOG_LINES",
  "BROADCAST_LEAD_MINUTES",
  "MAIL_FROM",
  "EMAIL_PROVIDER",
  "SES_REGION",
  "SES_ENDPOINT",
  "SES_CONFIGURATION_SET",
  "SES_ACCESS_KEY_ID",
  "SES_SECRET_ACCESS_KEY",
  "SES_SNS_TOKEN",
  "SES_SNS_ORIGIN",
  "SES_SNS_TOPICS",
  "PUBLIC_BASE_URL",
  "DOH_URL",
  "TWILIO_API_URL",
  "MSG91_API_URL",
  "FCM_API_URL",
  "FCM_TOKEN_URL",
  "TURNSTILE_SITEVERIFY_URL",
  "ADMIN_TOKEN",
  "SECRETS_KEY",
  "DOWNLOAD_MIN_BYTES_PER_SECOND",
  "DOWNLOAD_RATE_WINDOW_MS",
  "CAMPAIGN_MESSAGES_DAYS",
  "EVENT_GUID_DAYS",
  "SEGMENT_CHANGES_DAYS",
  "JOURNEY_INSTANCES_DAYS",
  "AUDIT_LOG_DAYS",
  "FANOUT_CHUNK_IDS",
  "SIMULATION_STEP_EVENTS",
  "UNSENT_PAGE_BATCHES",
] as const;

export type ConfigVar = (typeof VARS)[number];

/** What `config` reads: the Worker's env (or any object with some of its vars). */
export type ConfigSource = { readonly [K in ConfigVar]?: unknown };

export const EMAIL_PROVIDERS = ["outbox", "ses"] as const;
export type EmailProviderName = (typeof EMAIL_PROVIDERS)[number];

/** A week: a broadcast's lead time beyond it is a typo, not a policy. */
const MAX_LEAD_MINUTES = 7 * 24 * 60;

const httpUrl = z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" });
/** An http(s) origin (scheme, host, port), written without a path; read as URL.origin writes it. */
const httpOrigin = httpUrl
  .refine((url) => {
    const parsed = new URL(url);
    return parsed.pathname === "/" && !parsed.search && !parsed.hash && !parsed.username && !parsed.password;
  }, "must be an origin such as https://host:port, without a path")
  .transform((url) => new URL(url).origin);
const minutes = z
  .string()
  .regex(/^\d+$/, "must be a whole number of minutes")
  .transform(Number)
  .pipe(z.number().max(MAX_LEAD_MINUTES, `must be at most ${MAX_LEAD_MINUTES} (a week)`));
const positiveWhole = z
  .string()
  .regex(/^\d+$/, "must be a whole number")
  .transform(Number)
  .pipe(z.number().min(1, "must be at least 1"));
/** Days a kind of row is kept (housekeeping); at least `min`, where a screen reads that far back. */
const keptDays = (min: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number of days")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(36_500, "must be at most 36500 (a hundred years)"));
/** The segment history screen reads up to 366 days back (admin/segments.ts). */
export const SEGMENT_HISTORY_MAX_DAYS = 366;
/** SNS topic ARNs (`arn:aws:sns:eu-west-1:123456789012:ses-feedback`), comma-separated. */
const snsTopicArns = z
  .string()
  .transform((value) => value.split(",").map((arn) => arn.trim()).filter((arn) => arn !== ""))
  .pipe(z.array(z.string().regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/, "must list SNS topic ARNs such as arn:aws:sns:us-east-1:123456789012:ses-feedback, comma-separated")));
const flag = z.enum(["true", "false"], { error: 'must be "true" or "false"' }).transform((value) => value === "true");
const text = z.string();

const schema = z.object({
  REGION: text.default("default"),
  ALLOW_PRIVATE_FETCH: flag.default(false),
  LOCAL_MAILBOX: flag.default(false),
  LOG_LINES: flag.default(true),
  BROADCAST_LEAD_MINUTES: minutes.default(90),
  MAIL_FROM: z.email({ error: "must be an email address" }).default("notifications@example.com"),
  EMAIL_PROVIDER: z.enum(EMAIL_PROVIDERS, { error: `is not one of ${EMAIL_PROVIDERS.join(", ")}` }).default("outbox"),
  SES_REGION: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, "must be an AWS region such as us-east-1").default("us-east-1"),
  SES_ENDPOINT: httpUrl.optional(),
  SES_CONFIGURATION_SET: text.optional(),
  SES_ACCESS_KEY_ID: text.optional(),
  SES_SECRET_ACCESS_KEY: text.optional(),
  SES_SNS_TOKEN: text.optional(),
  SES_SNS_ORIGIN: httpOrigin.optional(),
  SES_SNS_TOPICS: snsTopicArns.optional(),
  PUBLIC_BASE_URL: httpUrl,
  DOH_URL: httpUrl.default("https://cloudflare-dns.com/dns-query"),
  TWILIO_API_URL: httpUrl.default("https://api.twilio.com"),
  MSG91_API_URL: httpUrl.default("https://control.msg91.com"),
  FCM_API_URL: httpUrl.default("https://fcm.googleapis.com"),
  FCM_TOKEN_URL: httpUrl.default("https://oauth2.googleapis.com/token"),
  TURNSTILE_SITEVERIFY_URL: httpUrl.default("https://challenges.cloudflare.com/turnstile/v0/siteverify"),
  ADMIN_TOKEN: text.optional(),
  SECRETS_KEY: text.refine(isAesKey, "must be 32 bytes, base64-encoded"),
  // Empty: the built-in values of src/lib/transfer-limits.ts (tests make the window short).
  DOWNLOAD_MIN_BYTES_PER_SECOND: positiveWhole.optional(),
  DOWNLOAD_RATE_WINDOW_MS: positiveWhole.optional(),
  // Retention of rows that otherwise grow forever (docs/operations.md: bounded storage).
  CAMPAIGN_MESSAGES_DAYS: keptDays(1).default(365),
  EVENT_GUID_DAYS: keptDays(1).default(30),
  SEGMENT_CHANGES_DAYS: keptDays(SEGMENT_HISTORY_MAX_DAYS).default(400),
  AUDIT_LOG_DAYS: keptDays(1).default(365),
  JOURNEY_INSTANCES_DAYS: keptDays(1).default(365),
  // 50,000 ids: an audience publish step of that many takes about 1 s locally (decision 0050), far under D1's 30 s (issue 42).
  FANOUT_CHUNK_IDS: positiveWhole.pipe(z.number().max(1_000_000, "must be at most 1000000")).default(50_000),
  // 20,000 events: a journey simulation's step reads them in four pages, holds them together for one read of their contacts, and stays within seconds (decision 0048).
  SIMULATION_STEP_EVENTS: positiveWhole.pipe(z.number().max(100_000, "must be at most 100000")).default(20_000),
  // 1,000 batches: one page of a campaign's unsent batches is 1,000 send nudges in 10 queue calls, well within a Worker's subrequests (decision 0058).
  UNSENT_PAGE_BATCHES: positiveWhole.pipe(z.number().max(10_000, "must be at most 10000")).default(1_000),
});

function isAesKey(value: string): boolean {
  try {
    return atob(value).length === 32;
  } catch {
    return false;
  }
}

const withoutSlash = (url: string) => url.replace(/\/+$/, "");

function toConfig(vars: z.output<typeof schema>) {
  return {
    region: vars.REGION,
    /** Outbound fetches may reach private and loopback hosts (local development and tests). */
    allowPrivateFetch: vars.ALLOW_PRIVATE_FETCH,
    /**
     * Transactional mail (password resets, import summaries...) is also kept in R2 and shown at
     * /dev/mailbox/{id}, whose link the log prints: `npm start` sets it; production never (the
     * page shows reset links to anyone who can reach it).
     */
    localMailbox: vars.LOCAL_MAILBOX,
    /** One JSON line per request and queue batch (src/lib/observability/log.ts); off in the vitest pool, see vitest.config.ts. */
    logLines: vars.LOG_LINES,
    /** How far ahead a broadcast's send time must be. */
    broadcastLeadMinutes: vars.BROADCAST_LEAD_MINUTES,
    /** Sender of transactional mail. */
    mailFrom: vars.MAIL_FROM,
    emailProvider: vars.EMAIL_PROVIDER,
    ses: {
      region: vars.SES_REGION,
      /** Empty: SES's own endpoint of the region. */
      endpoint: vars.SES_ENDPOINT,
      configurationSet: vars.SES_CONFIGURATION_SET,
      accessKeyId: vars.SES_ACCESS_KEY_ID,
      secretAccessKey: vars.SES_SECRET_ACCESS_KEY,
      snsToken: vars.SES_SNS_TOKEN,
      /**
       * Empty: SNS's own hosts (https, sns.<region>.amazonaws.com[.cn]) are the only ones whose
       * SubscribeURL is followed and whose SigningCertURL is trusted. Set (tests), that origin
       * is the only one: a local stand-in of SNS that serves a test certificate.
       */
      snsOrigin: vars.SES_SNS_ORIGIN,
      /**
       * The topics whose messages are read; any other's are refused (403). Empty: any topic's,
       * so a leaked SES_SNS_TOKEN lets an AWS account subscribe a topic of its own (decision 0059).
       */
      snsTopics: vars.SES_SNS_TOPICS?.length ? vars.SES_SNS_TOPICS : undefined,
    },
    /** Origin of links in sent email and messages, without a trailing slash. */
    publicBaseUrl: withoutSlash(vars.PUBLIC_BASE_URL),
    dohUrl: vars.DOH_URL,
    twilioApiUrl: vars.TWILIO_API_URL,
    msg91ApiUrl: vars.MSG91_API_URL,
    fcmApiUrl: withoutSlash(vars.FCM_API_URL),
    fcmTokenUrl: vars.FCM_TOKEN_URL,
    /** Where signup forms check a Turnstile answer (tests: the loopback receiver). */
    turnstileSiteverifyUrl: vars.TURNSTILE_SITEVERIFY_URL,
    adminToken: vars.ADMIN_TOKEN,
    secretsKey: vars.SECRETS_KEY,
    /** Downloads' minimum rate and its window, when set; otherwise each kind's built-in ones. */
    download: { minBytesPerSecond: vars.DOWNLOAD_MIN_BYTES_PER_SECOND, rateWindowMs: vars.DOWNLOAD_RATE_WINDOW_MS },
    /** Days housekeeping keeps each kind of row (services/retention/housekeeping.ts). */
    retentionDays: {
      /** A finished campaign's per-recipient rows, counted from its end; its report's totals stay. */
      campaignMessages: vars.CAMPAIGN_MESSAGES_DAYS,
      /** Caller-chosen event guids (idempotency keys): a repeat within the window stores nothing. */
      eventGuids: vars.EVENT_GUID_DAYS,
      /** A segment's entries and exits (its history screen). */
      segmentChanges: vars.SEGMENT_CHANGES_DAYS,
      auditLog: vars.AUDIT_LOG_DAYS,
      /** A finished journey instance (with its points, step runs and messages), counted from its end; the journey's counters stay. */
      journeyInstances: vars.JOURNEY_INSTANCES_DAYS,
    },
    /**
     * Contact ids one step of a fan-out covers (a campaign's recipients, a list's emptying): each
     * step is one statement over that id range, so its time does not grow with the panel.
     */
    fanoutChunkIds: vars.FANOUT_CHUNK_IDS,
    /** Recorded events one step of a journey simulation runs through (services/simulations/simulate.ts). */
    simulationStepEvents: vars.SIMULATION_STEP_EVENTS,
    /** Unsent send batches of a campaign nudged per invocation; the rest go on in a continuation (services/broadcasts/unsent.ts). */
    unsentPageBatches: vars.UNSENT_PAGE_BATCHES,
  };
}

export type Config = Readonly<ReturnType<typeof toConfig>>;

/** A var or secret that breaks its rule; the message names each one and why. */
export class ConfigError extends Error {
  constructor(readonly problems: ReadonlyArray<{ variable: string; reason: string }>) {
    super(`configuration is invalid: ${problems.map((p) => `${p.variable} ${p.reason}`).join("; ")}`);
  }
}

/** Vars as strings, an empty one as missing (wrangler.toml writes `""` for "use the default"). */
function varsOf(env: ConfigSource): Record<string, unknown> {
  const vars: Record<string, unknown> = {};
  for (const name of VARS) {
    const value = env[name];
    if (value !== undefined && value !== "") vars[name] = value;
  }
  return vars;
}

export function parseConfig(env: ConfigSource): Config {
  const parsed = schema.safeParse(varsOf(env));
  if (parsed.success) return toConfig(parsed.data);
  throw new ConfigError(parsed.error.issues.map((issue) => ({ variable: String(issue.path[0] ?? "env"), reason: issue.message })));
}

// Keyed by the env object: one parse per isolate (the runtime hands every request the same
// env), and a test's `{ ...env, X: "…" }` is its own configuration.
const parsedConfigs = new WeakMap<object, Config | ConfigError>();

/** The configuration of this env, parsed on first use; throws the ConfigError of a bad value (logged once). */
export function config(env: ConfigSource): Config {
  let entry = parsedConfigs.get(env);
  if (entry === undefined) {
    try {
      entry = parseConfig(env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      console.error(error.message);
      entry = error;
    }
    parsedConfigs.set(env, entry);
  }
  if (entry instanceof ConfigError) throw entry;
  return entry;
}
