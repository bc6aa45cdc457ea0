import { isMessageStep, stepById, type JourneyDefinition, type JourneyStep, type MessageStep, type SplitStep } from "./journey";
import {
  decideStep,
  entryAllowed,
  eventEndsWait,
  goalAfterEntry,
  reachesGoal,
  splitGoalAt,
  splitGoalMet,
  stepsAfterDecision,
  stepsAfterPoint,
  triggeredBy,
  type PointEnd,
  type WalkContact,
  type WalkEvent,
} from "./journey-walk";
import { simulatedSplits, type SimulatedSplit } from "./simulated-splits";
import { messageRecipient, NO_SENDERS, sendSkipOf, type ContactReach, type PanelSenders } from "./send-skips";
import { capAnswerOf, capsOf, contactTimeZone, gateBeforeCaps, gateOfCapAnswer, longestWindow, NO_RULES, ruleChannelOf, type MessageGate, type MessageRules, type RuleChannel } from "./message-rules";

/**
 * A journey simulated over recorded events (issue 46 item 1, decision 0048): the engine's own
 * decisions (domain/journey-walk.ts) applied in time order to in-memory instances, one per
 * contact, with nothing sent and nothing stored. A message step goes under the panel's rules
 * as the engine's gate decides them (domain/message-rules.ts: quiet hours hold it to their end
 * in simulated time, a full cap skips it or holds it, a left topic skips it); caps count the
 * journey's own simulated messages and the contact's recorded sends. A message the rules let go
 * is then skipped as the senders would skip it (domain/send-skips.ts: no address on the channel,
 * or a stopped one). Whether a message would have been opened, clicked or delivered is not
 * known: a wait for its events ends by its timeout and is counted as unknown (a wait after a
 * skipped message is not: its events never come, live either). A split counts each branch's
 * entries and, with an activity goal, the contacts that did it within the goal's window after
 * the split (the engine's rule, `splitGoalMet`); an open or click goal's conversions are unknown.
 * Conditions, entry filters, topics and the rules are read as they are now (their history is not kept).
 *
 * The state is plain JSON, so a simulation worked in queue steps keeps it between pages.
 */

/** A wait or delay an instance is at; a hold is a message step held by quiet hours or a cap, run again when due (as the engine's `step#n` delay). */
interface SimPoint {
  step: string;
  kind: "delay" | "wait" | "hold";
  dueAt: number;
  /** The event the branch carries (for webhooks, and so an activity wait takes only later ones). */
  eventId: number | null;
  activityKey: string | null;
  /** A wait for events of the message before it: none can come (the message was not sent). */
  msgid: string | null;
  createdAt: number;
}

interface SimInstance {
  enteredAt: number;
  entryEventId: number | null;
  points: SimPoint[];
}

/** A message or webhook call the simulation would have made, kept to be rendered as a sample. */
export interface SimulationSample {
  step: string;
  contactId: number;
  at: number;
  /** The event the branch carried (a webhook describes it): the event itself when at hand, else its id (a wait's timeout carries the trigger's). */
  event: WalkEvent | null;
  eventId: number | null;
}

export interface SimulationState {
  /** Active instances by contact id. */
  instances: Record<string, SimInstance>;
  /** Due times of waits and delays as a binary min-heap of [dueAt, contactId, step]; stale entries are skipped when taken. */
  timers: Array<[number, number, string]>;
  entered: number;
  completed: number;
  exited: number;
  converted: number;
  /** Per step: instances it acted for (as journey_step_runs counts). */
  acted: Record<string, number>;
  /** Messages that would have gone out, per channel. */
  messages: Record<string, number>;
  /** Webhook calls per webhook step. */
  webhooks: Record<string, number>;
  /** Per message step: messages skipped for a full cap, for a left topic, and held (once each) by quiet hours or a cap. Absent in states of earlier steps. */
  skippedCap?: Record<string, number>;
  skippedTopic?: Record<string, number>;
  deferred?: Record<string, number>;
  /** Per message step: messages the senders would have skipped (no address on the channel, or a stopped one), and per step the texts they would have recorded. Absent in states of earlier steps. */
  skippedAddress?: Record<string, number>;
  skippedSuppressed?: Record<string, number>;
  skipReasons?: Record<string, Record<string, number>>;
  /** Per wait step: waits for an open, click, delivery or bounce of a message that would have gone out (their outcome is unknown; followed to the timeout). */
  unknown?: Record<string, number>;
  /** Per split step: entries per branch (by index), and of them those that reached an activity goal. Absent in states of earlier steps. */
  splitEntered?: Record<string, number[]>;
  splitConverted?: Record<string, number[]>;
  /**
   * Per contact: its split entries whose activity goal is not reached yet, [step, branch, at],
   * kept past the instance's end (a hold-out branch ends it at once) until the goal's window is
   * over, then dropped: the state holds only the entries an event may still convert.
   */
  splitGoals?: Record<string, Array<[string, number, number]>>;
  /** Simulated sends counted against caps, per contact and channel (times within the longest cap's window). */
  sends?: Record<string, Partial<Record<RuleChannel, number[]>>>;
  samples: SimulationSample[];
  /** A list's or a saved segment's journey's entries, [added or joined at, contact id] in time order (read at the start), and how many were taken. */
  entries?: Array<[number, number]>;
  entriesTaken?: number;
  /** Events read. */
  events: number;
}

/** The simulated msgid of a message that would have gone out (its events are unknown). */
const SENT_MESSAGE = "simulated:";

/** Samples kept per step. */
export const SAMPLES_PER_STEP = 3;

/**
 * The state as a step keeps it for the next: list entries already taken are dropped, so a long
 * list's entries are not written again, whole, after every step.
 */
export function stateToKeep(state: SimulationState): SimulationState {
  const taken = state.entriesTaken ?? 0;
  return state.entries && taken > 0 ? { ...state, entries: state.entries.slice(taken), entriesTaken: 0 } : state;
}

/**
 * Recorded entries [at, contact id] in time order (then contact id). `oncePerContact`: only each
 * contact's first, as the engine's entry key `segment:<contact>` enters a saved segment's
 * member once per journey however often it joins again.
 */
export function entriesInOrder(entries: ReadonlyArray<readonly [number, number]>, oncePerContact: boolean): Array<[number, number]> {
  const sorted = entries.map(([at, contactId]): [number, number] => [at, contactId]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (!oncePerContact) return sorted;
  const seen = new Set<number>();
  return sorted.filter(([, contactId]) => {
    if (seen.has(contactId)) return false;
    seen.add(contactId);
    return true;
  });
}

export function newSimulationState(): SimulationState {
  return {
    instances: {},
    timers: [],
    entered: 0,
    completed: 0,
    exited: 0,
    converted: 0,
    acted: {},
    messages: {},
    webhooks: {},
    skippedCap: {},
    skippedTopic: {},
    deferred: {},
    skippedAddress: {},
    skippedSuppressed: {},
    skipReasons: {},
    unknown: {},
    sends: {},
    samples: [],
    events: 0,
  };
}

export interface SimulatedJourney {
  id: string;
  definition: JourneyDefinition;
  /** The panel's message rules and zone (absent: none, UTC). */
  rules?: { rules: MessageRules; timezone: string };
  /** What the panel sends SMS and push through (absent: the outbox). */
  senders?: PanelSenders;
}

/** A contact as the simulation reads it: attributes, and what the rules count. */
export interface SimContact extends WalkContact {
  /** Times of the contact's recorded sends counted against caps, per channel (those after the simulated moment are not counted). */
  sentAt?: Partial<Record<RuleChannel, readonly number[]>>;
  /** Ids of the topics the contact left. */
  topicsLeft?: readonly string[];
  /** The contact's key (a message's address when the channel's attribute is missing), and the stops and devices the senders read. */
  key?: string;
  reach?: ContactReach;
}

/** The topics the journey's message steps name (a contact who left one is skipped there). */
export function topicsOf(definition: JourneyDefinition): string[] {
  return [...new Set(definition.steps.flatMap((s) => (isMessageStep(s) && s.topic !== undefined ? [s.topic] : [])))];
}

/** The channels whose caps may count a message of the journey (its steps not exempt), and the longest window of their caps, ms. */
export function cappedChannels(journey: SimulatedJourney): { channels: RuleChannel[]; window: number } {
  const rules = journey.rules?.rules ?? NO_RULES;
  const channels = new Set<RuleChannel>();
  for (const s of journey.definition.steps) {
    if (isMessageStep(s) && !s.exempt && capsOf(rules, ruleChannelOf(s.type)).length > 0) channels.add(ruleChannelOf(s.type));
  }
  return { channels: [...channels], window: longestWindow([...channels].flatMap((c) => capsOf(rules, c))) };
}

// A binary min-heap on dueAt: the timers of 100k contacts are taken in time order without sorting them all each page.
function heapPush(heap: SimulationState["timers"], item: [number, number, string]) {
  heap.push(item);
  for (let i = heap.length - 1; i > 0; ) {
    const parent = (i - 1) >> 1;
    if (heap[parent]![0] <= heap[i]![0]) break;
    [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
    i = parent;
  }
}

function heapPop(heap: SimulationState["timers"]): [number, number, string] | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length === 0 || last === undefined) return top;
  heap[0] = last;
  for (let i = 0; ; ) {
    const l = 2 * i + 1;
    const r = l + 1;
    let least = i;
    if (l < heap.length && heap[l]![0] < heap[least]![0]) least = l;
    if (r < heap.length && heap[r]![0] < heap[least]![0]) least = r;
    if (least === i) break;
    [heap[least], heap[i]] = [heap[i]!, heap[least]!];
    i = least;
  }
  return top;
}

/**
 * The contacts whose attributes the next `simulate` call over `events` (up to `upTo`) may read:
 * those an event may enter or move on, and those whose wait or delay falls due.
 */
export function contactsToLoad(journey: SimulatedJourney, state: SimulationState, events: readonly WalkEvent[], upTo: number): number[] {
  const ids = new Set<number>();
  for (const event of events) {
    if (event.contactId === null) continue;
    if (state.instances[event.contactId] !== undefined || triggeredBy(journey.definition.trigger, event)) ids.add(event.contactId);
  }
  for (const [dueAt, contactId] of state.timers) if (dueAt < upTo) ids.add(contactId);
  const entries = state.entries ?? [];
  for (let i = state.entriesTaken ?? 0; i < entries.length && entries[i]![0] <= upTo; i++) ids.add(entries[i]![1]);
  return [...ids];
}

class Simulation {
  /** The split steps whose goal is an activity: only their entries can convert here. */
  private readonly activityGoals: ReadonlyMap<string, SplitStep>;

  constructor(
    private readonly journey: SimulatedJourney,
    private readonly state: SimulationState,
    private readonly contacts: ReadonlyMap<number, SimContact>,
  ) {
    this.activityGoals = new Map(journey.definition.steps.flatMap((s): Array<[string, SplitStep]> => (s.type === "split" && s.goal?.activity !== undefined ? [[s.id, s]] : [])));
  }

  private count(table: "skippedCap" | "skippedTopic" | "deferred" | "skippedAddress" | "skippedSuppressed" | "unknown", step: string) {
    const counts = (this.state[table] ??= {});
    counts[step] = (counts[step] ?? 0) + 1;
  }

  /**
   * A message step under the panel's rules, as the engine's StepPlanner gates it: a left topic
   * skips it, then quiet hours or a full cap (with `when_capped: wait`) hold it, a full cap
   * skips it; a message that goes counts against the caps. "hold": it waits as a point.
   */
  private gate(contact: SimContact, step: MessageStep, now: number): "go" | "skipped" | { holdUntil: number } {
    if (step.topic !== undefined && contact.topicsLeft?.includes(step.topic)) {
      this.count("skippedTopic", step.id);
      return "skipped";
    }
    const { rules, timezone } = this.journey.rules ?? { rules: NO_RULES, timezone: "UTC" };
    const before = gateBeforeCaps(step, rules, contactTimeZone(contact.attributes, timezone), now);
    let gate: MessageGate;
    if (!("caps" in before)) gate = before;
    else {
      const sends = ((this.state.sends ??= {})[contact.id] ??= {});
      const window = longestWindow(before.caps);
      const own = (sends[before.channel] ?? []).filter((t) => t > now - window);
      const recorded = (contact.sentAt?.[before.channel] ?? []).filter((t) => t <= now);
      gate = gateOfCapAnswer(step, capAnswerOf(before.caps, [...recorded, ...own], now));
      if (gate.go) sends[before.channel] = [...own, now];
    }
    if (gate.go) return "go";
    if ("holdUntil" in gate) return { holdUntil: Math.max(gate.holdUntil, now + 1) };
    this.count("skippedCap", step.id);
    return "skipped";
  }

  /**
   * Whether the senders would skip the message (after the rules let it go, as the engine hands it
   * to them): no address on the channel or a stopped one, counted with the text they record.
   */
  private skippedAtSend(contact: SimContact, step: MessageStep): boolean {
    const skip = sendSkipOf(step.type, messageRecipient(step.type, contact.attributes, contact.key ?? ""), contact.reach ?? {}, this.journey.senders ?? NO_SENDERS);
    if (!skip) return false;
    this.count(skip.kind === "address" ? "skippedAddress" : "skippedSuppressed", step.id);
    const reasons = ((this.state.skipReasons ??= {})[step.id] ??= {});
    reasons[skip.error] = (reasons[skip.error] ?? 0) + 1;
    return true;
  }

  /** A contact taking a split's branch at `now`: counted, and kept while its activity goal may still be reached. */
  private splitTaken(contactId: number, step: SplitStep, branch: number, now: number) {
    const entered = ((this.state.splitEntered ??= {})[step.id] ??= step.branches.map(() => 0));
    entered[branch] = (entered[branch] ?? 0) + 1;
    if (this.activityGoals.has(step.id)) ((this.state.splitGoals ??= {})[contactId] ??= []).push([step.id, branch, now]);
  }

  /** The contact's split entries `event` converts, as the engine marks them (before the journey goal, waits and triggers: the split taken on this event is not converted by it). */
  private convertSplits(contactId: number, event: WalkEvent) {
    const waiting = this.state.splitGoals?.[contactId];
    if (!waiting) return;
    const left = waiting.filter(([stepId, branch, at]) => {
      const step = this.activityGoals.get(stepId);
      if (!step || !splitGoalMet(splitGoalAt(step, at)!, at, event)) return true;
      const converted = ((this.state.splitConverted ??= {})[stepId] ??= step.branches.map(() => 0));
      converted[branch] = (converted[branch] ?? 0) + 1;
      return false;
    });
    if (left.length > 0) this.state.splitGoals![contactId] = left;
    else delete this.state.splitGoals![contactId];
  }

  /** Drops the split entries whose goal's window ended before `before`: no later event can convert them. */
  dropEndedSplitGoals(before: number) {
    const goals = this.state.splitGoals;
    if (!goals) return;
    for (const [contactId, entries] of Object.entries(goals)) {
      const open = entries.filter(([stepId, , at]) => {
        const step = this.activityGoals.get(stepId);
        return step !== undefined && splitGoalAt(step, at)!.until >= before;
      });
      if (open.length > 0) goals[contactId] = open;
      else delete goals[contactId];
    }
  }

  /** Ends the instance when nothing of it is left to wait for. */
  private settle(contactId: number, instance: SimInstance) {
    if (instance.points.length > 0) return;
    delete this.state.instances[contactId];
    this.state.completed++;
  }

  private sample(step: JourneyStep, contactId: number, at: number, event: WalkEvent | null, eventId: number | null) {
    if (this.state.samples.filter((s) => s.step === step.id).length >= SAMPLES_PER_STEP) return;
    this.state.samples.push({ step: step.id, contactId, at, event: event?.id === eventId ? event : null, eventId });
  }

  /**
   * Walks `steps` for the instance up to its next waits and delays, as the engine's StepPlanner
   * does. `rerun`: the message step among them run again after a hold.
   */
  private walk(
    contact: SimContact,
    instance: SimInstance,
    steps: readonly JourneyStep[],
    now: number,
    branchEvent: WalkEvent | null,
    branchEventId: number | null,
    lastMessage: string | null,
    rerun: string | null = null,
  ) {
    const { definition, id: journeyId } = this.journey;
    for (const step of steps) {
      const decision = decideStep(journeyId, step, contact, now);
      let message = lastMessage;
      if (decision.kind === "message") {
        const gate = this.gate(contact, decision.step, now);
        if (typeof gate === "object") {
          // Held: no step run yet (the engine records it when the step finally runs); deferred once it goes, or if still held at the end.
          const point: SimPoint = { step: step.id, kind: "hold", dueAt: gate.holdUntil, eventId: branchEventId, activityKey: null, msgid: null, createdAt: now };
          instance.points.push(point);
          heapPush(this.state.timers, [point.dueAt, contact.id, step.id]);
          continue;
        }
        let sent = false;
        if (gate === "go") {
          if (rerun === step.id) this.count("deferred", step.id);
          if (!this.skippedAtSend(contact, decision.step)) {
            this.state.messages[decision.step.type] = (this.state.messages[decision.step.type] ?? 0) + 1;
            this.sample(step, contact.id, now, branchEvent, branchEventId);
            sent = true;
          }
        }
        // A skipped message's events never come (as live); a sent one's might: a wait for them is unknown.
        message = `${sent ? SENT_MESSAGE : "skipped:"}${contact.id}.${step.id}`;
      }
      this.state.acted[step.id] = (this.state.acted[step.id] ?? 0) + 1;
      switch (decision.kind) {
        case "split":
          this.splitTaken(contact.id, decision.step, decision.branch, now);
          break;
        case "webhook":
          this.state.webhooks[step.id] = (this.state.webhooks[step.id] ?? 0) + 1;
          this.sample(step, contact.id, now, branchEvent, branchEventId);
          break;
        case "delay":
        case "wait": {
          const point: SimPoint = {
            step: step.id,
            kind: decision.kind,
            dueAt: decision.dueAt,
            eventId: branchEventId,
            activityKey: decision.kind === "wait" && "activityKey" in decision.awaited ? decision.awaited.activityKey : null,
            msgid: decision.kind === "wait" && "events" in decision.awaited ? (lastMessage ?? "") : null,
            createdAt: now,
          };
          // Whether the message it waits on would have been opened, clicked or delivered is not known: the wait is followed to its timeout and counted.
          if (point.msgid?.startsWith(SENT_MESSAGE)) this.count("unknown", step.id);
          instance.points.push(point);
          heapPush(this.state.timers, [point.dueAt, contact.id, step.id]);
          break;
        }
      }
      this.walk(contact, instance, stepsAfterDecision(definition, decision), now, branchEvent, branchEventId, message);
    }
  }

  /** Continues an instance past one of its points (ended by an event or its time); a hold runs its message step again. */
  private continue(contactId: number, instance: SimInstance, point: SimPoint, end: PointEnd, now: number, event: WalkEvent | null) {
    instance.points = instance.points.filter((p) => p !== point);
    const contact = this.contacts.get(contactId);
    const { definition } = this.journey;
    const held = point.kind === "hold" ? stepById(definition, point.step) : undefined;
    const steps = point.kind === "hold" ? (held ? [held] : []) : stepsAfterPoint(definition, end);
    // A contact gone since (erased) is not walked on, as the engine skips a point without its contact.
    if (contact) this.walk(contact, instance, steps, now, event, event?.id ?? point.eventId, null, point.kind === "hold" ? point.step : null);
    this.settle(contactId, instance);
  }

  /** Fires the waits and delays due before `before`, oldest first (as the cron would). */
  fireTimers(before: number) {
    const heap = this.state.timers;
    while (heap.length > 0 && heap[0]![0] < before) {
      const [dueAt, contactId, stepId] = heapPop(heap)!;
      const instance = this.state.instances[contactId];
      const point = instance?.points.find((p) => p.step === stepId && p.dueAt === dueAt);
      // Ended meanwhile (by its event, or the instance by its goal).
      if (!instance || !point) continue;
      const end: PointEnd = point.kind === "wait" ? { kind: "wait", stepId, outcome: "timeout" } : { kind: "delay", stepId };
      this.continue(contactId, instance, point, end, dueAt, null);
    }
  }

  /** One event, as the pipeline's journeys step takes it: goals, then waits, then triggers. */
  event(event: WalkEvent) {
    this.state.events++;
    if (event.contactId === null) return;
    const { definition } = this.journey;
    const contactId = event.contactId;
    this.convertSplits(contactId, event);
    let instance = this.state.instances[contactId];
    if (instance && definition.goal && reachesGoal(definition.goal, event) && goalAfterEntry({ eventId: instance.entryEventId, enteredAt: instance.enteredAt }, event)) {
      delete this.state.instances[contactId];
      this.state.exited++;
      this.state.converted++;
      instance = undefined;
    }
    if (instance) {
      const waiting = instance.points.find(
        (p) =>
          p.kind === "wait" &&
          eventEndsWait(
            { outcome: null, dueAt: p.dueAt, msgid: p.msgid, channel: p.msgid === null ? null : "simulated", events: null, activityKey: p.activityKey, contactId, eventId: p.eventId, createdAt: p.createdAt },
            event,
          ),
      );
      if (waiting) this.continue(contactId, instance, waiting, { kind: "wait", stepId: waiting.step, outcome: "event" }, event.occurredAt, event);
      // Still inside: not entered again. Done by this very event: it may enter it anew, as the pipeline's triggers come after its waits.
      if (this.state.instances[contactId]) return;
    }
    if (!triggeredBy(definition.trigger, event)) return;
    this.enter(contactId, event.occurredAt, event);
  }

  /** Enters the contact at `at` (by its trigger `event`, or a list's or saved segment's entry) if the entry filter lets it, and walks the start steps. */
  enter(contactId: number, at: number, event: WalkEvent | null) {
    const { definition } = this.journey;
    const contact = this.contacts.get(contactId);
    if (this.state.instances[contactId] || !contact || !entryAllowed(definition, contact.attributes)) return;
    const entered: SimInstance = { enteredAt: at, entryEventId: event?.id ?? null, points: [] };
    this.state.instances[contactId] = entered;
    this.state.entered++;
    this.walk(contact, entered, stepsAfterPoint(definition, { kind: "start" }), at, event, event?.id ?? null, null);
    this.settle(contactId, entered);
  }
}

/**
 * Runs the journey over `events` (oldest first, in (occurredAt, id) order), then its timers up to
 * `upTo` (the end of the simulated range, or the last event read when more pages follow).
 * `contacts` holds at least those `contactsToLoad` named. Changes `state` in place.
 */
export function simulate(journey: SimulatedJourney, state: SimulationState, events: readonly WalkEvent[], contacts: ReadonlyMap<number, SimContact>, upTo: number): void {
  const run = new Simulation(journey, state, contacts);
  const entries = state.entries ?? [];
  // List or saved segment entries up to `before`, each at its time (before events of the same instant).
  const enterUpTo = (before: number) => {
    let taken = state.entriesTaken ?? 0;
    for (; taken < entries.length && entries[taken]![0] <= before; taken++) {
      const [at, contactId] = entries[taken]!;
      run.fireTimers(at);
      run.enter(contactId, at, null);
    }
    if (entries.length > 0) state.entriesTaken = taken;
  };
  for (const event of events) {
    enterUpTo(event.occurredAt);
    run.fireTimers(event.occurredAt);
    run.event(event);
  }
  enterUpTo(upTo);
  run.fireTimers(upTo);
  // Events after this call come at `upTo` or later (the next step's follow the cursor).
  run.dropEndedSplitGoals(upTo);
}

/** Per step: instances it acted for and those waiting at it at the end, like the live counters. */
export interface SimulationFigures {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  converted: number;
  events: number;
  /** Per step: `acted` as the live counters count step runs (a held message counts once it runs or is skipped); a message step's skips and holds when any. */
  steps: Record<
    string,
    {
      acted: number;
      waiting: number;
      skipped_cap?: number;
      skipped_topic?: number;
      deferred?: number;
      /** Skipped by the senders: no address on the channel (no valid EMAIL or MOBILE, no push device), or a stopped one (a suppression, a STOP, push turned off); with the texts the live message would record. */
      skipped_address?: number;
      skipped_suppressed?: number;
      skip_reasons?: Record<string, number>;
      /** A wait for message events: contacts who reached it after a message that would have gone out. Whether it was opened, clicked or delivered is unknown; they are counted on its timeout branch. */
      unknown?: number;
    }
  >;
  messages: Record<string, number>;
  webhooks: Record<string, number>;
  /** Messages skipped for a full frequency cap and for a topic the contact left (absent in results made before rules were simulated). */
  skipped?: { cap: number; topic: number; address?: number; suppressed?: number };
  /** Waits for message events whose outcome is unknown (absent in results made before they were counted). */
  unknown?: number;
  /** Messages held by quiet hours or a full cap (`when_capped: wait`) and sent later in simulated time, or still held at the end. */
  deferred?: number;
  /** Per split step, its branches as GET …/splits reports them live (absent in results made before they were simulated). */
  splits?: SimulatedSplit[];
}

/** A simulation's figures with its rendered samples, as it is kept with the version and answered. */
export interface SimulationResult extends SimulationFigures {
  samples: {
    messages: Array<{ step_id: string; channel: string; contact_id: string; contact_key: string; at: number; content: Record<string, string> }>;
    webhooks: Array<{ step_id: string; webhook: string; contact_id: string; at: number; payload: unknown }>;
  };
}

/** The figures of a simulation's state; with its version's definition, its splits' branches too. */
export function simulationFigures(state: SimulationState, definition?: JourneyDefinition): SimulationFigures {
  const steps: SimulationFigures["steps"] = {};
  const step = (id: string) => (steps[id] ??= { acted: 0, waiting: 0 });
  for (const [id, n] of Object.entries(state.acted)) step(id).acted = n;
  const sum = (counts: Record<string, number> | undefined) => Object.values(counts ?? {}).reduce((a, b) => a + b, 0);
  for (const [id, n] of Object.entries(state.skippedCap ?? {})) step(id).skipped_cap = n;
  for (const [id, n] of Object.entries(state.skippedTopic ?? {})) step(id).skipped_topic = n;
  for (const [id, n] of Object.entries(state.skippedAddress ?? {})) step(id).skipped_address = n;
  for (const [id, n] of Object.entries(state.skippedSuppressed ?? {})) step(id).skipped_suppressed = n;
  for (const [id, reasons] of Object.entries(state.skipReasons ?? {})) step(id).skip_reasons = { ...reasons };
  for (const [id, n] of Object.entries(state.unknown ?? {})) step(id).unknown = n;
  // Deferred: held messages that went later, and those still held at the end.
  const deferred = { ...state.deferred };
  let active = 0;
  for (const instance of Object.values(state.instances)) {
    active++;
    for (const point of instance.points) {
      step(point.step).waiting++;
      if (point.kind === "hold") deferred[point.step] = (deferred[point.step] ?? 0) + 1;
    }
  }
  for (const [id, n] of Object.entries(deferred)) step(id).deferred = n;
  return {
    entered: state.entered,
    active,
    completed: state.completed,
    exited: state.exited,
    converted: state.converted,
    events: state.events,
    steps,
    messages: { ...state.messages },
    webhooks: { ...state.webhooks },
    skipped: { cap: sum(state.skippedCap), topic: sum(state.skippedTopic), address: sum(state.skippedAddress), suppressed: sum(state.skippedSuppressed) },
    deferred: sum(deferred),
    unknown: sum(state.unknown),
    ...(definition ? { splits: simulatedSplits(definition, state.splitEntered ?? {}, state.splitConverted ?? {}) } : {}),
  };
}
