import type { StoredEvent } from "../../store/events";
import type { PanelShard } from "../access/partitions";

/** An event as pipeline steps see it: stored, with its id, guid and resolved contact. */
export type PipelineEvent = StoredEvent;

export interface StepFailure {
  eventId: number;
  error: unknown;
}

/**
 * One stage of the event pipeline: once stored, every event goes through the stages of
 * PIPELINE_STEPS (services/pipeline-steps.ts) in order. The consumer calls `run` with the
 * pending events of one panel, oldest first, that have not yet passed this step; an event
 * reaches a step only after every earlier step succeeded for it.
 *
 * Delivery is at least once: a step's success is recorded after `run` returns, so a crash in
 * between runs it again for those events. A step keeps one effect per event by keying what
 * it does on the event's `id` or `guid` (e.g. a journey instance per (journey, contact), a
 * webhook backlog entry per guid).
 *
 * `run` returns the events that failed (they are retried later with this step and the ones
 * after it; the others go on), or throws to fail every event it was given.
 */
export interface PipelineStep {
  /** Stable name: completion is recorded under it. */
  readonly name: string;
  run(env: Env, events: readonly PipelineEvent[], place?: PanelShard): Promise<readonly StepFailure[] | void>;
  /**
   * It runs for events stored on a partition's shard (`place`, where the events are stored: not the home; absent: the home), working there on
   * their contacts' rows. A step without it reads the home only, and such events fail it
   * (consumer.ts, notRouted).
   */
  readonly partitioned?: boolean;
  /**
   * Whether the step can have anything to do for events of this panel (journeys: the panel has
   * running or paused ones). When it cannot, its events pass it unseen; when no step can, the
   * consumer stores the events as rows and finishes their batches without reading them back.
   * A step without it always runs. `recordedBy`: the events were recorded by then, so an answer
   * cached from before may miss what an operator changed through another isolate meanwhile.
   */
  hasWork?(env: Env, panelId: string, recordedBy: number): Promise<boolean>;
  /**
   * The most events one `run` call takes (default EVENTS_PER_PIECE). A step whose cost is mostly
   * per call rather than per event (a few statements for any number of events) takes more, so
   * a pass in which only such steps work runs in fewer, larger pieces.
   */
  readonly piece?: number;
}

