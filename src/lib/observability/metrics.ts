/**
 * Counters and durations as Workers Analytics Engine data points (the METRICS binding). Each
 * point: index = its kind, blob1 = kind, then labels; double1.. = values (docs/operations.md,
 * logs and metrics). Where the binding is missing (a deployment without it, some tests) every
 * method does nothing: metrics never decide whether work succeeds.
 */
export interface Metrics {
  request(route: string, method: string, status: number, durationMs: number): void;
  queueBatch(queue: string, messages: number, acked: number, retried: number, durationMs: number): void;
  message(channel: string, outcome: "sent" | "failed"): void;
  webhook(outcome: "delivered" | "failed"): void;
  /** Events stored by a call (duplicates not counted), by channel of the first: custom_activity, email, sms, apn, bpn. */
  events(channel: string, recorded: number): void;
}

/** The shape of the binding metrics need (AnalyticsEngineDataset's one method). */
export interface DataPointWriter {
  writeDataPoint(point: { indexes?: string[]; blobs?: string[]; doubles?: number[] }): void;
}

const NONE: Metrics = { request() {}, queueBatch() {}, message() {}, webhook() {}, events() {} };

/** One recorder per dataset binding, made at its first use: every request records one point. */
const recorders = new WeakMap<DataPointWriter, Metrics>();

export function metrics(env: { METRICS?: DataPointWriter }): Metrics {
  const dataset = env.METRICS;
  if (!dataset || typeof dataset.writeDataPoint !== "function") return NONE;
  let recorder = recorders.get(dataset);
  if (!recorder) recorders.set(dataset, (recorder = recorderOf(dataset)));
  return recorder;
}

function recorderOf(dataset: DataPointWriter): Metrics {
  const write = (kind: string, blobs: string[], doubles: number[]) => {
    try {
      dataset.writeDataPoint({ indexes: [kind], blobs: [kind, ...blobs], doubles });
    } catch (error) {
      // A full or unavailable dataset loses a point, never the request it measured.
      console.error("metrics: data point not written", error);
    }
  };
  return {
    request: (route, method, status, durationMs) => write("request", [route, method, String(status)], [1, durationMs]),
    queueBatch: (queue, messages, acked, retried, durationMs) => write("queue_batch", [queue], [messages, acked, retried, durationMs]),
    message: (channel, outcome) => write("message", [channel, outcome], [1]),
    webhook: (outcome) => write("webhook", [outcome], [1]),
    events: (channel, recorded) => write("events", [channel], [recorded]),
  };
}
