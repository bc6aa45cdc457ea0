import { findPanelHome, panelDb } from "../access/shards";
import { DurableObject } from "cloudflare:workers";
import { sendNotification } from "../channels/notifications";
import { decryptSecret } from "../../lib/crypto";
import { config } from "../../lib/config";
import { newId } from "../../lib/random";
import { WebhookBacklog, type AttemptRecord, type DeliveryHour, type InFlightBatch } from "../../store/webhook-backlog";
import { getWebhookWithPanel, setWebhookState, type WebhookState, type WebhookWithPanel } from "../../store/webhooks";
import { addFailure, alertDueAt, alertMessage, type PendingAlert } from "../../domain/webhooks/alerts";
import { BATCH_LIMITS, batchBody, decideCut, type BatchLimits } from "../../domain/webhooks/batching";
import { DELIVERY_TIMEOUT_MS, postBatch, type AttemptResult, type DeliveryTarget } from "./deliver";
import { buildEventObject, sampleEvents } from "../../domain/webhooks/payload";
import { observing } from "../../lib/observability/context";
import { newTraceparent } from "../../lib/observability/trace";
import { decideOutcome, describeAnswer, type Outcome } from "../../domain/webhooks/policy";

const DAY = 24 * 60 * 60 * 1000;
/** Deliveries per hour are kept for a year and a month: a report's period spans at most 366 days. */
const DELIVERY_HOURS_KEPT_MS = 400 * DAY;

export interface DispatcherSettings {
  limits: BatchLimits;
  timeoutMs: number;
  /** Batches one alarm run sends before it yields to a fresh alarm. */
  maxBatchesPerRun: number;
  /** Wall time after which a run sends no further batch (alarm handlers have 15 minutes). */
  maxRunMs: number;
  /** Events older than this leave the backlog undelivered (the batch in flight excepted). */
  retentionMs: number;
  /** At most this many events wait; beyond it the oldest are dropped. */
  maxBacklogEvents: number;
  /** A guid handed over again within this window is not queued again. */
  dedupeWindowMs: number;
  /** Attempt log entries kept. */
  keepAttempts: number;
  /** Wait before the next run after a run failed unexpectedly (D1 unreachable, say). */
  errorBackoffMs: number;
}

export const DISPATCHER_SETTINGS: DispatcherSettings = {
  limits: BATCH_LIMITS,
  timeoutMs: DELIVERY_TIMEOUT_MS,
  maxBatchesPerRun: 100,
  maxRunMs: 60_000,
  retentionMs: 7 * DAY,
  maxBacklogEvents: 1_000_000,
  dedupeWindowMs: 7 * DAY,
  keepAttempts: 10_000,
  errorBackoffMs: 30_000,
};

/** Which webhook this object serves; the object is named by the webhook id. */
export interface DispatcherIdentity {
  panelId: string;
  webhookId: string;
}

export interface EncodedEvent {
  guid: string;
  /** The caller gave the guid, so a repeat of it is a repeated hand-over to skip. */
  dedupe: boolean;
  /** The event's JSON for the webhook's version, URL-encoded. */
  payload: string;
  /** The journey that handed it over, whose report counts its deliveries; null otherwise. */
  source: string | null;
  /** The replay that queued it (services/replays); absent for live events. */
  replay?: string;
}

export interface DispatcherStatus {
  backlog: number;
  oldestAt: number | null;
  inFlight: { batchId: string; events: number; failures: number; nextAttemptAt: number } | null;
  dropped: number;
}

export interface TestReport {
  found: boolean;
  passed: boolean;
  state: WebhookState | null;
  status: number | null;
  error: string | null;
  message: string;
}

interface AlertState {
  pending: PendingAlert | null;
  lastSentAt: number | null;
  dueAt: number | null;
  /** Numbers the alerts, making each send at-most-once across repeated runs. */
  seq: number;
}

const NO_ALERT: AlertState = { pending: null, lastSentAt: null, dueAt: null, seq: 0 };

/**
 * One instance per webhook (idFromName(webhook id)): its durable backlog, batching, delivery,
 * retries, disabling and failure alerts. The alarm is the only scheduler. A run reads the
 * webhook from D1, then sends due batches one at a time, oldest first; a batch keeps its id
 * and bytes until a 2xx removes exactly its events. Running the alarm again at any point only
 * repeats a send the receiver can recognise by the batch id.
 */
export class WebhookDispatcher extends DurableObject<Env> {
  /** Time source; tests replace it to move time without sleeping. */
  clock: () => number = () => Date.now();
  random: () => number = Math.random;
  settings: DispatcherSettings = DISPATCHER_SETTINGS;

  private readonly backlog: WebhookBacklog;
  private running: Promise<void> | null = null;
  /** The webhook was edited since the run going on read it (configChanged). */
  private edited = false;
  private agePrunedAt = Number.NEGATIVE_INFINITY;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.backlog = new WebhookBacklog(ctx.storage.sql, (work) => ctx.storage.transactionSync(work));
  }

  /** Stores the events durably (the answer waits for the write), then makes sure a delivery is due. */
  async enqueue(identity: DispatcherIdentity & { envelopeKey: string }, events: EncodedEvent[]): Promise<{ accepted: number; duplicates: number }> {
    const now = this.clock();
    this.remember(identity);
    const result = this.backlog.append(events, now);
    this.prune(now);
    // A run in progress schedules its successor from what it finds when it ends.
    if (result.accepted > 0 && !this.running && !this.backlog.getMeta<boolean>("held")) {
      const due = this.nextDeliveryAt(now, identity.envelopeKey);
      if (due !== null) await this.armAlarm(due);
    }
    return result;
  }

  async status(): Promise<DispatcherStatus> {
    const counts = this.backlog.counts();
    const batch = this.backlog.currentBatch();
    return {
      backlog: counts.events,
      oldestAt: counts.oldestAt,
      inFlight: batch ? { batchId: batch.id, events: batch.events, failures: batch.failures, nextAttemptAt: batch.nextAttemptAt } : null,
      dropped: this.backlog.getMeta<number>("dropped") ?? 0,
    };
  }

  /**
   * The webhook's settings changed in D1 (services/webhooks/config.ts): a run going on sends no
   * further batch with what it read (an old URL, password or signing secret) but ends, and the
   * run after it, due at once, reads them again. Answers the status, as `status`.
   */
  async configChanged(): Promise<DispatcherStatus> {
    this.edited = true;
    return this.status();
  }

  async deliveries(limit: number, batchId?: string): Promise<AttemptRecord[]> {
    return this.backlog.attempts(limit, batchId);
  }

  /** Deliveries of one journey's events per hour in [from, to) (the journey report). */
  async deliveryHours(source: string, from: number, to: number): Promise<DeliveryHour[]> {
    return this.backlog.deliveryHours(source, from, to);
  }

  /**
   * The test action: a sample batch; HTTP 200 makes a configured webhook operational. (Not
   * named `test`: that name is a Worker handler, not available for RPC.)
   */
  async testEndpoint(identity: DispatcherIdentity): Promise<TestReport> {
    return this.testAndMaybeEnable(identity, false);
  }

  /** Re-tests; on HTTP 200 the webhook is operational again and its backlog resumes, in order. */
  async enable(identity: DispatcherIdentity): Promise<TestReport> {
    return this.testAndMaybeEnable(identity, true);
  }

  /** What of a replay was delivered, and how many of its events still wait. */
  async replayProgress(replay: string): Promise<{ delivered: number; batches: number; waiting: number }> {
    return this.backlog.replayProgress(replay);
  }

  /** A replay was cancelled: its waiting events go (never the batch in flight). */
  async cancelReplay(replay: string): Promise<number> {
    return this.backlog.dropReplay(replay);
  }

  /** A contact was erased: its waiting events go (store/webhook-backlog.ts). */
  async forgetContact(values: string[]): Promise<number> {
    return this.backlog.forgetContact(values);
  }

  /** The webhook was deleted: its backlog, log and alarm go with it. */
  async destroy(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.backlog.createSchema();
  }

  override async alarm(): Promise<void> {
    // A second trigger while a run is going (a test driving the alarm) joins that run.
    if (this.running) return this.running;
    // Each run is a trace of its own: its deliveries carry it to the receivers (traceparent).
    const run = observing({ traceparent: newTraceparent() }, () => this.run());
    this.running = run;
    try {
      await run;
    } finally {
      if (this.running === run) this.running = null;
    }
  }

  /**
   * Records what an attempt at the batch in flight came to and, after a success, cuts the next
   * batch if one is due, all in one transaction (one storage commit per batch sent). Its own
   * method so a test can make it fail: that is a crash after the send, before its outcome is kept.
   */
  recordOutcome(batch: InFlightBatch, result: AttemptResult, outcome: Outcome, envelopeKey: string): InFlightBatch | null {
    return this.ctx.storage.transactionSync(() => {
      this.backlog.recordAttempt(
        {
          at: result.at,
          kind: "delivery",
          batchId: batch.id,
          events: batch.events,
          status: result.status,
          error: result.error,
          errorMessage: result.errorMessage,
          durationMs: result.durationMs,
          response: result.response,
          outcome: outcome.kind === "disable" ? "disabled" : outcome.kind,
          nextAttemptAt: outcome.kind === "retry" ? outcome.at : null,
        },
        this.settings.keepAttempts,
      );
      this.backlog.countAttempt(batch, result.at, outcome.kind === "disable" ? "disabled" : outcome.kind);
      if (outcome.kind !== "delivered") {
        this.backlog.failBatch(batch.id, batch.failures + 1, outcome.kind === "retry" ? outcome.at : result.at);
        return null;
      }
      this.backlog.completeBatch(batch);
      return this.cutDueBatch(envelopeKey, this.clock());
    });
  }

  private async run(): Promise<void> {
    const identity = this.backlog.getMeta<DispatcherIdentity>("identity");
    if (!identity) return;
    let envelopeKey: string | null = null;
    let failed = false;
    try {
      this.edited = false;
      const webhook = await this.webhookOf(identity);
      if (!webhook) {
        // Deleted while this object still held work: nothing can be delivered any more.
        await this.destroy();
        return;
      }
      envelopeKey = webhook.panelName;
      await this.deliverDue(webhook);
    } catch (error) {
      // Nothing is lost: the batch in flight stays as it is and the next run picks it up.
      failed = true;
      console.error(`webhook ${identity.webhookId}: delivery run failed`, error);
    } finally {
      await this.scheduleAfterRun(envelopeKey, failed);
    }
  }

  private async deliverDue(webhook: WebhookWithPanel): Promise<void> {
    this.prune(this.clock());
    await this.sendDueAlert(webhook);
    if (webhook.state !== "operational") {
      // Held: events keep queueing; test or enable resumes delivery.
      this.backlog.setMeta("held", true);
      return;
    }
    this.backlog.setMeta("held", null);
    const target = await this.deliveryTarget(webhook);
    let batch = this.backlog.currentBatch() ?? this.cutDueBatch(webhook.panelName, this.clock());
    const stopAt = Date.now() + this.settings.maxRunMs;
    for (let sent = 0; batch && sent < this.settings.maxBatchesPerRun && Date.now() < stopAt; sent++) {
      const now = this.clock();
      if (batch.nextAttemptAt > now || this.edited) return;
      const body = batchBody(batch.envelopeKey, this.backlog.batchPayloads(batch));
      const result = await postBatch(this.env, target, { id: batch.id, body, replay: batch.replay }, { now, timeoutMs: this.settings.timeoutMs });
      const outcome = decideOutcome(result, batch.failures, this.clock(), this.random);
      const failed = batch;
      batch = this.recordOutcome(batch, result, outcome, webhook.panelName);
      if (outcome.kind === "delivered") continue;

      let current: WebhookWithPanel = webhook;
      if (outcome.kind === "disable") {
        const updated = await setWebhookState(await panelDb(this.env, webhook.panelId), webhook.panelId, webhook.id, { state: "disabled", reason: outcome.reason, from: ["operational"] }, this.clock());
        this.backlog.setMeta("held", true);
        if (updated) current = { ...webhook, ...updated };
      }
      this.noteFailure(current, failed, result);
      await this.sendDueAlert(current, outcome.kind === "retry" ? outcome.at : null);
      return;
    }
  }

  /** Cuts the next batch from the backlog if one is due now (full, or its window has closed). */
  private cutDueBatch(envelopeKey: string, now: number): InFlightBatch | null {
    const decision = decideCut(this.backlog.pendingHead(this.settings.limits.maxEvents), now, envelopeKey, this.settings.limits);
    if (decision.kind !== "cut") return null;
    return this.backlog.cutBatch(newId("bat"), decision.seqs, envelopeKey, now);
  }

  /** The webhook's configuration, on its panel's shard; null once either is gone. */
  private async webhookOf(identity: DispatcherIdentity): Promise<WebhookWithPanel | null> {
    const home = await findPanelHome(this.env, identity.panelId);
    return home ? getWebhookWithPanel(home.db, home.panel, identity.webhookId) : null;
  }

  private async testAndMaybeEnable(identity: DispatcherIdentity, enable: boolean): Promise<TestReport> {
    this.remember(identity);
    const webhook = await this.webhookOf(identity);
    if (!webhook) return { found: false, passed: false, state: null, status: null, error: null, message: "No such webhook" };
    const now = this.clock();
    const context = { version: webhook.version, webhookName: webhook.label, timeZone: webhook.panelTimeZone };
    const samples = sampleEvents(now, webhook.panelPrimaryKey).map((event) => encodeURIComponent(JSON.stringify(buildEventObject(event, context))));
    const batchId = newId("tst");
    const result = await postBatch(this.env, await this.deliveryTarget(webhook), { id: batchId, body: batchBody(webhook.panelName, samples) }, { now, timeoutMs: this.settings.timeoutMs });
    // Only HTTP 200 passes (spec 3); deliveries later accept any 2xx.
    const passed = result.status === 200;
    this.backlog.recordAttempt(
      {
        at: result.at,
        kind: "test",
        batchId,
        events: samples.length,
        status: result.status,
        error: result.error,
        errorMessage: result.errorMessage,
        durationMs: result.durationMs,
        response: result.response,
        outcome: passed ? "passed" : "failed",
        nextAttemptAt: null,
      },
      this.settings.keepAttempts,
    );

    let state = webhook.state;
    const from: WebhookState[] = enable ? ["configured", "disabled", "operational"] : ["configured"];
    if (passed && from.includes(webhook.state)) {
      state = (await setWebhookState(await panelDb(this.env, webhook.panelId), webhook.panelId, webhook.id, { state: "operational", reason: null, from }, this.clock()))?.state ?? state;
      if (state === "operational") {
        this.backlog.setMeta("held", null);
        // A fresh retry schedule: the batch in flight (if any) goes first, at once.
        if (enable) this.backlog.restartSchedule(this.clock());
        const due = this.nextDeliveryAt(this.clock(), webhook.panelName);
        if (due !== null) await this.armAlarm(due);
      }
    }
    const answer = describeAnswer(result);
    const message = passed
      ? `The endpoint answered HTTP 200; the webhook is ${state}${state === "disabled" ? " until the enable action is called" : ""}.`
      : `The endpoint answered ${answer}${result.errorMessage ? ` (${result.errorMessage})` : ""}; a webhook becomes operational only when its test gets HTTP 200. It stays ${state}.`;
    return { found: true, passed, state, status: result.status, error: result.error, message };
  }

  private async deliveryTarget(webhook: WebhookWithPanel): Promise<DeliveryTarget> {
    const key = config(this.env).secretsKey;
    return {
      url: webhook.url,
      username: webhook.username,
      password: webhook.passwordEnc === null ? null : await decryptSecret(key, webhook.passwordEnc),
      signingSecret: webhook.signingSecretEnc === null ? null : await decryptSecret(key, webhook.signingSecretEnc),
    };
  }

  private remember(identity: DispatcherIdentity): void {
    if (!this.backlog.getMeta<DispatcherIdentity>("identity")) {
      this.backlog.setMeta("identity", { panelId: identity.panelId, webhookId: identity.webhookId });
    }
  }

  /** The count bound on every call; the age bounds at most once a minute (they move slowly). */
  private prune(now: number): void {
    const byAge = now - this.agePrunedAt >= 60_000;
    if (byAge) this.agePrunedAt = now;
    const dropped = this.backlog.prune({
      maxEvents: this.settings.maxBacklogEvents,
      olderThan: byAge ? now - this.settings.retentionMs : undefined,
      guidsBefore: byAge ? now - this.settings.dedupeWindowMs : undefined,
      hoursBefore: byAge ? now - DELIVERY_HOURS_KEPT_MS : undefined,
    });
    if (dropped > 0) {
      this.backlog.setMeta("dropped", (this.backlog.getMeta<number>("dropped") ?? 0) + dropped);
      console.warn(`webhook backlog retention dropped ${dropped} undelivered event(s)`);
    }
  }

  /** When the next batch is due: the batch in flight's next attempt, a full batch now, or the window's end. */
  private nextDeliveryAt(now: number, envelopeKey: string): number | null {
    const batch = this.backlog.currentBatch();
    if (batch) return batch.nextAttemptAt;
    const decision = decideCut(this.backlog.pendingHead(this.settings.limits.maxEvents), now, envelopeKey, this.settings.limits);
    if (decision.kind === "cut") return now;
    return decision.kind === "wait" ? decision.until : null;
  }

  private async armAlarm(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  /** Sets the one alarm that follows a run: the next delivery or the next alert, whichever is first. */
  private async scheduleAfterRun(envelopeKey: string | null, failed: boolean): Promise<void> {
    const now = this.clock();
    const candidates: number[] = [];
    if (envelopeKey !== null && !this.backlog.getMeta<boolean>("held")) {
      const due = this.nextDeliveryAt(now, envelopeKey);
      if (due !== null) candidates.push(due);
    }
    const alert = this.backlog.getMeta<AlertState>("alert");
    if (alert?.pending && alert.dueAt !== null) candidates.push(alert.dueAt);
    if (failed) {
      // Whatever broke the run, try again later, not in a tight loop.
      candidates.length = 0;
      candidates.push(now + this.settings.errorBackoffMs);
    }
    // Decided synchronously: from here on, enqueue may arm alarms itself again.
    this.running = null;
    if (candidates.length) await this.ctx.storage.setAlarm(Math.max(now, Math.min(...candidates)));
  }

  private noteFailure(webhook: WebhookWithPanel, batch: InFlightBatch, result: AttemptResult): void {
    if (!webhook.alert) return;
    const state = this.backlog.getMeta<AlertState>("alert") ?? NO_ALERT;
    const pending = addFailure(state.pending, {
      lastAt: result.at,
      batchId: batch.id,
      answer: describeAnswer(result),
      errorMessage: result.errorMessage,
      response: result.response,
    });
    this.backlog.setMeta("alert", { ...state, pending, dueAt: alertDueAt(webhook.alert.frequency, state.lastSentAt) });
  }

  /** Sends the gathered failures once the alert frequency allows; at most once per alert number. */
  private async sendDueAlert(webhook: WebhookWithPanel, nextAttemptAt: number | null = null): Promise<void> {
    const state = this.backlog.getMeta<AlertState>("alert");
    if (!state?.pending) return;
    const now = this.clock();
    if (!webhook.alert) {
      this.backlog.setMeta("alert", { ...state, pending: null, dueAt: null });
      return;
    }
    if (state.dueAt !== null && now < state.dueAt) return;
    const { subject, text } = alertMessage(state.pending, {
      webhookId: webhook.id,
      label: webhook.label,
      url: webhook.url,
      panelId: webhook.panelId,
      panelName: webhook.panelName,
      frequency: webhook.alert.frequency,
      state: webhook.state,
      disabledReason: webhook.disabledReason,
      backlog: this.backlog.counts().events,
      retentionDays: Math.round(this.settings.retentionMs / DAY),
      nextAttemptAt: nextAttemptAt ?? this.backlog.currentBatch()?.nextAttemptAt ?? null,
    });
    await sendNotification(
      this.env,
      { panelId: webhook.panelId, kind: "webhook_alert", to: webhook.alert.emails, subject, text, dedupeKey: `webhook_alert:${webhook.id}:${state.seq}` },
      now,
    );
    this.backlog.setMeta("alert", { pending: null, lastSentAt: now, dueAt: null, seq: state.seq + 1 });
  }
}
