// The admin API's answers about journeys. A journey's trigger, filter, steps and layout are
// what its request schema (domain/journey.ts) made of them; reports keep their TypeScript types
// in domain/journey-report.ts. Those parts are typed here, not re-described field by field.
import { ownedElsewhere, z } from "../../lib/z";
import { branchLabel, type JourneyDefinition, type SplitGoal } from "../journey";
import type { JourneyLayout } from "../journey-layout";
import type { ContactJourneys, JourneyReport } from "../journey-report";
import type { SimulationResult } from "../journey-simulation";
import { simulatedSplitSchema } from "../simulated-splits";
import { isoInstant } from "./panels";

const definitionParts = {
  trigger: ownedElsewhere<JourneyDefinition["trigger"]>("The trigger, as POST /journeys takes it"),
  filter: ownedElsewhere<JourneyDefinition["filter"]>("The entry filter, as POST /journeys takes it"),
  steps: ownedElsewhere<JourneyDefinition["steps"]>("The steps, as POST /journeys takes them"),
  goal: ownedElsewhere<JourneyDefinition["goal"]>("The journey's goal, as POST /journeys takes it").optional(),
};
const fieldNotes = z.array(z.strictObject({ field: z.string(), message: z.string() }));

export const journeyCountersAnswer = z.strictObject({
  entered: z.number(),
  active: z.number(),
  completed: z.number(),
  exited: z.number(),
  /** Of the exited, those that left on reaching the journey's goal. */
  converted: z.number(),
  steps: z.record(z.string(), z.strictObject({ acted: z.number(), waiting: z.number() })),
});

export const journeyAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  status: z.enum(["draft", "running", "paused", "stopped"]),
  /** The current version: editing a running or paused journey makes a new one. */
  version: z.number(),
  ...definitionParts,
  /** In reads, lists and status changes; a create or an edit answers without. */
  counters: journeyCountersAnswer.optional(),
  layout: ownedElsewhere<JourneyLayout | null>("Where the canvas draws the trigger and steps; null: the canvas lays it out"),
  created_at: isoInstant,
  updated_at: isoInstant,
  /** Senders a real provider would refuse (a live journey's email steps). */
  warnings: fieldNotes.optional(),
});
export const journeyListAnswer = z.strictObject({ journeys: z.array(journeyAnswer) });

export const journeyVersionsAnswer = z.strictObject({
  versions: z.array(
    z.strictObject({
      version: z.number(),
      created_at: isoInstant,
      created_by: z.string().nullable(),
      entered: z.number(),
      active: z.number(),
      definition: z.strictObject({ name: z.string(), ...definitionParts }),
    }),
  ),
});

export const journeyMessagesAnswer = z.strictObject({
  messages: z.array(
    z.strictObject({
      msgid: z.string(),
      channel: z.enum(["email", "sms", "apn", "bpn"]),
      journey_id: z.string(),
      step_id: z.string(),
      contact_id: z.string(),
      recipient: z.string().nullable(),
      status: z.enum(["recorded", "sending", "sent", "skipped", "failed"]).optional(),
      error: z.string().nullable().optional(),
      content: z.record(z.string(), z.unknown()),
      created_at: isoInstant,
    }),
  ),
});

/** GET /panels/{panel}/journeys/{journey}/splits: each split step's branches and how they convert. */
export const journeySplitsAnswer = z.strictObject({
  splits: z.array(
    z.strictObject({
      step_id: z.string(),
      /** What conversion means; null: the split has no goal (only its entries are counted). */
      goal: ownedElsewhere<SplitGoal | null>("The split's goal, as its step has it; null when none"),
      /** The branch every new entry takes, once promoted. */
      winner: z.string().nullable(),
      /** How confidence is computed. */
      method: z.literal("two_proportion_z_test_vs_a"),
      branches: z.array(
        z.strictObject({
          label: z.string(),
          /** The share of the current version; null for a branch it no longer has. */
          percent: z.number().nullable(),
          then: z.string().nullable(),
          entered: z.number(),
          converted: z.number(),
          /** converted / entered, 0 to 1. */
          rate: z.number(),
          /** Against branch A, 0 to 1 (1 − the two-sided p-value); null for A and while a side is empty. */
          confidence: z.number().nullable(),
          winner: z.boolean(),
        }),
      ),
    }),
  ),
});

/** POST /panels/{panel}/journeys/{journey}/splits/{step}/winner. */
export const splitWinnerBody = z.strictObject({ branch: branchLabel });

export const journeyReportAnswer = ownedElsewhere<JourneyReport>("The journey's report (domain/journey-report.ts JourneyReport)");
export const contactJourneysAnswer = ownedElsewhere<ContactJourneys>("The contact's journeys and their paths (domain/journey-report.ts ContactJourneys)");

/** POST …/journeys/{journey}/simulations: the last `days` days (1–30), of `version` (the current one when absent). */
export const simulationBody = z.strictObject({
  days: z.number({ error: "must be a whole number of days from 1 to 30" }).int({ error: "must be a whole number of days from 1 to 30" }).min(1, { error: "must be at least 1" }).max(30, { error: "must be at most 30" }),
  version: z.number({ error: "must be a version number" }).int({ error: "must be a version number" }).min(1, { error: "must be a version number" }).optional(),
});

export const simulationAnswer = z.strictObject({
  id: z.string(),
  journey_id: z.string(),
  version: z.number(),
  days: z.number(),
  from: isoInstant,
  to: isoInstant,
  state: z.enum(["running", "done", "failed"]),
  /** 0–1: the part of the range simulated so far. */
  progress: z.number(),
  events_read: z.number(),
  error: z.string().nullable(),
  /** Once done: per step acted and waiting (as the live counters), messages per channel, webhook calls per step, samples; messages skipped for a cap or topic, or deferred; each split's branches. */
  result: ownedElsewhere<Omit<SimulationResult, "splits">>(
    "The simulation's figures and samples once done (domain/journey-simulation.ts SimulationResult); null while running. Message steps go under the panel's caps, quiet hours and topics as set now: per step skipped_cap, skipped_topic and deferred (held by quiet hours or a cap, sent later in simulated time); then as the senders would take them: per step skipped_address (no valid EMAIL or MOBILE, no push device) and skipped_suppressed (a suppressed address, a stopped number, push turned off), with skip_reasons (the text each skipped message would record, and how many). A wait for message events (open, click, delivered, bounce) after a message that would have gone out is followed to its timeout and counted per step as unknown (whether the message would have been opened or clicked is not known); in all: unknown. splits: each split step's branches, entered and (with an activity goal) converted within the goal's window, rate and confidence against A as GET …/splits reports them live; with an open or click goal their conversions are null and conversions_unknown says why",
  )
    .and(z.looseObject({ splits: z.array(simulatedSplitSchema).optional().meta({ description: "Per split step (absent in results made before splits were simulated)" }) }))
    .nullable(),
  created_at: isoInstant,
  finished_at: isoInstant.nullable(),
});
export const simulationListAnswer = z.strictObject({ simulations: z.array(simulationAnswer) });
