// The typed client of the service: openapi-fetch over the types openapi-typescript made from
// /openapi.json (schema.d.ts, `npm run client:generate`), plus a helper for the apiv2 envelope,
// whose operations all share one path and differ by `type` and `activity`.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.d.ts";

export type { components, paths } from "./schema.d.ts";

/** Every route of /openapi.json: the activity APIs (`/v1/activity/...`), channel events, push, /health. */
export function createApiClient(options: ClientOptions): Client<paths> {
  return createClient<paths>(options);
}

/** The admin API (`/admin/v1/...`), each request carrying the deployment's admin token. */
export function createAdminClient({ adminToken, ...options }: ClientOptions & { adminToken: string }): Client<paths> {
  const client = createClient<paths>(options);
  client.use({
    onRequest({ request }) {
      request.headers.set("authorization", `Bearer ${adminToken}`);
      return request;
    },
  });
  return client;
}

/** An envelope request as /openapi.json documents it: one alternative per operation. */
type EnvelopeRequest = NonNullable<paths["/apiv2"]["post"]["requestBody"]>["content"]["application/json"];
export type EnvelopeType = EnvelopeRequest["type"];
/** Per type, per activity: the operation's parameters, besides type, activity and the key the client adds. */
export type EnvelopeOperations = {
  [T in EnvelopeType]: { [A in Extract<EnvelopeRequest, { type: T }>["activity"]]: Omit<Extract<EnvelopeRequest, { type: T; activity: A }>, "type" | "activity" | "apikey"> };
};
export type EnvelopeActivity<T extends EnvelopeType> = keyof EnvelopeOperations[T];
export type EnvelopeParams<T extends EnvelopeType, A extends EnvelopeActivity<T>> = EnvelopeOperations[T][A];
export type EnvelopeSuccess = paths["/apiv2"]["post"]["responses"][200]["content"]["application/json"];
export type EnvelopeFailure = paths["/apiv2"]["post"]["responses"]["4XX"]["content"]["application/json"];

export interface EnvelopeClient {
  /**
   * Calls `{baseUrl}/apiv2` with `type`, `activity`, the panel's key and the operation's parameters
   * (as one JSON body, which the envelope reads as it reads a query string or a form). The answer is
   * openapi-fetch's: `data` on success, `error` (the Failed body naming each field) otherwise.
   */
  call<T extends EnvelopeType, A extends EnvelopeActivity<T>>(
    type: T,
    activity: A,
    params: EnvelopeParams<T, A>,
  ): Promise<{ data?: EnvelopeSuccess; error?: EnvelopeFailure; response: Response }>;
}

/** The apiv2 envelope of one panel, by its API key. */
export function createEnvelopeClient({ apikey, ...options }: ClientOptions & { apikey: string }): EnvelopeClient {
  const client = createClient<paths>(options);
  return {
    async call(type, activity, params) {
      const body = { ...params, type, activity, apikey } as unknown as EnvelopeRequest;
      const { data, error, response } = await client.POST("/apiv2", { body });
      return { data, error, response };
    },
  };
}
