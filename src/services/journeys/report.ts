import {
  JOURNEY_CHANNELS,
  type ContactJourneyPath,
  type JourneyChannelFigures,
  type JourneyReport,
  type JourneyStepFigures,
  type JourneyWebhookHour,
} from "../../domain/journey-report";
import { contactInstances, journeyFigures, stepsOfInstances, type ChannelSums, type InstanceStep, type JourneyFigures, type StepSums } from "../../store/journey-report";
import type { Journey } from "../../store/journeys/definitions";
import { definitionsOfInstances } from "../../store/journeys/versions";
import { conversionCount } from "../../store/journeys/splits";
import type { ShardDb } from "../../store/shards";
import { isoTime } from "../../store/sql";
import { webhookDispatcher } from "../webhooks/enqueue";

/**
 * A journey's report (issue 20, decision 0028): its funnel per step, messages per channel and
 * their engagement, and the deliveries of its webhook events per hour, all from aggregates:
 * the shard's journey_*_stats tables and each webhook's delivery_hours (in its Durable Object).
 */

const NO_MESSAGES: JourneyChannelFigures = { sent: 0, failed: 0, skipped: 0, delivered: 0, opens: 0, opened: 0, clicks: 0, clicked: 0, bounced: 0 };

function emptyStep(type: string | null): JourneyStepFigures {
  return { type, entered: 0, waiting: 0, passed: 0, failed: 0, timed_out: 0 };
}

/** The webhooks the journey's webhook steps name. */
export function webhooksOf(journey: Journey): string[] {
  return [...new Set(journey.definition.steps.flatMap((step) => (step.type === "webhook" ? [step.webhook] : [])))];
}

/**
 * The report over `shards`: the panel's home and each shard holding one of its partitions
 * (panelShards), whose aggregates count their own contacts' instances and messages, summed
 * (decision 0038 step 6); a batch and a count per shard.
 */
export async function journeyReport(env: Env, shards: readonly ShardDb[], journey: Journey, period: { from: number; to: number }): Promise<JourneyReport> {
  const webhookIds = webhooksOf(journey);
  const [each, counts, webhookHours] = await Promise.all([
    Promise.all(shards.map((db) => journeyFigures(db, journey.panelId, journey.id, period.from, period.to))),
    Promise.all(shards.map((db) => conversionCount(db, journey.panelId, journey.id, period))),
    Promise.all(webhookIds.map((id) => webhookDispatcher(env, id).deliveryHours(journey.id, period.from, period.to))),
  ]);
  const figures = each.length === 1 ? each[0]! : mergedFigures(each);
  const converted = counts.reduce((a, b) => a + b, 0);

  // Steps of the definition first, in its order; then any the definition no longer has.
  const steps: Record<string, JourneyStepFigures> = {};
  for (const step of journey.definition.steps) steps[step.id] = emptyStep(step.type);
  for (const row of figures.steps) {
    const { step_id, ...sums } = row;
    steps[step_id] = { ...(steps[step_id] ?? emptyStep(null)), ...sums };
  }
  for (const row of figures.waiting) {
    if (row.waiting === 0 && !steps[row.step_id]) continue;
    (steps[row.step_id] ??= emptyStep(null)).waiting = row.waiting;
  }

  const channels = Object.fromEntries(JOURNEY_CHANNELS.map((channel) => [channel, { ...NO_MESSAGES }])) as JourneyReport["channels"];
  for (const row of figures.channels) {
    const { channel, ...sums } = row;
    if (!(channel in channels)) continue;
    // Email reports no deliveries: what was sent and did not bounce was delivered.
    channels[channel as keyof typeof channels] = channel === "email" ? { ...sums, delivered: Math.max(0, sums.sent - sums.bounced) } : sums;
  }

  const byHour = new Map<number, Omit<JourneyWebhookHour, "hour">>();
  for (const hours of webhookHours) {
    for (const h of hours) {
      const total = byHour.get(h.hour) ?? { delivered: 0, failed: 0, retried: 0 };
      byHour.set(h.hour, { delivered: total.delivered + h.delivered, failed: total.failed + h.failed, retried: total.retried + h.retried });
    }
  }

  return {
    journey_id: journey.id,
    period: { from: isoTime(period.from), to: isoTime(period.to) },
    ...figures.totals,
    converted,
    steps,
    channels,
    webhook_ids: webhookIds,
    webhooks: [...byHour.entries()].sort(([a], [b]) => a - b).map(([hour, counts]) => ({ hour: isoTime(hour), ...counts })),
  };
}

/** Each shard's figures of one journey, summed: by step, by channel and in total. */
function mergedFigures(each: readonly JourneyFigures[]): JourneyFigures {
  const add = <T extends object>(into: Map<string, T>, key: string, row: T) => {
    const sum = into.get(key);
    if (!sum) return void into.set(key, { ...row });
    for (const [field, value] of Object.entries(row)) if (typeof value === "number") (sum as Record<string, unknown>)[field] = ((sum as Record<string, number>)[field] ?? 0) + value;
  };
  const steps = new Map<string, StepSums>();
  const waiting = new Map<string, { step_id: string; waiting: number }>();
  const channels = new Map<string, ChannelSums>();
  const totals: JourneyFigures["totals"] = { entered: 0, completed: 0, exited: 0 };
  for (const figures of each) {
    totals.entered += figures.totals.entered;
    totals.completed += figures.totals.completed;
    totals.exited += figures.totals.exited;
    for (const row of figures.steps) add(steps, row.step_id, row);
    for (const row of figures.waiting) add(waiting, row.step_id, row);
    for (const row of figures.channels) add(channels, row.channel, row);
  }
  return { totals, steps: [...steps.values()], waiting: [...waiting.values()], channels: [...channels.values()] };
}

/** What a step run came to, as the contact's path shows it. */
function stepResult(step: InstanceStep): string | null {
  if (step.messageStatus !== null) return step.messageStatus;
  if (step.pointKind !== null) return step.pointOutcome ?? "waiting";
  return step.result;
}

/** The contact's way through journeys: its newest `limit` instances, newest first, each with the steps it ran in order. */
export async function contactJourneyPaths(db: ShardDb, panelId: string, contactId: number, limit: number): Promise<ContactJourneyPath[]> {
  const instances = await contactInstances(db, panelId, contactId, limit);
  const ids = instances.map((i) => i.id);
  // Each instance's steps are those of the version it entered on.
  const [steps, definitions] = await Promise.all([stepsOfInstances(db, panelId, ids), definitionsOfInstances(db, ids)]);
  const byInstance = new Map<string, InstanceStep[]>();
  for (const step of steps) byInstance.set(step.instanceId, [...(byInstance.get(step.instanceId) ?? []), step]);
  return instances.map((instance) => {
    const definition = definitions.get(instance.id)?.steps ?? [];
    const order = new Map(definition.map((s, i) => [s.id, i]));
    const types = new Map(definition.map((s) => [s.id, s.type as string]));
    // Steps run at one moment (one point's continuation) follow the definition's order.
    const ran = (byInstance.get(instance.id) ?? []).sort((a, b) => a.at - b.at || (order.get(a.stepId) ?? 0) - (order.get(b.stepId) ?? 0));
    return {
      journey_id: instance.journeyId,
      name: instance.name,
      status: instance.status,
      entered_at: isoTime(instance.enteredAt),
      ended_at: instance.endedAt === null ? null : isoTime(instance.endedAt),
      steps: ran.map((step) => ({ step_id: step.stepId, type: types.get(step.stepId) ?? null, at: isoTime(step.at), result: stepResult(step) })),
    };
  });
}
