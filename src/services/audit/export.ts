import { pagedCsv } from "../../domain/csv";
import { AUDIT_CSV_HEADER, type AuditFilter } from "../../domain/audit";
import { listAuditEntries, type AuditEntry } from "../../store/audit";
import type { ShardDb } from "../../store/shards";

/** Entries read per query while the file is written. */
const PAGE = 500;

/** One entry as a CSV line's fields: the time in UTC ISO 8601, the detail as its JSON. */
export function auditCsvFields(entry: AuditEntry): string[] {
  return [
    String(entry.id),
    new Date(entry.at).toISOString(),
    entry.actorKind,
    entry.actorId ?? "",
    entry.actorEmail ?? "",
    entry.action,
    entry.action.slice(0, entry.action.indexOf(".")),
    entry.target,
    JSON.stringify(entry.detail),
  ];
}

/**
 * Every entry of the panel's audit log that `filter` keeps, newest first, as a CSV stream
 * (formulas neutralised by formatCsvRecord: a list named "=HYPERLINK(...)" stays text). Read a
 * page at a time as the file is pulled, so a year of entries never sits in memory at once.
 */
export function auditLogCsv(db: ShardDb, panelId: string, filter: AuditFilter): ReadableStream<Uint8Array> {
  return pagedCsv({
    header: AUDIT_CSV_HEADER,
    pageSize: PAGE,
    page: (before: number | undefined, size) => listAuditEntries(db, panelId, before, filter, size),
    fields: auditCsvFields,
    cursor: (last) => last.id,
  });
}
