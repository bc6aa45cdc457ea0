import { uploadContactsAndPublish } from "../services/broadcasts/upload-and-publish";
import { broadcastAnswer, broadcastRequestSchema } from "../domain/broadcast";
import type { Params } from "../lib/http/body";
import { unwrap } from "../lib/http/errors";
import { apiKeyAuditor } from "../services/audit/record";
import { parseCallerJson } from "../lib/json";
import { json } from "../lib/http/respond";
import { z } from "../lib/z";
import { defineOperation, type OperationTable } from "./operation";

/** Envelope parameters that are not part of the broadcast's own data. */
const ENVELOPE_KEYS = new Set(["type", "activity", "apikey"]);

/**
 * The broadcast's data: `data` as JSON text or a JSON object, or (CONTRACT 2) the whole JSON
 * body being the data object itself.
 */
function dataOf(params: Params): unknown {
  if (params.data !== undefined) {
    if (typeof params.data !== "string") return params.data;
    // Text that is not acceptable JSON is echoed as the text it is; the run says why.
    const json = parseCallerJson(params.data);
    return json.ok ? json.value : params.data;
  }
  const rest = Object.fromEntries(Object.entries(params).filter(([key]) => !ENVELOPE_KEYS.has(key)));
  return Object.keys(rest).length ? rest : undefined;
}

/** The spec 2.6 body, for success and failure alike. */
function broadcastBody(requestId: string, success: boolean, campaignId: string, message: string, params: Params) {
  return { ...broadcastAnswer(requestId, success, campaignId, message), payload: dataOf(params) ?? {} };
}

const uploadContactAndPublish = defineOperation({
  summary: "Upload contacts into a new list and schedule an email broadcast to it (4.10); answers the spec 2.6 body",
  params: (context) =>
    z.preprocess(
      (params, ctx) => {
        // JSON text too deep (or with a __proto__ member) is refused for that reason, not as "not an object".
        const text = (params as Params).data;
        const json = typeof text === "string" ? parseCallerJson(text) : null;
        if (json && !json.ok && json.reason !== "must be valid JSON") ctx.addIssue({ code: "custom", path: ["data", ...json.path], message: json.reason });
        return { data: dataOf(params as Params) };
      },
      z.object({
        data: broadcastRequestSchema({ ...context, leadMinutes: context.broadcastLeadMinutes }).meta({
          description: "The broadcast request of spec 2.5: a JSON object, or its JSON text (the whole JSON body may be this object instead)",
        }),
      }),
    ),
  async run(ctx, { data: request }) {
    const { campaignId, listId, message } = unwrap(await uploadContactsAndPublish({ ...ctx, by: apiKeyAuditor(ctx.user) }, request));
    return { campaignId, listId, message };
  },
  render: {
    success: (requestId, members, params) =>
      json(broadcastBody(requestId, true, String(members.campaignId), String(members.message), params)),
    // Exactly the five members of spec 2.6; the message names the field and the rule.
    failure: (requestId, error, params) => json(broadcastBody(requestId, false, "", error.message, params), error.status),
  },
});

export const broadcastOperations: OperationTable = {
  upload_contact_and_publish: uploadContactAndPublish,
};
