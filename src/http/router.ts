import { Router, type IRequest } from "itty-router";
import { handleAdmin } from "../admin";
import { handleErrorReportDownload } from "../api/bulk";
import { handleEnvelope } from "./envelope";
import { ApiError } from "./errors";
import { openApiDocument } from "./openapi";
import { envelopeFailure, json, newRequestId } from "./respond";

export const API_VERSION = "apiv2";

function unknownVersion(version: string): Response {
  return envelopeFailure(
    newRequestId(),
    new ApiError(404, `version: unknown API version "${version}"; the current version is ${API_VERSION}`, [
      { field: "version", message: `unknown version "${version}"` },
    ]),
  );
}

const router = Router<IRequest, [Env, ExecutionContext]>();

router
  .get("/health", (_request: IRequest, env: Env) => json({ status: "ok", region: env.REGION }))
  .get("/openapi.json", (request: IRequest) => json(openApiDocument(new URL(request.url).origin)))
  .all("/admin/v1/*", (request: IRequest, env: Env, exec: ExecutionContext) => handleAdmin(request, env, exec))
  .get(`/${API_VERSION}/jobs/:job/errors.csv`, (request: IRequest, env: Env) => handleErrorReportDownload(request, env, decodeURIComponent(request.params.job!)))
  .all("/:version", (request: IRequest, env: Env, exec: ExecutionContext) => {
    if (request.params.version !== API_VERSION) return unknownVersion(request.params.version!);
    if (request.method !== "GET" && request.method !== "POST") {
      return envelopeFailure(newRequestId(), new ApiError(405, `method: the envelope accepts GET and POST, not ${request.method}`));
    }
    return handleEnvelope(request, env, exec);
  })
  .all("*", (request: IRequest) => json({ error: `No route ${request.method} ${new URL(request.url).pathname}` }, 404));

export function routeRequest(request: Request, env: Env, exec: ExecutionContext): Promise<Response> {
  return router.fetch(request, env, exec);
}
