// The benchmark build: the service itself plus baseline routes under /__bench/ that do the
// bare platform work a benchmark compares against, in the same runtime and the same run.
// Never deployed. Each benchmark adds its baseline in its own file and one line below.
import service from "../../src/index";
import { baselineContactLookup, seedContacts } from "./baseline-contact-lookup";
import { baselineImportUpsert } from "./baseline-import";
import { baselineInsert } from "./baseline-insert";
import { baselineOutbox } from "./baseline-outbox";
import { baselineWebhookPost } from "./baseline-webhook-post";

export * from "../../src/index";

const BASELINES: Record<string, (request: Request, env: Env, exec: ExecutionContext) => Promise<Response>> = {
  "/__bench/insert": baselineInsert,
  "/__bench/outbox": baselineOutbox,
  "/__bench/webhook-post": baselineWebhookPost,
  "/__bench/import-upsert": baselineImportUpsert,
  "/__bench/contact-lookup": baselineContactLookup,
  "/__bench/seed-contacts": seedContacts,
};

export default {
  ...service,
  async fetch(request, env, exec) {
    const baseline = BASELINES[new URL(request.url).pathname];
    return baseline ? baseline(request, env, exec) : service.fetch(request, env, exec);
  },
} satisfies ExportedHandler<Env>;
