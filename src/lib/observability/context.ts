import { AsyncLocalStorage } from "node:async_hooks";

/**
 * What one request learns about itself while it runs, for its log line (log.ts) and its
 * outbound calls (trace.ts). Kept in an AsyncLocalStorage so handlers deep in the layers note
 * the panel or a fault without every signature carrying it.
 */
export interface Observation {
  /** The `requestid` the response carries (respond.ts newRequestId reads it); none outside a request. */
  requestId?: string;
  /** W3C traceparent of this request: the caller's trace, or one started here. */
  traceparent: string;
  panelId?: string;
  /** Class of the fault a 5xx came from (the error's name), never its message. */
  errorClass?: string;
  /** D1 statements sent so far (d1-count.ts), where the env was wrapped to count them. */
  d1Statements?: number;
}

const storage = new AsyncLocalStorage<Observation>();

export function observing<T>(observation: Observation, run: () => T): T {
  return storage.run(observation, run);
}

export function currentObservation(): Observation | undefined {
  return storage.getStore();
}

/** The panel a request turned out to be of (known after its key or client id is read). */
export function notePanel(panelId: string): void {
  const observation = storage.getStore();
  if (observation) observation.panelId = panelId;
}

export function noteFault(error: unknown): void {
  const observation = storage.getStore();
  if (observation) observation.errorClass = errorClass(error);
}

export function errorClass(error: unknown): string {
  if (error instanceof Error) return error.constructor?.name && error.constructor.name !== "Error" ? error.constructor.name : error.name;
  return typeof error;
}
