import { routeRequest } from "./http/router";

export { WebhookDispatcher } from "./webhooks/dispatcher";

export default {
  fetch(request, env, exec) {
    return routeRequest(request, env, exec);
  },
} satisfies ExportedHandler<Env>;
