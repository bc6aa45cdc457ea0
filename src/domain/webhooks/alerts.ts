/**
 * Failure alerts (spec 6.4): the configured recipients hear of every failed delivery attempt,
 * at most once per period of the alert frequency. Failures inside a period are gathered and
 * reported together when the period ends, so a webhook disabled right after an alert still
 * gets its "disabled" mail. Pure: the Durable Object keeps the pending record and the time of
 * the last alert.
 */

export const ALERT_FREQUENCIES = ["immediate", "hourly", "daily"] as const;
export type AlertFrequency = (typeof ALERT_FREQUENCIES)[number];

const PERIOD_MS: Record<AlertFrequency, number> = { immediate: 0, hourly: 60 * 60 * 1000, daily: 24 * 60 * 60 * 1000 };

/** Failures gathered since the last alert. */
export interface PendingAlert {
  failures: number;
  firstAt: number;
  lastAt: number;
  batchId: string;
  /** "HTTP 503" or "error: timeout". */
  answer: string;
  errorMessage: string | null;
  response: string;
}

/** When the next alert may go out. */
export function alertDueAt(frequency: AlertFrequency, lastSentAt: number | null): number {
  return lastSentAt === null ? 0 : lastSentAt + PERIOD_MS[frequency];
}

export function addFailure(pending: PendingAlert | null, failure: Omit<PendingAlert, "failures" | "firstAt">): PendingAlert {
  return { ...failure, failures: (pending?.failures ?? 0) + 1, firstAt: pending?.firstAt ?? failure.lastAt };
}

export interface AlertContext {
  webhookId: string;
  label: string;
  url: string;
  panelId: string;
  panelName: string;
  frequency: AlertFrequency;
  state: "configured" | "operational" | "disabled";
  disabledReason: string | null;
  backlog: number;
  retentionDays: number;
  /** When the failing batch is tried again, if it is. */
  nextAttemptAt: number | null;
}

export function alertMessage(pending: PendingAlert, context: AlertContext): { subject: string; text: string } {
  const disabled = context.state === "disabled";
  const subject = disabled
    ? `Webhook "${context.label}" is disabled: ${pending.answer}`
    : `Webhook "${context.label}" failed: ${pending.answer}`;
  const enablePath = `POST /admin/v1/panels/${context.panelId}/webhooks/${context.webhookId}/enable`;
  const lines = [
    `Webhook "${context.label}" (id ${context.webhookId}, panel "${context.panelName}") could not deliver to ${context.url}.`,
    "",
    `Latest failure: ${new Date(pending.lastAt).toISOString()}, batch ${pending.batchId}: ${pending.answer}${pending.errorMessage ? ` (${pending.errorMessage})` : ""}`,
    `Failures since the last alert: ${pending.failures} (first at ${new Date(pending.firstAt).toISOString()}; alerts are sent ${context.frequency === "immediate" ? "immediately" : context.frequency})`,
    "",
    "Response (first 2 KB):",
    pending.response || "(empty)",
    "",
  ];
  if (disabled) {
    lines.push(
      `The webhook is disabled: ${context.disabledReason ?? pending.answer}.`,
      `Nothing is lost: ${context.backlog} undelivered event(s) wait in its backlog (kept up to ${context.retentionDays} days) and are delivered in order once it is enabled again.`,
      `To re-enable it, fix the endpoint, then call ${enablePath} (admin token). It sends a test batch and, on HTTP 200, resumes delivery.`,
    );
  } else {
    const next = context.nextAttemptAt === null ? "" : ` The batch is tried again at ${new Date(context.nextAttemptAt).toISOString()}.`;
    lines.push(
      `The webhook is still ${context.state}; failed batches are retried with backoff for about three days, then the webhook is disabled.${next}`,
      `${context.backlog} event(s) wait in its backlog. If it gets disabled, re-enable it with ${enablePath} once the endpoint works.`,
    );
  }
  return { subject, text: lines.join("\n") };
}
