import { requestApiKey } from "../lib/http/credentials";
import { authenticateApiKey } from "./access";
import { asApiError, notFound, unwrap } from "../lib/http/errors";
import { csvAttachment, envelopeFailure, newRequestId } from "../lib/http/respond";
import { apiKeyAuditor } from "../services/audit/record";
import { startBulkUpload } from "../services/imports/bulk-upload";
import { importErrorReport, importJobStatus } from "../services/imports/jobs";
import { z } from "../lib/z";
import { defineOperation, type OperationTable } from "./operation";
import { absentWhenEmpty, addressList, listIdParam, optionalTextListParam, optionalTextParam, outboundUrl, textParam } from "../domain/fields";

const MAX_URL_LENGTH = 2048;
const MAX_NOTIFY_ADDRESSES = 10;

/** An optional parameter sent empty (`callback=`) means "not given". */
const given = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value);

const bulkUpload = defineOperation({
  summary: "Import contacts from a hosted CSV file in the background (4.5); answers the job id at once",
  params: (rules) =>
    z.object({
      path: textParam(MAX_URL_LENGTH)
        .pipe(outboundUrl(rules))
        .meta({ description: "http(s) URL of the CSV file; its header row names attributes", example: "https://crm.example.com/export.csv" }),
      listid: absentWhenEmpty(listIdParam),
      notifyemail: optionalTextListParam(1000)
        .transform(given)
        .pipe(addressList(MAX_NOTIFY_ADDRESSES).optional())
        .meta({ description: "Address(es), comma separated (or a JSON array of them), that get the summary email" }),
      callback: optionalTextParam(MAX_URL_LENGTH)
        .transform(given)
        .pipe(outboundUrl(rules).optional())
        .meta({ description: "http(s) URL that gets a POST with the job's outcome" }),
    }),
  async run({ env, panel, user, now, origin, db }, input) {
    const started = await startBulkUpload(env, db, apiKeyAuditor(user), {
      panelId: panel.id,
      url: input.path,
      listId: input.listid ?? null,
      notifyEmails: input.notifyemail ?? [],
      callbackUrl: input.callback ?? null,
      origin,
      now,
    });
    return { jobid: unwrap(started).jobId };
  },
});

/** `field` names where the job id came from: `data` (bulkstatus) or the `job` path segment. */
function noSuchJob(jobId: string, field: string) {
  return notFound(`No import job "${jobId}" in this panel`, [{ field, message: "no such job" }]);
}

const bulkStatus = defineOperation({
  summary: "State and counters of a bulk upload job",
  params: z.object({ data: textParam(64).meta({ description: "The jobid that bulkupload answered", example: "job_3k9x7q2m4n8p1r5t" }) }),
  async run({ panel, db }, { data }) {
    const job = await importJobStatus(db, panel.id, data);
    if (!job) throw noSuchJob(data, "data");
    return { job };
  },
});

export const bulkOperations: OperationTable = {
  bulkupload: bulkUpload,
  bulkstatus: bulkStatus,
};

/**
 * GET /apiv2/jobs/{job}/errors.csv: the error report for API clients, with the panel's API key
 * in `apikey` or `Authorization: Bearer`. Failures answer in the envelope's Failed shape.
 */
export async function handleErrorReportDownload(request: Request, env: Env, jobId: string): Promise<Response> {
  const requestId = newRequestId();
  try {
    const caller = await authenticateApiKey(env, requestApiKey(request));
    const report = unwrap(await importErrorReport(env.FILES, caller.db, caller.panel.id, jobId));
    return csvAttachment(report.body, report.size, report.fileName);
  } catch (error) {
    return envelopeFailure(requestId, asApiError(error, requestId));
  }
}
