import { journeysPipelineStep } from "./journeys/pipeline-step";
import type { PipelineStep } from "./pipeline/steps";
import { segmentsPipelineStep } from "./segments/pipeline-step";

/**
 * The stages every recorded event goes through after it is stored, in order (CONTRACT 7):
 * journeys, whose webhook steps hand events on to webhooks; then saved segments, whose
 * membership the events may change. The pipeline itself (pipeline/)
 * knows no stage by name; the wiring and the admin's event view pass this list.
 */
export const PIPELINE_STEPS: PipelineStep[] = [journeysPipelineStep, segmentsPipelineStep];
