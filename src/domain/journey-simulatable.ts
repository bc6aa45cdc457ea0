import type { Trigger } from "./journey";

/**
 * Why a journey with this trigger cannot be simulated on history (decision 0048), or null when
 * it can. Its entries must be recorded with their time: an activity's events, a list's members
 * (added_at), a saved segment's joins (segment_changes). A segment journey with a filter of its
 * own keeps no history of who matched it when. The Worker refuses with this message (field
 * `trigger`); the panel offers the simulation only when it is null. No runtime import: the
 * panel bundles this file.
 */
export function simulationRefusal(trigger: Pick<Trigger, "type"> & { segment?: string }): string | null {
  if (trigger.type === "activity" || trigger.type === "list") return null;
  if (trigger.type === "segment" && trigger.segment !== undefined) return null;
  return "a segment journey with a filter of its own cannot be simulated: when each contact came to match it is not recorded (a saved segment's joins are: trigger on a saved segment to simulate)";
}
