import { z } from "../lib/z";
import { emailAddress, listIdParam, nameText } from "./fields";
import { attributeName, filterSchema, paramFilterSchema, scalar } from "./filters";
import type { FieldProblem } from "./problems";
import { fnv1a32 } from "./partitions";
import { variantLabel } from "./ab-test";

/**
 * A journey definition (CONTRACT 5) and the rules of its step graph. Pure: the admin route
 * parses the JSON with `journeyDefinitionSchema` (whose output types are the types below),
 * then `journeyGraphProblems` checks what a schema cannot (ids, references, channels); the
 * engine walks the graph with `startSteps` and `nextSteps`.
 */

export const MESSAGE_CHANNELS = ["email", "sms", "apn", "bpn"] as const;
export type MessageChannel = (typeof MESSAGE_CHANNELS)[number];

/** What a wait may wait for after a message of each channel (spec 6.2, current names). */
export const WAITABLE_EVENTS: Record<MessageChannel, readonly string[]> = {
  email: ["open", "click", "bounce"],
  sms: ["delivered", "click"],
  apn: ["delivered", "click"],
  bpn: ["delivered", "click"],
};

const DURATION = /^(\d{1,6})(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** A wait or delay of more than a year is almost certainly a mistake. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/** `30m`, `12h`, `2d` in milliseconds; null when not such a duration. */
export function parseDuration(text: string): number | null {
  const match = DURATION.exec(text.trim());
  if (!match) return null;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms > 0 && ms <= MAX_DURATION_MS ? ms : null;
}

const stepId = z
  .string({ error: "is required" })
  .trim()
  .max(64, { abort: true, error: "must be 1 to 64 letters, digits, _ or -" })
  .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "must be 1 to 64 letters, digits, _ or -" });
const duration = z.string({ error: "is required: a duration such as 30m, 12h or 2d" }).max(16, { abort: true }).refine((d) => parseDuration(d) !== null, {
  error: "must be a duration such as 30m, 12h or 2d (minutes, hours or days; at most a year)",
});
const text = (max: number) => z.string({ error: "is required" }).trim().min(1, { error: "must not be empty" }).max(max);
const nonEmptyFilter = filterSchema.min(1, { error: "must have at least one clause" });

const common = {
  id: stepId,
  /** The step this one follows; absent: right after the trigger (or a condition's then/else). */
  after: stepId.optional(),
  /** After a wait_for_event: run when the event came (`event`, default) or when the wait ran out (`timeout`). */
  on: z.enum(["event", "timeout"], { error: "must be event or timeout" }).optional(),
};

/**
 * What a message step does under the panel's rules (issue 46): `exempt` (transactional) is
 * neither capped nor held by quiet hours; a capped message is skipped (recorded `skipped`,
 * the journey goes on) or, with `when_capped: wait`, waits until the caps allow it.
 */
const messageRuleOptions = {
  exempt: z.boolean({ error: "must be true or false" }).optional(),
  when_capped: z.enum(["skip", "wait"], { error: "must be skip or wait" }).optional(),
  /**
   * The panel topic (admin /topics, by id) the message is about (issue 45, item 4): a contact who
   * left it is skipped (recorded `skipped`, the journey goes on), and the email's unsubscribe page
   * offers leaving the topic alone.
   */
  topic: z.string({ error: "must be a topic id" }).trim().min(1, { error: "must not be empty" }).max(64).optional(),
};

/**
 * An email: its own subject and html, or a saved email template (admin /email-templates) named
 * by `email_template` without them, whose content the save copies into the step (subject, and
 * the preheader inside the html). A step holding subject and html keeps them; `email_template`
 * then only says where they came from, so a template edited or deleted later changes nothing.
 */
const emailStep = z
  .object({
    ...common,
    ...messageRuleOptions,
    type: z.literal("email"),
    subject: text(998).optional(),
    html: text(1_000_000).optional(),
    email_template: text(64).optional(),
    /** The text/plain alternative; absent: made from the HTML. */
    text: text(1_000_000).optional(),
    sender_name: text(200),
    sender_email: emailAddress,
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.email_template !== undefined) return;
    if (s.subject === undefined) ctx.addIssue({ code: "custom", path: ["subject"], message: "is required (or name an email_template)" });
    if (s.html === undefined) ctx.addIssue({ code: "custom", path: ["html"], message: "is required (or name an email_template)" });
  });
const messageUrl = z.string().max(2048, { abort: true, error: "must be at most 2048 characters" }).pipe(z.url({ error: "must be a URL" }));
const textMessageStep = z.object({ ...common, ...messageRuleOptions, type: z.literal(["apn", "bpn"]), text: text(2000), title: text(200).optional(), url: messageUrl.optional() }).strict();
/** An SMS: its own text or one of the panel's SMS templates (admin /sms/templates), with merge tags either way. */
const smsStep = z
  .object({ ...common, ...messageRuleOptions, type: z.literal("sms"), text: text(1600).optional(), template: text(64).optional(), title: text(200).optional(), url: messageUrl.optional() })
  .strict()
  .refine((s) => (s.text === undefined) !== (s.template === undefined), { error: "an sms step has either text or template, not both", path: ["text"] });
const waitStep = z
  .object({
    ...common,
    type: z.literal("wait_for_event"),
    events: z.union([z.array(z.string().max(32)).min(1, { error: "must name at least one event" }).max(4), z.object({ activity: text(100) }).strict()], {
      error: 'must be a list of the previous message\'s events or {"activity":"<name>"}',
    }),
    within: duration,
  })
  .strict();
const webhookStep = z
  .object({
    ...common,
    type: z.literal("webhook"),
    webhook: text(64),
    attributes: z.array(attributeName).max(100).default([]),
    params: z.record(z.string().min(1).max(100), scalar).default({}),
  })
  .strict();
const delayStep = z.object({ ...common, type: z.literal("delay"), for: duration }).strict();
const conditionStep = z.object({ ...common, type: z.literal("condition"), filter: nonEmptyFilter, then: stepId.optional(), else: stepId.optional() }).strict();


/** A split's branches: 2 to 4, labelled A to D in the order given. */
export const MIN_SPLIT_BRANCHES = 2;
export const MAX_SPLIT_BRANCHES = 4;
export const branchLabel = z.enum(["A", "B", "C", "D"], { error: "must be a branch label: A, B, C or D" });
/**
 * What a split measures its branches by: the contact's activity, or an open or click of a
 * message the journey sent the instance after the split, within `within` of the split.
 */
const splitGoal = z
  .object({
    activity: text(100).optional(),
    message_event: z.enum(["open", "click"], { error: "must be open or click" }).optional(),
    within: duration,
  })
  .strict()
  .refine((g) => (g.activity === undefined) !== (g.message_event === undefined), { error: "a goal names either an activity or a message_event (open or click), not both", path: ["activity"] });
/**
 * An A/B split (issue 46): each contact goes down one branch, by a hash of the journey, the
 * step and the contact (the same contact always the same branch), in the shares given; once
 * a `winner` is promoted, every instance of that version goes down it. A branch without
 * `then` ends the instance there (a hold-out group).
 */
const splitStep = z
  .object({
    ...common,
    type: z.literal("split"),
    branches: z
      .array(
        z
          .object({
            percent: z.number({ error: "must be a whole number from 1 to 99" }).int({ error: "must be a whole number from 1 to 99" }).min(1, { error: "must be at least 1" }).max(99, { error: "must be at most 99" }),
            then: stepId.optional(),
          })
          .strict(),
      )
      .min(MIN_SPLIT_BRANCHES, { error: `must have ${MIN_SPLIT_BRANCHES} to ${MAX_SPLIT_BRANCHES} branches` })
      .max(MAX_SPLIT_BRANCHES, { error: `must have ${MIN_SPLIT_BRANCHES} to ${MAX_SPLIT_BRANCHES} branches` }),
    goal: splitGoal.optional(),
    winner: branchLabel.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    const total = s.branches.reduce((sum, b) => sum + b.percent, 0);
    if (total !== 100) ctx.addIssue({ code: "custom", path: ["branches"], message: `the branches' percents must add up to 100 (they add up to ${total})` });
    if (s.winner !== undefined && splitLabels(s.branches.length).indexOf(s.winner) < 0) {
      ctx.addIssue({ code: "custom", path: ["winner"], message: `names no branch of this split (${splitLabels(s.branches.length).join(", ")})` });
    }
  });

const step = z.discriminatedUnion("type", [emailStep, smsStep, textMessageStep, waitStep, webhookStep, delayStep, conditionStep, splitStep], {
  error: "type must be one of email, sms, apn, bpn, wait_for_event, webhook, delay, condition, split",
});

const trigger = z.discriminatedUnion(
  "type",
  [
    // `params`: clauses on the activity's parameters; an event whose parameters fail them enters nobody.
    z.object({ type: z.literal("activity"), activity: text(100), params: paramFilterSchema.optional() }).strict(),
    z.object({ type: z.literal("list"), listid: listIdParam }).strict(),
    // A saved segment (CONTRACT 9) by id, or an attribute filter of the journey's own.
    z
      .object({ type: z.literal("segment"), filter: nonEmptyFilter.optional(), segment: text(64).optional() })
      .strict()
      .refine((t) => (t.filter === undefined) !== (t.segment === undefined), { error: "a segment trigger names either a saved segment (segment) or a filter, not both" }),
  ],
  { error: "type must be one of activity, list, segment" },
);

/**
 * The journey's goal (issue 46): when the contact does this activity, its instance leaves the
 * journey wherever it waits, recorded as converted.
 */
const journeyGoal = z.object({ activity: text(100), params: paramFilterSchema.optional() }).strict();

/** The body of POST/PUT /panels/{panel}/journeys, and what the store keeps. */
export const journeyDefinitionSchema = z
  .object({
    name: nameText(200),
    trigger,
    filter: filterSchema.default([]),
    steps: z.array(step).min(1, { error: "must hold at least one step" }).max(100),
    goal: journeyGoal.optional(),
  })
  .strict();

/**
 * A definition as parsed: an email step may name an email template in place of its subject and
 * html. The save (services/journeys/check-definition.ts) copies them in, giving a `JourneyDefinition`.
 */
export type ProposedJourneyDefinition = z.output<typeof journeyDefinitionSchema>;
type ProposedStep = ProposedJourneyDefinition["steps"][number];
/** An email step as saved and sent: its content is its own, whatever template it came from. */
export type EmailStep = Extract<ProposedStep, { type: "email" }> & { subject: string; html: string };
/** A definition as stored and run: every email step holds its subject and html. */
export type JourneyDefinition = Omit<ProposedJourneyDefinition, "steps"> & { steps: Array<Exclude<ProposedStep, { type: "email" }> | EmailStep> };

/** POST /panels/{panel}/journeys/{journey}/status: run (start or resume), pause or stop. */
export const journeyStatusBody = z.object({ status: z.enum(["running", "paused", "stopped"], { error: "must be running, paused or stopped" }) }).strict();
export type Trigger = JourneyDefinition["trigger"];
export type JourneyStep = JourneyDefinition["steps"][number];
export type TextMessageStep = z.output<typeof textMessageStep>;
export type SmsStep = z.output<typeof smsStep>;
export type WaitStep = z.output<typeof waitStep>;
export type WebhookStep = z.output<typeof webhookStep>;
export type DelayStep = z.output<typeof delayStep>;
export type ConditionStep = z.output<typeof conditionStep>;
export type SplitStep = z.output<typeof splitStep>;
export type SplitGoal = z.output<typeof splitGoal>;
export type JourneyGoal = z.output<typeof journeyGoal>;
export type BranchLabel = z.output<typeof branchLabel>;

/** The labels of a split's branches, in order. */
export function splitLabels(branches: number): BranchLabel[] {
  return Array.from({ length: branches }, (_, i) => variantLabel(i) as BranchLabel);
}

/**
 * The branch (index) a contact takes at a split: the promoted winner, else its place (0–99) by
 * FNV-1a of journey, step and contact among the branches' shares. Pure and stable, so a step
 * run again after a crash takes the same branch; the step is hashed in so that two splits of
 * one journey do not put the same contacts together.
 */
export function splitBranchOf(journeyId: string, step: Pick<SplitStep, "id" | "branches" | "winner">, contactId: number): number {
  if (step.winner !== undefined) return splitLabels(step.branches.length).indexOf(step.winner);
  const place = fnv1a32(`${journeyId}:${step.id}:${contactId}`) % 100;
  let upTo = 0;
  for (const [i, branch] of step.branches.entries()) {
    upTo += branch.percent;
    if (place < upTo) return i;
  }
  return step.branches.length - 1;
}
export type MessageStep = EmailStep | SmsStep | TextMessageStep;

export function isMessageStep(step: JourneyStep): step is MessageStep {
  return (MESSAGE_CHANNELS as readonly string[]).includes(step.type);
}

/** The sender address of each email step, named by its field in the definition. */
export function emailSenders(definition: JourneyDefinition): { field: string; address: string }[] {
  return definition.steps.flatMap((step, i) => (step.type === "email" ? [{ field: `steps.${i}.sender_email`, address: step.sender_email }] : []));
}

/** The message step a wait follows, walking back through conditions and delays; undefined when none. */
export function previousMessage(steps: readonly JourneyStep[], step: JourneyStep): MessageStep | undefined {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const parentOf = (s: JourneyStep): JourneyStep | undefined => {
    if (s.after) return byId.get(s.after);
    return steps.find((c) => branchTargets(c).includes(s.id));
  };
  const seen = new Set<string>();
  for (let current = parentOf(step); current && !seen.has(current.id); current = parentOf(current)) {
    seen.add(current.id);
    if (isMessageStep(current)) return current;
  }
  return undefined;
}

/** Everything wrong with the graph; empty when the journey can run. */
export function journeyGraphProblems(proposed: ProposedJourneyDefinition): FieldProblem[] {
  // The graph reads ids, links and channels, never an email step's content, which a proposed step may lack.
  const definition = proposed as JourneyDefinition;
  const problems: FieldProblem[] = [];
  const { steps } = definition;
  const byId = new Map<string, JourneyStep>();
  steps.forEach((step, i) => {
    if (byId.has(step.id)) problems.push({ field: `steps.${i}.id`, message: `"${step.id}" is used by an earlier step; step ids must be unique` });
    else byId.set(step.id, step);
  });
  // Each step has one parent at most, so every instance reaches a step at most once.
  const parent = new Map<string, string>();
  const claimParent = (child: string, by: string, field: string) => {
    if (!byId.has(child)) problems.push({ field, message: `names no step ("${child}")` });
    else if (parent.has(child)) problems.push({ field, message: `step "${child}" already follows "${parent.get(child)}"; a step follows one step only` });
    else parent.set(child, by);
  };
  steps.forEach((step, i) => {
    if (step.after !== undefined) {
      if (step.after === step.id) problems.push({ field: `steps.${i}.after`, message: "a step cannot follow itself" });
      else if (!byId.has(step.after)) problems.push({ field: `steps.${i}.after`, message: `names no step ("${step.after}")` });
      else if (byId.get(step.after)!.type === "split") problems.push({ field: `steps.${i}.after`, message: `"${step.after}" is a split: name this step in one of its branches' then` });
      // A condition goes on by its then or else only: a step after it would never run.
      else if (byId.get(step.after)!.type === "condition") problems.push({ field: `steps.${i}.after`, message: `"${step.after}" is a condition: name this step in its then or else` });
      else claimParent(step.id, step.after, `steps.${i}.after`);
    }
    if (step.type === "condition") {
      if (step.then === undefined && step.else === undefined) problems.push({ field: `steps.${i}`, message: "a condition needs then, else or both" });
      if (step.then !== undefined) claimParent(step.then, step.id, `steps.${i}.then`);
      if (step.else !== undefined) claimParent(step.else, step.id, `steps.${i}.else`);
    }
    if (step.type === "split") {
      step.branches.forEach((branch, j) => {
        if (branch.then !== undefined) claimParent(branch.then, step.id, `steps.${i}.branches.${j}.then`);
      });
    }
  });
  steps.forEach((step, i) => {
    const parentStep = parent.has(step.id) ? byId.get(parent.get(step.id)!) : undefined;
    const afterWait = parentStep?.type === "wait_for_event" && step.after === parentStep.id;
    if (step.on !== undefined && !afterWait) problems.push({ field: `steps.${i}.on`, message: "is only for a step that follows a wait_for_event" });
    if (step.type === "webhook" && afterWait && step.on === undefined) {
      problems.push({ field: `steps.${i}.on`, message: "is required after a wait_for_event: event or timeout" });
    }
    if (step.type === "wait_for_event" && Array.isArray(step.events)) {
      const message = previousMessage(steps, step);
      if (!message) problems.push({ field: `steps.${i}.events`, message: "a wait for message events must follow an email, sms, apn or bpn step" });
      else {
        const allowed = WAITABLE_EVENTS[message.type];
        for (const [j, name] of step.events.entries()) {
          if (!allowed.includes(name)) {
            problems.push({ field: `steps.${i}.events.${j}`, message: `"${name}" is not an event of ${message.type} (${allowed.join(", ")})` });
          }
        }
      }
    }
  });
  // Cycles: walk up from each step; more hops than steps means a loop.
  for (const step of steps) {
    let hops = 0;
    for (let id: string | undefined = step.id; id !== undefined && hops <= steps.length; id = parent.get(id)) hops++;
    if (hops > steps.length) {
      problems.push({ field: "steps", message: `the steps loop through "${step.id}"` });
      break;
    }
  }
  if (steps.length > 0 && startSteps(definition).length === 0 && problems.length === 0) {
    problems.push({ field: "steps", message: "no step runs right after the trigger" });
  }
  return problems;
}

/** The steps a condition or split sends its instances to (not those that follow it by `after`). */
export function branchTargets(step: JourneyStep): string[] {
  const ids = step.type === "condition" ? [step.then, step.else] : step.type === "split" ? step.branches.map((b) => b.then) : [];
  return ids.filter((id) => id !== undefined);
}

/** Steps that run right after the trigger: those that follow no step. */
export function startSteps(definition: JourneyDefinition): JourneyStep[] {
  const targeted = new Set(definition.steps.flatMap(branchTargets));
  return definition.steps.filter((s) => s.after === undefined && !targeted.has(s.id));
}

/**
 * The steps that run once `step` is done. `outcome` says how a wait ended; a condition passes
 * whether its filter held, a split the index of the branch taken.
 */
export function nextSteps(definition: JourneyDefinition, step: JourneyStep, outcome: "event" | "timeout" | "done" | boolean | { branch: number }): JourneyStep[] {
  if (step.type === "split") {
    const id = typeof outcome === "object" ? step.branches[outcome.branch]?.then : undefined;
    return definition.steps.filter((s) => s.id === id);
  }
  if (step.type === "condition") {
    const id = outcome === true ? step.then : outcome === false ? step.else : undefined;
    return definition.steps.filter((s) => s.id === id);
  }
  const children = definition.steps.filter((s) => s.after === step.id);
  if (step.type !== "wait_for_event") return children;
  return children.filter((s) => (s.on ?? "event") === outcome);
}

export function stepById(definition: JourneyDefinition, id: string): JourneyStep | undefined {
  return definition.steps.find((s) => s.id === id);
}
