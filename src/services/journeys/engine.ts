import { allShards, shardOf, type ShardDb } from "../../store/shards";
import { decideStep, entryAllowed, splitGoalAt, stepsAfterDecision, stepsAfterPoint } from "../../domain/journey-walk";
import {
  isMessageStep,
  nextSteps,
  splitLabels,
  stepById,
  type JourneyDefinition,
  type JourneyStep,
  type MessageStep,
} from "../../domain/journey";
import { newId } from "../../lib/random";
import { settleEach } from "../../lib/tasks";
import { getEventsByIds, type StoredEvent } from "../../store/events";
import { contactsByIds, type KeyedContact } from "../../store/contacts";
import { getJourneysByIds, type Journey } from "../../store/journeys/definitions";
import { definitionsOfInstances } from "../../store/journeys/versions";
import { enterInstances, handedStepRunStatement, instancesGoing, messageStepRunStatement, stepRunStatement, type Entry } from "../../store/journeys/instances";
import { getMessages, insertMessageStatement, type JourneyMessage } from "../../store/journeys/messages";
import { contactTimeZone, describeCap, gateBeforeCaps, gateOfCapAnswer, NO_RULES, type MessageGate, type MessageRules } from "../../domain/message-rules";
import { countSendIfAllowed } from "../../store/contact-sends";
import { getPanel } from "../../store/panels";
import { insertSplitEntryStatement } from "../../store/journeys/splits";
import { hasLeftTopic } from "../../store/topics";
import { JOURNEY_TOPIC_SKIP } from "../../domain/topics";
import { finishPointStatements, insertPointStatement, releasePoints, takeStartPoints, type JourneyPoint } from "../../store/journeys/points";
import { sendEmailGroups } from "./email-groups";
import { enqueueWebhookEventsEach } from "../webhooks/enqueue";
import type { WebhookEvent } from "../../domain/webhooks/payload";
import { sendJourneyEmail, type JourneyEmailEnv } from "./messages";
import { journeyWebhookEvent } from "./webhook-event";
import { enqueuePush, planJourneyPush } from "./push";
import { enqueueSms, planJourneySms } from "./sms";
import { messageRecipient } from "../../domain/send-skips";

/**
 * The journey engine. An instance goes on from "points": its start, and each wait or delay
 * once ended (by the awaited event, a timeout or the delay's end). Continuing a point runs
 * the steps after it up to the next wait or delay, then marks the point continued in the
 * same D1 batch as everything the steps recorded. Every step's effect is keyed by
 * (instance, step): the message's msgid, the webhook event's guid, the next point's row, the
 * step-run row. So continuing a point twice (a redelivered event, a cron run after a crash)
 * acts once.
 *
 * An instance walks the steps of the journey version it entered on (journey_instances.version),
 * whatever version the journey is at now; only entering looks at the current one.
 */

export type EngineEnv = Env & JourneyEmailEnv;

interface Branch {
  /** The event the branch carries (trigger or awaited event), for webhooks. */
  eventId: number | null;
  /** The last message sent on the branch, for waits on its events. */
  message: { channel: string; msgid: string } | null;
}

/**
 * How long the one who ended a point (or took it) holds it to continue it. A holder that died
 * leaves it free after this; the cron then hands it to the JOURNEYS queue (points.ts).
 */
export const POINT_LEASE_MS = 60_000;

/** Points planned at a time (their reads overlap). */
const CONTINUE_CONCURRENCY = 25;

export function messageIdOf(instanceId: string, stepId: string): string {
  return `${instanceId}.${stepId}`;
}

/**
 * A message step held by quiet hours or a full cap waits as a delay point named
 * `<step>#<n>` (step ids have no `#`), whose end runs the step itself again; n counts the
 * holds of the step, so a step held again (another message took the room meanwhile) gets a
 * point of its own. The point's msgid stays empty: no message event may end it.
 */
export function heldStepOf(pointStepId: string): { stepId: string; hold: number } | null {
  const at = pointStepId.indexOf("#");
  if (at < 0) return null;
  return { stepId: pointStepId.slice(0, at), hold: Number(pointStepId.slice(at + 1)) || 0 };
}

/** The panel's rules and zone, as the engine applies them to message steps. */
interface PanelRules {
  rules: MessageRules;
  timezone: string;
  /**
   * The panel's home database, which keeps its channel setup (senders, SMS, push, templates):
   * `db` itself, unless `db` is a shard holding one of its partitions (decision 0038).
   */
  home: ShardDb;
}

/**
 * Builds the instances for these entries and continues from their start. Entries an earlier
 * attempt already made (it died before continuing them, and the event or entry came again)
 * are continued too, once their start point's lease ran out.
 */
export async function enterJourneys(env: EngineEnv, db: ShardDb, entries: readonly Omit<Entry, "instanceId">[], now: number): Promise<number> {
  if (entries.length === 0) return 0;
  const full = entries.map((e) => ({ ...e, instanceId: newId("jin") }));
  const created = await enterInstances(db, full, now, now + POINT_LEASE_MS);
  const starts: JourneyPoint[] = full
    .filter((e) => created.has(e.instanceId))
    .map((e) => ({
      id: 0,
      instanceId: e.instanceId,
      stepId: "",
      panelId: e.panelId,
      journeyId: e.journeyId,
      contactId: e.contactId,
      kind: "start",
      channel: null,
      msgid: null,
      events: null,
      activityKey: null,
      eventId: e.eventId,
      dueAt: null,
      outcome: "start",
      matchedEventId: null,
      createdAt: now,
    }));
  const existing = full.filter((e) => !created.has(e.instanceId));
  const unfinished = existing.length ? await takeStartPoints(db, existing, now, now + POINT_LEASE_MS) : [];
  await continuePoints(env, db, [...starts, ...unfinished], now);
  return starts.length;
}

/** Entries of one contact into the given journeys, where the journey's filter lets it in. */
export function entriesFor(journeys: readonly Journey[], contact: KeyedContact, entryKey: string, eventId: number | null): Omit<Entry, "instanceId">[] {
  return journeys
    .filter((j) => entryAllowed(j.definition, contact.attributes))
    .map((j) => ({ panelId: j.panelId, journeyId: j.id, contactId: contact.id, entryKey, eventId, version: j.version }));
}

/**
 * Continues ended points of running journeys, all of one shard (others stay held: a paused
 * journey's points are taken up when it runs again). Throws when a step failed; what
 * succeeded stays done.
 */
export async function continuePoints(env: EngineEnv, db: ShardDb, points: readonly JourneyPoint[], now: number): Promise<void> {
  if (points.length === 0) return;
  const journeys = await getJourneysByIds(
    db,
    points.map((p) => ({ panelId: p.panelId, journeyId: p.journeyId })),
  );
  // Instances of a journey never edited (version 1) walk its current definition: only those of
  // edited journeys need their own version's read.
  const definitions = await definitionsOfInstances(
    db,
    points.filter((p) => (journeys.get(p.journeyId)?.version ?? 1) > 1).map((p) => p.instanceId),
  );
  const live = points.filter((p) => journeys.get(p.journeyId)?.status === "running");
  // Held by a pause: free at once, so that resuming (or the cron after it) takes them.
  if (live.length < points.length) await releasePoints(db, points.filter((p) => !live.includes(p)));
  if (live.length === 0) return;
  const byPanel = new Map<string, JourneyPoint[]>();
  for (const p of live) byPanel.set(p.panelId, [...(byPanel.get(p.panelId) ?? []), p]);

  const failures: unknown[] = [];
  for (const [panelId, panelPoints] of byPanel) {
    // Read fresh, not from the isolate's panel cache: a changed cap applies to the next send.
    const panel = await getPanel(env.DB, panelId);
    // A partition's shard (decision 0038): the SMS and push nudges name it, the setup is read on the home.
    const partition = panel && panel.partitions.length ? allShards(env).find((s) => s.db === db && s.index !== panel.shard) : undefined;
    const panelRules: PanelRules = { rules: panel?.messageRules ?? NO_RULES, timezone: panel?.timezone ?? "UTC", home: partition ? shardOf(env, panel!) : db };
    const eventIds = panelPoints.flatMap((p) => [p.eventId, p.matchedEventId]).filter((id): id is number => id !== null);
    const [contacts, events, messages] = await Promise.all([
      contactsByIds(
        db,
        panelId,
        panelPoints.map((p) => p.contactId),
      ),
      getEventsByIds(db, panelId, [...new Set(eventIds)]),
      getMessages(
        db,
        panelId,
        panelPoints.flatMap((p) => (p.msgid ? [p.msgid] : [])),
      ),
    ]);
    const planned = await settleEach(panelPoints, CONTINUE_CONCURRENCY, (point) => {
      const journey = journeys.get(point.journeyId)!;
      return planPoint(env, db, journey, definitions.get(point.instanceId) ?? journey.definition, point, contacts.get(point.contactId), events, messages, panelRules, now);
    });
    const plans: PointPlan[] = [];
    for (const outcome of planned) {
      if (outcome.status === "rejected") failures.push(outcome.reason);
      else plans.push(outcome.value as PointPlan);
    }
    failures.push(...(await carryOut(env, db, panelId, plans, now, partition !== undefined)));
    const stored = plans.filter((plan) => plan.failure === undefined && plan.left === undefined);
    try {
      await Promise.all([
        enqueueSms(env, panelId, stored.flatMap((plan) => plan.queuedSms.map((q) => q.msgid)), 0, partition?.index),
        enqueuePush(env, panelId, stored.flatMap((plan) => plan.queuedPush.map((q) => q.msgid)), 0, partition?.index),
      ]);
    } catch (error) {
      // The messages wait in D1; the cron's re-drive nudges them (services/journeys/queued-sends.ts).
      console.error(`panel ${panelId}: SMS or push nudges not sent; the cron re-drives them`, error);
    }
  }
  if (failures.length) throw failures[0];
}

/** An SMS or push the point records as waiting for the provider, and the insert that records it. */
interface QueuedMessage {
  msgid: string;
  insert: D1PreparedStatement;
}

/** What continuing one point does: emails to send, webhook hand-overs, then one set of D1 writes. */
interface PointPlan {
  point: JourneyPoint;
  emails: Array<{ message: JourneyMessage; step: Extract<MessageStep, { type: "email" }>; attributes: KeyedContact["attributes"] }>;
  handOvers: Array<{ webhookId: string; stepId: string; event: WebhookEvent; journeyId: string }>;
  statements: D1PreparedStatement[];
  /**
   * SMS and push this point records as waiting for the provider, nudged once stored; after the
   * writes, only those their insert recorded (not one of an instance that exited meanwhile).
   */
  queuedSms: QueuedMessage[];
  queuedPush: QueuedMessage[];
  failure?: unknown;
  /** Not carried out: its journey was paused (the point is released for the resume) or its instance ended since it was planned. */
  left?: "held" | "ended";
}

/** Webhook events handed to one webhook's Durable Object per call. */
const HAND_OVER_PAGE = 500;
/** D1 statements per batch when writing what many points did: whole points only, so each point's writes stay one transaction. */
const STATEMENTS_PER_BATCH = 300;

/**
 * Carries out the plans of many points in few round trips: emails point by point (a provider
 * call each) in groups, each after a read of whether its points' journey still runs and their
 * instances are still active (email-groups.ts), webhook events, after one more such read
 * (recheckHandOvers), in one hand-over per webhook and page, and the D1 writes of many points
 * per batch (each point's within one batch, its `continued` mark among them). A point whose
 * email or hand-over failed writes nothing and is retried; one a pause came to is released,
 * unwritten, for the resume to plan again; one whose instance ended before its emails (the stop
 * or goal marked its point continued) writes nothing, and one that ended after them hands
 * nothing over. The others are done. Returns the failures.
 */
async function carryOut(env: EngineEnv, db: ShardDb, panelId: string, plans: PointPlan[], now: number, onPartition: boolean): Promise<unknown[]> {
  const withEmail = plans.filter((plan) => plan.emails.length > 0);
  const sent = await sendEmailGroups(db, panelId, withEmail, async (plan) => {
    for (const { message, step, attributes } of plan.emails) await sendJourneyEmail(env, message, step, attributes, now, onPartition ? db : undefined);
  });
  sent.forEach((outcome, i) => {
    if ("failure" in outcome) withEmail[i]!.failure = outcome.failure;
    if ("left" in outcome) withEmail[i]!.left = outcome.left;
  });
  await recheckHandOvers(db, panelId, plans);
  const held = plans.filter((plan) => plan.left === "held");
  try {
    await releasePoints(db, held.map((plan) => plan.point));
  } catch (error) {
    // Left leased: once the lease runs out and the journey runs, the cron takes them.
    for (const plan of held) plan.failure = error;
  }

  const byWebhook = new Map<string, Array<{ plan: PointPlan; handOver: PointPlan["handOvers"][number] }>>();
  for (const plan of plans) {
    if (plan.failure !== undefined || plan.left !== undefined) continue;
    for (const handOver of plan.handOvers) byWebhook.set(handOver.webhookId, [...(byWebhook.get(handOver.webhookId) ?? []), { plan, handOver }]);
  }
  for (const [webhookId, items] of byWebhook) {
    for (let from = 0; from < items.length; from += HAND_OVER_PAGE) {
      const page = items.slice(from, from + HAND_OVER_PAGE).filter((item) => item.plan.failure === undefined);
      try {
        const results = await enqueueWebhookEventsEach(env, panelId, webhookId, page.map((item) => item.handOver.event));
        page.forEach(({ plan, handOver }, i) => {
          const result = results[i]!;
          // An event the webhook can never take (too large) is a permanent refusal, not a retry.
          if (result.kind === "refused") console.error(`journey ${handOver.journeyId} step ${handOver.stepId}: webhook event refused`, result.reason);
          const recorded = result.kind === "refused" ? `refused: ${result.reason}` : result.kind;
          plan.statements.push(handedStepRunStatement(db, plan.point.instanceId, handOver.stepId, handOver.journeyId, recorded, now));
        });
      } catch (error) {
        for (const { plan } of page) plan.failure ??= error;
      }
    }
  }

  const done = plans.filter((plan) => plan.failure === undefined && plan.left === undefined);
  let batch: PointPlan[] = [];
  let size = 0;
  const write = async () => {
    const writing = batch;
    batch = [];
    size = 0;
    const statements = writing.flatMap((plan) => [...plan.statements, ...finishPointStatements(db, plan.point, now)]);
    try {
      const results = await db.batch(statements);
      const recorded = new Set(statements.filter((_, i) => results[i]!.results.length > 0));
      for (const plan of writing) {
        plan.queuedSms = plan.queuedSms.filter((q) => recorded.has(q.insert));
        plan.queuedPush = plan.queuedPush.filter((q) => recorded.has(q.insert));
      }
    } catch (error) {
      for (const plan of writing) plan.failure = error;
    }
  };
  for (const plan of done) {
    batch.push(plan);
    size += plan.statements.length + 2;
    if (size >= STATEMENTS_PER_BATCH) await write();
  }
  if (batch.length) await write();
  return plans.flatMap((plan) => (plan.failure === undefined ? [] : [plan.failure]));
}

/**
 * Reads again, in one statement by primary keys, the instances and journeys of the points with
 * webhook events to hand over: a goal, stop or pause may have come while the pass planned or
 * mailed. A point whose instance ended hands nothing over (its writes, each reading its
 * instance, record no more than it did: its emails); one whose journey was paused is left held,
 * unwritten, for the resume to plan again (an email claimed now is not sent twice, an event's
 * guid is handed over once). A failed read fails the points, retried.
 */
async function recheckHandOvers(db: ShardDb, panelId: string, plans: PointPlan[]): Promise<void> {
  const handing = plans.filter((plan) => plan.failure === undefined && plan.left === undefined && plan.handOvers.length > 0);
  if (handing.length === 0) return;
  try {
    const states = await instancesGoing(
      db,
      panelId,
      handing.map((plan) => plan.point.instanceId),
    );
    for (const plan of handing) {
      const state = states.get(plan.point.instanceId) ?? "ended";
      if (state === "held") plan.left = "held";
      else if (state === "ended") plan.handOvers = [];
    }
  } catch (error) {
    for (const plan of handing) plan.failure = error;
  }
}

async function planPoint(
  env: EngineEnv,
  db: ShardDb,
  journey: Journey,
  definition: JourneyDefinition,
  point: JourneyPoint,
  contact: KeyedContact | undefined,
  events: Map<number, StoredEvent>,
  messages: Map<string, JourneyMessage>,
  panelRules: PanelRules,
  now: number,
): Promise<PointPlan> {
  const plan: PointPlan = { point, emails: [], handOvers: [], statements: [], queuedSms: [], queuedPush: [] };
  if (!contact || point.outcome === "cancelled") return plan;
  let first: JourneyStep[];
  const held = point.kind === "delay" ? heldStepOf(point.stepId) : null;
  if (held) {
    // The hold is over: the held message step runs again (and may be held again).
    const step = stepById(definition, held.stepId);
    first = step ? [step] : [];
  } else {
    first = stepsAfterPoint(
      definition,
      point.kind === "start" ? { kind: "start" } : point.kind === "delay" ? { kind: "delay", stepId: point.stepId } : { kind: "wait", stepId: point.stepId, outcome: point.outcome === "event" ? "event" : "timeout" },
    );
  }
  const branch: Branch = {
    eventId: point.outcome === "event" ? point.matchedEventId : point.eventId,
    message: point.msgid && point.channel ? { channel: point.channel, msgid: point.msgid } : null,
  };
  const planner = new StepPlanner(env, db, journey, definition, point, contact, events, messages, panelRules, now, plan);
  for (const step of first) await planner.step(step, branch);
  return plan;
}

/** Walks the steps after a point up to the next wait or delay, recording in the plan what each does. */
class StepPlanner {
  constructor(
    private readonly env: EngineEnv,
    private readonly db: ShardDb,
    private readonly journey: Journey,
    /** The definition of the instance's version. */
    private readonly definition: JourneyDefinition,
    private readonly point: JourneyPoint,
    private readonly contact: KeyedContact,
    private readonly events: Map<number, StoredEvent>,
    private readonly messages: Map<string, JourneyMessage>,
    private readonly panelRules: PanelRules,
    private readonly now: number,
    private readonly plan: PointPlan,
  ) {}

  /**
   * Whether a message step goes now under the panel's rules: exempt steps always; in the
   * channel's quiet hours (on the contact's clock) it is held to their end; under a cap it is
   * counted (one conditional insert keyed by its msgid, so a step run again after a crash finds
   * its room) or refused, then skipped or held until the caps allow it, as the step says; a
   * step whose message is already recorded is not held (see `recorded`). The
   * decision is domain's (gateBeforeCaps, gateOfCapAnswer), which the simulation applies too.
   */
  private async gate(step: MessageStep, msgid: string): Promise<MessageGate> {
    const { rules, timezone } = this.panelRules;
    const before = gateBeforeCaps(step, rules, contactTimeZone(this.contact.attributes, timezone), this.now);
    const gate = "caps" in before ? gateOfCapAnswer(step, await countSendIfAllowed(this.db, { panelId: this.point.panelId, contactId: this.contact.id, channel: before.channel, key: msgid }, before.caps, this.now)) : before;
    return "holdUntil" in gate && (await this.recorded(msgid)) ? { go: true } : gate;
  }

  /**
   * Whether the step's message is already recorded (sent, claimed or settled): its point is
   * planned again after a pause that came while its emails went out. Such a step is not held
   * (its message does not go again, its claim finds it done), or the steps after it would wait
   * out quiet hours for nothing. Read by primary key only when a hold is due.
   */
  private async recorded(msgid: string): Promise<boolean> {
    return this.messages.has(msgid) || (await getMessages(this.db, this.point.panelId, [msgid])).has(msgid);
  }

  /** The number of the hold this point is of `step` (0: not a hold of it). */
  private holdsOf(step: JourneyStep): number {
    const held = this.point.kind === "delay" ? heldStepOf(this.point.stepId) : null;
    return held?.stepId === step.id ? held.hold : 0;
  }

  private ran(step: JourneyStep, result: string) {
    this.plan.statements.push(stepRunStatement(this.db, this.point.instanceId, step.id, this.journey.id, result, this.now));
  }

  /** A message step ran: counted only if its message is recorded (written before this in the batch, or by an email's claim). */
  private ranMessage(step: MessageStep, msgid: string) {
    this.plan.statements.push(messageStepRunStatement(this.db, this.point.instanceId, step.id, this.journey.id, msgid, this.now));
  }

  /** Records the step's message as skipped for `reason`; the journey goes on after it. */
  private skip(step: MessageStep, planned: JourneyMessage, reason: string, branch: Branch) {
    const message: JourneyMessage = { ...planned, status: "skipped", error: reason };
    this.plan.statements.push(insertMessageStatement(this.db, message));
    this.messages.set(message.msgid, message);
    this.ranMessage(step, message.msgid);
    return this.next(step, "done", { ...branch, message: { channel: step.type, msgid: message.msgid } });
  }

  private async next(step: JourneyStep, outcome: "done" | boolean | { branch: number }, branch: Branch) {
    for (const child of nextSteps(this.definition, step, outcome)) await this.step(child, branch);
  }

  async step(step: JourneyStep, branch: Branch): Promise<void> {
    const { instanceId, panelId, journeyId, contactId } = this.point;
    if (isMessageStep(step)) {
      let message = this.message(step);
      // A contact who left the step's topic is skipped before the caps count it (issue 45, item 4).
      if (step.topic !== undefined && (await hasLeftTopic(this.db, panelId, contactId, step.topic))) return this.skip(step, message, JOURNEY_TOPIC_SKIP, branch);
      const gate = await this.gate(step, message.msgid);
      if (!gate.go && "holdUntil" in gate) {
        // No step run yet: the one recorded when the step finally runs is the step's.
        this.plan.statements.push(
          insertPointStatement(
            this.db,
            { instanceId, stepId: `${step.id}#${this.holdsOf(step) + 1}`, panelId, journeyId, contactId, kind: "delay", eventId: branch.eventId, dueAt: Math.max(gate.holdUntil, this.now + 1) },
            this.now,
          ),
        );
        return;
      }
      if (!gate.go) return this.skip(step, message, describeCap(gate.capped), branch);
      if (step.type === "email") this.plan.emails.push({ message, step, attributes: this.contact.attributes });
      else if (step.type === "sms") {
        const planned = await planJourneySms(this.env, this.db, message, step, this.contact.attributes, this.now, this.panelRules.home);
        this.plan.statements.push(...planned.statements);
        if (planned.queued) this.plan.queuedSms.push({ msgid: message.msgid, insert: planned.insert });
        message = planned.message;
      } else {
        const planned = await planJourneyPush(this.env, this.db, message, this.contact.attributes, this.panelRules.home);
        this.plan.statements.push(...planned.statements);
        if (planned.queued) this.plan.queuedPush.push({ msgid: message.msgid, insert: planned.insert });
        message = planned.message;
      }
      this.messages.set(message.msgid, message);
      this.ranMessage(step, message.msgid);
      return this.next(step, "done", { ...branch, message: { channel: step.type, msgid: message.msgid } });
    }
    // What the step decides is the rule the simulation applies too (domain/journey-walk.ts).
    const decision = decideStep(journeyId, step, this.contact, this.now);
    switch (decision.kind) {
      case "condition":
        this.ran(step, decision.holds ? "then" : "else");
        break;
      case "split": {
        // The branch is a pure function of the instance's version and the contact, so a step run
        // again after a crash (its emails possibly sent, its writes not) takes the same one.
        const label = splitLabels(decision.step.branches.length)[decision.branch]!;
        this.plan.statements.push(
          insertSplitEntryStatement(this.db, { instanceId, stepId: step.id, panelId, journeyId, contactId, branch: label, goal: splitGoalAt(decision.step, this.now) }, this.now),
        );
        this.ran(step, `branch ${label}`);
        break;
      }
      case "webhook": {
        const event = branch.eventId === null ? null : (this.events.get(branch.eventId) ?? null);
        const message = event?.msgid ? (this.messages.get(event.msgid) ?? null) : null;
        const described = journeyWebhookEvent({
          journeyName: this.journey.name,
          journeyId: this.journey.id,
          triggerType: this.definition.trigger.type,
          instanceId,
          step: decision.step,
          contact: this.contact,
          event,
          message,
          now: this.now,
        });
        // Its step run is recorded with the hand-over's result (carryOut).
        this.plan.handOvers.push({ webhookId: decision.step.webhook, stepId: step.id, event: described, journeyId });
        break;
      }
      case "delay":
        this.plan.statements.push(
          insertPointStatement(this.db, { instanceId, stepId: step.id, panelId, journeyId, contactId, kind: "delay", eventId: branch.eventId, dueAt: decision.dueAt }, this.now),
        );
        this.ran(step, "waiting");
        return;
      case "wait": {
        const awaited =
          "events" in decision.awaited ? { channel: branch.message?.channel, msgid: branch.message?.msgid, events: [...decision.awaited.events] } : { activityKey: decision.awaited.activityKey };
        this.plan.statements.push(
          insertPointStatement(this.db, { instanceId, stepId: step.id, panelId, journeyId, contactId, kind: "wait", eventId: branch.eventId, dueAt: decision.dueAt, ...awaited }, this.now),
        );
        this.ran(step, "waiting");
        return;
      }
      case "message":
        return;
    }
    for (const child of stepsAfterDecision(this.definition, decision)) await this.step(child, branch);
  }

  private message(step: MessageStep): JourneyMessage {
    const { id: _id, type: _type, after: _after, on: _on, exempt: _exempt, when_capped: _whenCapped, ...content } = step;
    return {
      msgid: messageIdOf(this.point.instanceId, step.id),
      panelId: this.point.panelId,
      journeyId: this.journey.id,
      instanceId: this.point.instanceId,
      stepId: step.id,
      channel: step.type,
      contactId: this.contact.id,
      recipient: messageRecipient(step.type, this.contact.attributes, this.contact.key),
      content,
      createdAt: this.now,
    };
  }
}
