import { pagedCsv } from "../domain/csv";
import { NEEDS } from "../domain/permissions";
import { consentPage, type ConsentRecord } from "../store/consent";
import { compareStoredText, isoTime } from "../store/sql";
import { mergedPage, panelOwningShards } from "../services/access/partitions";
import { definePanelRoute } from "./route";

// The panel's consent records (issue 45): every subscribe, confirmation, topic change and
// unsubscribe, how and from where, with the text shown; a CSV for audits.

export function consentView(r: ConsentRecord) {
  return {
    kind: r.kind,
    list_id: r.listId,
    topic: r.topic,
    via: r.via,
    via_id: r.viaId,
    ip: r.ip,
    user_agent: r.userAgent,
    text: r.text,
    at: isoTime(r.at),
  };
}

const CSV_HEADER = ["at", "contact", "kind", "list_id", "topic", "via", "via_id", "ip", "user_agent", "text"];
/** Records read per query while the file streams out. */
const PAGE = 1000;

const downloadConsent = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/consent.csv",
  role: NEEDS.consent,
  raw: { contentType: "text/csv", description: "The panel's consent records (attachment)" },
  summary:
    "Every consent record of the panel, oldest first, as CSV (at, contact key, kind, list_id, topic, via, via_id, ip, user_agent, text; formula-like cells start with '): subscribes, confirmations and unsubscribes, for audits",
  async handle({ env, panel, db }) {
    // A contact's records are kept on its partition's shard (decision 0038): each page merges every shard's, by id (time),
    // each kept to the buckets its map gives it (a split's source holds copies of the moved ones until cleaning, decision 0047).
    const shards = panelOwningShards(env, panel, db);
    const body = pagedCsv({
      header: CSV_HEADER,
      pageSize: PAGE,
      page: (after: string | undefined, size) => mergedPage(shards, (shard) => consentPage(shard.db, panel.id, after ?? "", size, shard.buckets), (a, b) => compareStoredText(a.id, b.id), size),
      fields: (r) => [isoTime(r.at), r.contactKey ?? "", r.kind, r.listId === null ? "" : String(r.listId), r.topic ?? "", r.via, r.viaId ?? "", r.ip ?? "", r.userAgent ?? "", r.text],
      cursor: (last) => last.id,
    });
    return new Response(body, {
      headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="consent-${panel.id}.csv"`, "cache-control": "no-store" },
    });
  },
});

export const consentRoutes = [downloadConsent];
