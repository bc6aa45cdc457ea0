import { resolveOperation } from "../api/registry";
import { paramsContext, paramsSchema, type Operation, type OperationContext } from "../api/operation";
import { authenticateApiKey } from "../api/access";
import { cachedCaller } from "../services/access/api-keys";
import { readBodyParams, readQueryParams, type Params } from "../lib/http/body";
import { oneApiKey } from "../lib/http/credentials";
import { asApiError, parseOrThrow } from "../lib/http/errors";
import { envelopeFailure, envelopeSuccess, newRequestId } from "../lib/http/respond";
import { notePanel } from "../lib/observability/context";

/**
 * The apiv2 envelope (CONTRACT 2): parameters from the query and the body in any mix (the
 * body wins, but for the key), then the operation, the API key (`apikey`, or a header), the operation's
 * own parameters, and the run.
 * Every failure is answered in the envelope's Failed shape; only faults of the service are 5xx.
 */
export async function handleEnvelope(request: Request, env: Env, exec: ExecutionContext, requestUrl?: URL): Promise<Response> {
  const requestId = newRequestId();
  let params: Params = {};
  let operation: Operation | undefined;
  let ctx: OperationContext | undefined;
  try {
    // The router's parse of the same URL when it has one: a URL is parsed once a call.
    const url = requestUrl ?? new URL(request.url);
    const query = readQueryParams(url);
    params = query;
    const body = await readBodyParams(request);
    params = { ...query, ...body };
    operation = resolveOperation(params.type, params.activity);
    // The key as `apikey` (spec 2.1) or in a header (CONTRACT 8, 10). Unlike other parameters,
    // a key in the query and another in the body do not let the body win: two that disagree, 401.
    const apiKey = oneApiKey(request, query.apikey, body.apikey);
    const caller = cachedCaller(env, apiKey) ?? (await authenticateApiKey(env, apiKey));
    notePanel(caller.panel.id);
    // The origin is read by the few operations that give out links: the URL makes it on asking.
    ctx = { env, exec, ...caller, requestId, now: Date.now(), get origin() { return url.origin; }, params };
    const input = operation.fastParams?.(params) ?? parseOrThrow(paramsSchema(operation, paramsContext(ctx)), params);
    const members = await operation.run(ctx, input);
    return operation.render?.success(requestId, members, params) ?? envelopeSuccess(requestId, members);
  } catch (error) {
    const failure = asApiError(error, requestId);
    // A body that could not be read still fails in the shape of the operation the query names.
    operation ??= operationNamedBy(params);
    return operation?.render?.failure(requestId, failure, params) ?? envelopeFailure(requestId, failure);
  }
}

function operationNamedBy(params: Params): Operation | undefined {
  try {
    return resolveOperation(params.type, params.activity);
  } catch {
    return undefined;
  }
}
