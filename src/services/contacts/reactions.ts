import type { AttributeValue } from "../../domain/attributes";
import type { ShardDb } from "../../store/shards";

/**
 * "After a contact changed", in one place. Engines that follow contacts (segments, then
 * journeys) register a reaction once per isolate (src/jobs/contact-reactions.ts, called by
 * src/index.ts before any entry point runs), and every contact write calls one of the two
 * functions below. So services/contacts knows no engine by name, and no write path can leave
 * one out: a registry left empty is an error, never a silent no-op.
 */

/** A contact as it is after the write. */
export interface ChangedContact {
  id: number;
  key: string;
  attributes: Record<string, AttributeValue>;
}

/** What changed on the contact: its attributes, its list memberships, or both. */
export type ContactChangeKind = "attributes" | "lists";

/** One contact written (API add, update, delete from lists; the panel's edit). */
export interface ContactChanged {
  panelId: string;
  contact: ChangedContact;
  changes: readonly ContactChangeKind[];
  /** It became a member of a list with this write (list journeys enter it). */
  joinedList: boolean;
  /** It entered a segment: set by the segments reaction for the reactions after it (segment journeys). */
  joinedSegment: boolean;
  now: number;
}

/** Many contacts written at once (an import's rows; the contacts a pipeline pass created for new identities). */
export interface ContactsChanged {
  panelId: string;
  /** The contacts written, when the writer knows them (the pipeline's): only these are looked at again. */
  contacts?: readonly ChangedContact[];
  /** Some of them became members of a list (its journeys' entries were left by the membership trigger). */
  joinedList: boolean;
  /** Their attributes or lists changed beyond new memberships: whatever reads them looks at every contact again. */
  rewritten: boolean;
  /** Some of them entered a segment: set by the segments reaction for the reactions after it (segment journeys). */
  joinedSegment: boolean;
  now: number;
  /**
   * The shard holding `contacts` when it is not the panel's home (a partition's, decision 0038:
   * the contacts a pipeline pass created there); absent: the home. A reaction not routed across
   * partitions passes such contacts by.
   */
  at?: { shard: number; db: ShardDb };
}

export interface ContactReaction {
  /** Unique; registering a name twice keeps the first. */
  readonly name: string;
  /** Never throws (the write stands; a failure is logged). What it returns is seen by the reactions after it. */
  afterContact(env: Env, change: ContactChanged): Promise<Partial<Pick<ContactChanged, "joinedSegment">> | void>;
  /**
   * Whether this isolate's caches already show that a write of `changes` to a contact of the
   * panel gives this reaction nothing to do (afterContact would read the same caches and
   * return). Synchronous and reads nothing: false whenever it cannot tell.
   */
  idleAfter(panelId: string, changes: readonly ContactChangeKind[]): boolean;
  /** Throws on failure: the caller's step is retried, and every reaction is idempotent. */
  afterContacts(env: Env, change: ContactsChanged): Promise<Partial<Pick<ContactsChanged, "joinedSegment">> | void>;
}

const reactions: ContactReaction[] = [];

/** Adds a reaction; they run in the order registered. */
export function registerContactReaction(reaction: ContactReaction): void {
  if (!reactions.some((r) => r.name === reaction.name)) reactions.push(reaction);
}

/** The names of the registered reactions, in their order. */
export function contactReactionNames(): string[] {
  return reactions.map((r) => r.name);
}

function wired(): readonly ContactReaction[] {
  if (reactions.length === 0) throw new Error("contact reactions are not registered: the entry point calls wireContactReactions() (src/jobs/contact-reactions.ts)");
  return reactions;
}

/**
 * What a contact write calls once the contact is stored: afterContactChanged handed to the
 * call's waitUntil, unless every reaction is idle after such a write (most panels have no
 * segment and no running journey a write can enter). Those reactions' promises and lookups
 * were about an eighth of a contact add's allocations (HEAP=1 bench:profile), for nothing.
 */
export function reactAfterWrite(
  ctx: { env: Env; panelId: string; now: number; waitUntil(work: Promise<unknown>): void },
  contact: ChangedContact,
  changes: readonly ContactChangeKind[],
  joinedList: boolean,
): void {
  if (reactions.length > 0 && allIdle(ctx.panelId, changes)) return;
  ctx.waitUntil(afterContactChanged(ctx.env, { panelId: ctx.panelId, contact, changes, joinedList, now: ctx.now }));
}

function allIdle(panelId: string, changes: readonly ContactChangeKind[]): boolean {
  for (const reaction of reactions) if (!reaction.idleAfter(panelId, changes)) return false;
  return true;
}

/**
 * After one contact was written (run after the answer, in waitUntil): each reaction in turn,
 * later ones seeing what earlier ones found (a segment entered). Never throws.
 */
export async function afterContactChanged(env: Env, change: Omit<ContactChanged, "joinedSegment">): Promise<void> {
  let seen: ContactChanged = { ...change, joinedSegment: false };
  try {
    for (const reaction of wired()) seen = { ...seen, ...((await reaction.afterContact(env, seen)) ?? {}) };
  } catch (error) {
    console.error(`contacts: reacting to a write of contact ${change.contact.id} of panel ${change.panelId} failed`, error);
  }
}

/**
 * After many contacts were written at once: each reaction in turn, later ones seeing what
 * earlier ones found. Throws, for the caller to retry.
 */
export async function afterContactsChanged(env: Env, change: Omit<ContactsChanged, "joinedSegment">): Promise<void> {
  let seen: ContactsChanged = { ...change, joinedSegment: false };
  for (const reaction of wired()) seen = { ...seen, ...((await reaction.afterContacts(env, seen)) ?? {}) };
}
