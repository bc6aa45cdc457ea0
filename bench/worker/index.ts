// The benchmark build: the service itself plus baseline routes under /__bench/ that do the
// bare platform work a benchmark compares against, in the same runtime and the same run.
// Never deployed. Each benchmark adds its baseline in its own file and one line below.
// D1 is counted (d1-count.ts): statements and round trips per call.
import service from "../../src/index";
import { baselineContactLookup, baselineContainsScan, seedContacts } from "./baseline-contact-lookup";
import { baselineDownload, baselineImportUpsert } from "./baseline-import";
import { baselineInsert } from "./baseline-insert";
import { baselineAddFloor } from "./baseline-add-floor";
import { baselinePostFloor } from "./baseline-post-floor";
import { baselineInsertEvents } from "./baseline-events";
import { baselineArchive, serviceArchive } from "./baseline-archive";
import { baselineOutbox } from "./baseline-outbox";
import { baselineSegmentCount, benchPublishDue } from "./baseline-segments";
import { baselineSiteverify } from "./baseline-siteverify";
import { baselineSmsBare, benchSmsNudge, benchSmsSeed, benchSmsSent } from "./baseline-sms";
import { baselineWebhookPost } from "./baseline-webhook-post";
import { seedCampaign, seedCampaignMessages } from "./seed-campaign";
import { baselineListCount, seedListMembers } from "./seed-list";
import { countingEnv, d1Counts } from "./d1-count";
import { baselineBehaviourCount, baselinePublish, benchPartitionMap, seedPartitioned, seedPartitionedEvents } from "./partitions";
import { readSimEvents, seedSimEvents, simTimings, timed, timingEnv } from "./simulate";

export * from "../../src/index";

const BASELINES: Record<string, (request: Request, env: Env, exec: ExecutionContext) => Promise<Response>> = {
  "/__bench/insert": baselineInsert,
  "/__bench/add-floor": baselineAddFloor,
  "/__bench/post-floor": baselinePostFloor,
  "/__bench/insert-events": baselineInsertEvents,
  "/__bench/outbox": baselineOutbox,
  "/__bench/webhook-post": baselineWebhookPost,
  "/__bench/import-upsert": baselineImportUpsert,
  "/__bench/download": baselineDownload,
  "/__bench/contact-lookup": baselineContactLookup,
  "/__bench/contains-scan": baselineContainsScan,
  "/__bench/seed-contacts": seedContacts,
  "/__bench/seed-campaign": seedCampaign,
  "/__bench/seed-campaign-messages": seedCampaignMessages,
  "/__bench/seed-list-members": seedListMembers,
  "/__bench/list-count": baselineListCount,
  "/__bench/d1": d1Counts,
  "/__bench/segment-count": baselineSegmentCount,
  "/__bench/publish-due": benchPublishDue,
  "/__bench/archive-baseline": baselineArchive,
  "/__bench/archive-service": serviceArchive,
  "/__bench/sms-seed": benchSmsSeed,
  "/__bench/sms-sent": benchSmsSent,
  "/__bench/sms-nudge": benchSmsNudge,
  "/__bench/sms-bare": baselineSmsBare,
  "/__bench/siteverify": baselineSiteverify,
  "/__bench/partition-map": benchPartitionMap,
  "/__bench/seed-partitioned": seedPartitioned,
  "/__bench/seed-partitioned-events": seedPartitionedEvents,
  "/__bench/publish-bare": baselinePublish,
  "/__bench/behaviour-count": baselineBehaviourCount,
  "/__bench/seed-sim-events": seedSimEvents,
  "/__bench/read-sim-events": readSimEvents,
  "/__bench/sim-timings": simTimings,
};

/** bench:simulate's breakdown (BENCH_SIM_TIMINGS=true): D1 and R2 timed by kind, simulation steps timed whole; off for every other benchmark. */
const timing = (env: Env) => (env as unknown as Record<string, unknown>).BENCH_SIM_TIMINGS === "true";
const served = (env: Env) => countingEnv(timing(env) ? timingEnv(env) : env);
const isSimulationStep = (body: unknown) => typeof body === "object" && body !== null && (body as { type?: unknown }).type === "journey_simulation";

export default {
  async fetch(request, env, exec) {
    // Baselines are counted too, so both sides pay the same for the counting.
    const baseline = BASELINES[new URL(request.url).pathname];
    if (baseline) return baseline(request, countingEnv(env), exec);
    // A simulation's start runs its first step in the request.
    if (timing(env) && request.method === "POST" && new URL(request.url).pathname.endsWith("/simulations")) return timed("step in the start request", () => service.fetch(request, served(env), exec));
    return service.fetch(request, served(env), exec);
  },
  queue(batch, env, exec) {
    if (timing(env) && batch.messages.some((m) => isSimulationStep(m.body))) return timed("step in a queue consumer", () => service.queue(batch, served(env), exec));
    return service.queue(batch, served(env), exec);
  },
  scheduled(controller, env, exec) {
    return service.scheduled(controller, served(env), exec);
  },
} satisfies ExportedHandler<Env>;
