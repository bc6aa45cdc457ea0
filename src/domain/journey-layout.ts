import { z } from "../lib/z";
import { journeyDefinitionSchema, type JourneyDefinition, type ProposedJourneyDefinition } from "./journey";
import type { FieldProblem } from "./problems";

/**
 * Where the panel's canvas draws a journey's trigger and steps. Presentation only: stored with
 * the journey but outside its definition, so the engine never reads it and moving a box on a
 * running journey makes no new version.
 */

/** Canvas coordinates; far beyond any journey of 100 steps, near enough to stay on a screen one can scroll to. */
export const LAYOUT_LIMIT = 100_000;

const coordinate = z
  .number()
  .min(-LAYOUT_LIMIT, { error: `must be between -${LAYOUT_LIMIT} and ${LAYOUT_LIMIT}` })
  .max(LAYOUT_LIMIT, { error: `must be between -${LAYOUT_LIMIT} and ${LAYOUT_LIMIT}` });
const point = z.object({ x: coordinate, y: coordinate }).strict();

export const journeyLayoutSchema = z
  .object({
    trigger: point.optional(),
    /** By step id; a step without a position is placed by the canvas's own layout. */
    steps: z.record(z.string().max(64, { error: "names no step of the journey" }), point).default({}),
  })
  .strict();

export type JourneyLayout = z.output<typeof journeyLayoutSchema>;

/**
 * The body of POST/PUT /panels/{panel}/journeys: a definition and, optionally, its layout.
 * Without `layout`, an edit keeps the positions of the steps the journey still has.
 */
export const journeyBodySchema = journeyDefinitionSchema.extend({ layout: journeyLayoutSchema.optional() });

/** Splits a parsed body into the definition (what is versioned and run) and the layout. */
export function splitJourneyBody(body: z.output<typeof journeyBodySchema>): { definition: ProposedJourneyDefinition; layout: JourneyLayout | undefined } {
  const { layout, ...definition } = body;
  return { definition, layout };
}

/** Positions naming a step the definition lacks. */
export function layoutProblems(definition: ProposedJourneyDefinition, layout: JourneyLayout): FieldProblem[] {
  const ids = new Set(definition.steps.map((s) => s.id));
  return Object.keys(layout.steps)
    .filter((id) => !ids.has(id))
    .map((id) => ({ field: `layout.steps.${id}`, message: `names no step of the journey ("${id}")` }));
}

/** The layout kept for a new definition: only the positions of steps it still has. */
export function layoutForDefinition(layout: JourneyLayout | null, definition: JourneyDefinition): JourneyLayout | null {
  if (!layout) return null;
  const ids = new Set(definition.steps.map((s) => s.id));
  return { ...layout, steps: Object.fromEntries(Object.entries(layout.steps).filter(([id]) => ids.has(id))) };
}
