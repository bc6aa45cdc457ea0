// The canvas checks a journey with the Worker's own code: the same zod schema, the same field
// messages and the same graph rules the admin API applies, so a problem shows on its node while
// editing, and the server's answer (same fields, same words) lands on the same node after a save.
import { journeyDefinitionSchema, journeyGraphProblems } from "../../../src/domain/journey";
import { fieldErrorsFromZod } from "../../../src/lib/http/errors";
import type { FieldError } from "../api";
import { TRIGGER_ID } from "./model";

export function journeyProblems(definition: unknown): FieldError[] {
  const parsed = journeyDefinitionSchema.safeParse(definition);
  return parsed.success ? journeyGraphProblems(parsed.data) : fieldErrorsFromZod(parsed.error);
}

export interface PlacedProblems {
  /** Messages per node id (the trigger's under TRIGGER_ID), each with its field inside the node. */
  byNode: Map<string, string[]>;
  /** Problems of the journey as a whole (its name, its step list). */
  general: string[];
}

const FIELD_WORDS: Record<string, string> = { filter: "who may enter" };

/** `steps.2.subject` → the node of the third step, "subject: …"; `trigger.activity` and `filter.*` → the trigger. */
export function placeProblems(problems: readonly FieldError[], stepIds: readonly string[]): PlacedProblems {
  const placed: PlacedProblems = { byNode: new Map(), general: [] };
  const add = (node: string, message: string) => placed.byNode.set(node, [...(placed.byNode.get(node) ?? []), message]);
  for (const { field, message } of problems) {
    const [head, ...rest] = field.split(".");
    const step = head === "steps" && rest.length ? stepIds[Number(rest[0])] : undefined;
    if (step !== undefined) add(step, rest.length > 1 ? `${rest.slice(1).join(".")}: ${message}` : message);
    else if (head === "trigger" || head === "filter") add(TRIGGER_ID, `${[FIELD_WORDS[head] ?? "", ...rest].filter(Boolean).join(".") || "trigger"}: ${message}`);
    else placed.general.push(`${field}: ${message}`);
  }
  return placed;
}
