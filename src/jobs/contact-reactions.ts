import { registerContactReaction } from "../services/contacts/reactions";
import { journeysContactReaction } from "../services/journeys/contact-triggers";
import { segmentsContactReaction } from "../services/segments/contact-writes";

/**
 * Who hears that contacts changed (services/contacts/reactions.ts), in order: segments first,
 * so a contact that entered a segment enters that segment's journeys right after. Called by
 * src/index.ts when the isolate loads the Worker, before any fetch, queue or scheduled event;
 * calling it again changes nothing.
 */
export function wireContactReactions(): void {
  registerContactReaction(segmentsContactReaction);
  registerContactReaction(journeysContactReaction);
}
