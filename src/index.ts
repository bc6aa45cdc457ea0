import { routeRequest } from "./http/router";
import { runCronTasks } from "./jobs/cron";
import { handleQueue } from "./jobs/queues";
import { wireContactReactions } from "./jobs/contact-reactions";

// Once per isolate, before any entry point below runs: every contact write reaches segments and journeys.
wireContactReactions();

export { WebhookDispatcher } from "./services/webhooks/dispatcher";

export default {
  fetch(request, env, exec) {
    return routeRequest(request, env, exec);
  },
  queue(batch, env, exec) {
    return handleQueue(batch, env, exec);
  },
  scheduled(controller, env, exec) {
    exec.waitUntil(runCronTasks(env, controller.scheduledTime));
  },
} satisfies ExportedHandler<Env>;
