import type { ProposedJourneyDefinition } from "../../domain/journey";
import type { JourneyLayout } from "../../domain/journey-layout";
import { succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { insertJourney, type Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { checkDefinition } from "./check-definition";

/** Refused (invalid) with every problem of the definition. */
export type DefineJourneyOutcome = Result<Journey>;

/** Defines a journey (CONTRACT 5) once its definition checks out against the panel; it starts as a draft. */
export async function defineJourney(db: ShardDb, panelId: string, proposed: ProposedJourneyDefinition, layout: JourneyLayout | undefined, by: Auditor): Promise<DefineJourneyOutcome> {
  const checked = await checkDefinition(db, panelId, proposed, layout);
  if (!checked.ok) return checked;
  const definition = checked.value;
  const now = Date.now();
  const journey: Journey = {
    id: newId("jny"),
    panelId,
    name: definition.name,
    definition,
    version: 1,
    status: "draft",
    scanCursor: null,
    layout: layout ?? null,
    createdAt: now,
    updatedAt: now,
  };
  await insertJourney(db, journey, by.operator?.email ?? null);
  await recordAudit(db, panelId, by, "journey.created", journey.id, { name: journey.name });
  return succeeded(journey);
}
