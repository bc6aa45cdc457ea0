import { config, type ConfigSource } from "../config";

/**
 * Structured log lines: one JSON object per line, which Workers Logs ([observability] in
 * wrangler.toml) indexes by field. Callers pass ids, route patterns and counts only: never a URL
 * with its query (the envelope's `apikey` rides there), a body, an address or a secret.
 */
export type LogLine =
  | {
      kind: "request";
      requestId: string;
      traceId: string;
      panelId: string | null;
      method: string;
      /** The matched route's pattern (`/:version`), never the raw path or query. */
      route: string;
      status: number;
      durationMs: number;
      /** D1 statements the request sent (each of a batch counts). */
      d1Statements: number;
      errorClass: string | null;
    }
  | {
      kind: "queue_batch";
      queue: string;
      traceId: string;
      messages: number;
      acked: number;
      retried: number;
      durationMs: number;
      d1Statements: number;
      errorClass: string | null;
    };

export function logLine(line: LogLine): void {
  console.log(JSON.stringify(line));
}

/** Whether lines are written (LOG_LINES); a configuration that does not parse still logs, so the 500 it causes is seen. */
export function logLinesOn(env: ConfigSource): boolean {
  try {
    return config(env).logLines;
  } catch {
    return true;
  }
}
