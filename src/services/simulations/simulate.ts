import { DAY_MS } from "../../domain/time";
import type { JourneyDefinition, JourneyStep, MessageStep, WebhookStep } from "../../domain/journey";
import { isMessageStep, type MessageChannel } from "../../domain/journey";
import { emailAddressOf, messageRecipient, tokenBeyondInstalls, type ContactReach, type PanelSenders } from "../../domain/send-skips";
import { phoneDigits } from "../../domain/sms";
import { erasedKeysOf } from "../../domain/erasure";
import type { SuppressionReason } from "../../domain/preferences";
import { suppressionsOf } from "../../store/suppressions";
import { stoppedPhones } from "../../store/sms";
import { pushOptedOutOf } from "../../store/preferences";
import { pushSubscriptionsOf, type PushSubscription } from "../../store/push";
import { panelSms } from "../channels/sms/settings";
import { panelPush } from "../channels/push/settings";
import {
  cappedChannels,
  contactsToLoad,
  entriesInOrder,
  newSimulationState,
  simulate,
  simulationFigures,
  stateToKeep,
  topicsOf,
  type SimContact,
  type SimulatedJourney,
  type SimulationResult,
  type SimulationSample,
  type SimulationState,
} from "../../domain/journey-simulation";
import { personalize } from "../../domain/merge-tags";
import { config } from "../../lib/config";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId } from "../../lib/random";
import { NO_RULES } from "../../domain/message-rules";
import { recordedSends } from "../../store/contact-sends";
import { contactsByIds, contactsWrittenBetween, type KeyedContact } from "../../store/contacts";
import { filterMatches, type Filter } from "../../domain/filters";
import { eventFromRow, getEventsByIds, type StoredEvent } from "../../store/events";
import { getJourney } from "../../store/journeys/definitions";
import {
  advanceSimulation,
  failSimulation,
  getSimulation,
  insertSimulation,
  listSimulations,
  stalledSimulations,
  type JourneySimulation,
  type SimulationCursor,
} from "../../store/journeys/simulations";
import { listVersions } from "../../store/journeys/versions";
import { membersAddedBetween } from "../../store/lists";
import { segmentJoinsBetween } from "../../store/segments";
import { getPanel, type Panel } from "../../store/panels";
import { topicsLeftByContact } from "../../store/topics";
import type { ShardDb } from "../../store/shards";
import { mergedMap, panelShards, type PanelShards } from "../access/partitions";
import { panelHome, shardTask } from "../access/shards";
import type { Auditor } from "../audit/record";
import { nextReplayEvents } from "../replays/events";
import { renderWebhookEvent } from "../webhooks/enqueue";
import { journeyWebhookEvent } from "../journeys/webhook-event";

/**
 * Journey simulations on history (issue 46 item 1, decision 0048): a version of a journey run
 * over the panel's recorded activities of the last `days` days with nothing sent, no webhook
 * called and no journey state written. The events come through the replays' reader (the shard's
 * rows and the R2 archive, merged in (occurred_at, id) order: services/replays/events.ts); the
 * decisions are the engine's own, as a pure function over them (domain/journey-simulation.ts).
 *
 * Worked in bounded steps: each reads up to SIMULATION_STEP_EVENTS events (config) after the cursor, simulates them
 * on the state the last step left in R2 (named by its cursor, so a step run again after a crash
 * starts from the same state and counts nothing twice), writes the new state, then moves the
 * cursor with a conditional update. The first step runs in the request; each next one is a
 * `journey_simulation` nudge on IMPORTS; the cron nudges again one whose steps stopped.
 */

export const MAX_SIMULATION_DAYS = 30;
/** Events read per statement; a step reads up to config's simulationStepEvents. */
const READ_PAGE = 5_000;
/** Contacts read per statement (a JSON array of ids; their addresses' suppressions in as many arrays as they need). */
const CONTACTS_PER_READ = 10_000;
export const SIMULATION_STALLED_AFTER_MS = 60_000;
const LIST_LIMIT = 20;
/** The longest html of a sample email kept in the result. */
const SAMPLE_HTML_CHARS = 4_000;
/** Custom activities are what enter contacts, end activity waits and reach goals; message events of real messages cannot end a simulated message's wait. */
const SELECTION = { channels: ["custom_activity"], messageKinds: [], journeyId: null };

export interface SimulationNudge {
  type: "journey_simulation";
  panelId: string;
  simulationId: string;
}

export function readSimulationNudge(body: unknown): SimulationNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, simulationId } = body as Record<string, unknown>;
  return type === "journey_simulation" && typeof panelId === "string" && typeof simulationId === "string" ? { type, panelId, simulationId } : null;
}

async function nudge(env: Pick<Env, "IMPORTS">, panelId: string, simulationId: string): Promise<void> {
  await env.IMPORTS.send({ type: "journey_simulation", panelId, simulationId } satisfies SimulationNudge);
}

/** The R2 object holding a running simulation's state as its step at `cursor` left it. */
function stateKey(s: Pick<JourneySimulation, "panelId" | "id">, cursor: SimulationCursor | null): string {
  return `simulations/${s.panelId}/${s.id}/${cursor ? `${cursor.occurredAt}-${cursor.id}` : "start"}.json`;
}

/** A simulation as the API shows it. */
export interface SimulationView {
  simulation: JourneySimulation;
  /** 0–1: the part of the range simulated. */
  progress: number;
}

function viewOf(s: JourneySimulation): SimulationView {
  const progress = s.state === "done" ? 1 : s.cursor ? Math.min(1, Math.max(0, (s.cursor.occurredAt - s.from) / Math.max(1, s.to - s.from))) : 0;
  return { simulation: s, progress };
}

const noSuchJourney = (journeyId: string) => refused<never>("not_found", [], `No journey with id "${journeyId}" in this panel`);

/** The definition of the journey's `version` (its current one when absent); null when it has no such version. */
async function definitionOf(db: ShardDb, panelId: string, journeyId: string, version: number | null): Promise<{ name: string; version: number; definition: JourneyDefinition } | null> {
  const journey = await getJourney(db, panelId, journeyId);
  if (!journey) return null;
  if (version === null || version === journey.version) return { name: journey.definition.name, version: journey.version, definition: journey.definition };
  const found = (await listVersions(db, panelId, journeyId)).find((v) => v.version === version);
  return found ? { name: found.definition.name, version, definition: found.definition } : null;
}

/**
 * Starts a simulation of the journey's version (its current one when absent) over the last
 * `days` days, and runs its first step. Refused when the journey or version does not exist. A
 * list trigger enters the list's members at the time each was added (list_members.added_at), a
 * saved segment's the contacts that joined it (segment_changes), a segment filter of the
 * journey's own the contacts matching it now at their last write in the range.
 */
export async function startSimulation(
  env: Env,
  db: ShardDb,
  panel: Panel,
  journeyId: string,
  body: { days: number; version?: number },
  by: Auditor,
  now: number,
): Promise<Result<SimulationView>> {
  if (!Number.isInteger(body.days) || body.days < 1 || body.days > MAX_SIMULATION_DAYS) return refusedField("invalid", "days", `must be a whole number of days from 1 to ${MAX_SIMULATION_DAYS}`);
  const journey = await getJourney(db, panel.id, journeyId);
  if (!journey) return noSuchJourney(journeyId);
  const found = await definitionOf(db, panel.id, journeyId, body.version ?? null);
  if (!found) return refusedField("not_found", "version", `names no version of this journey (it is at version ${journey.version})`);
  const simulation = await insertSimulation(db, {
    panelId: panel.id,
    id: newId("sim"),
    journeyId,
    version: found.version,
    days: body.days,
    from: now - body.days * DAY_MS,
    to: now,
    createdBy: by.operator?.email ?? null,
    createdAt: now,
  });
  await stepAndNudge(env, panelShards(env, panel, db), panel.id, simulation.id, now);
  return succeeded(viewOf((await getSimulation(db, panel.id, simulation.id)) ?? simulation));
}

export async function readSimulation(db: ShardDb, panelId: string, journeyId: string, simulationId: string): Promise<Result<SimulationView>> {
  const found = await getSimulation(db, panelId, simulationId);
  if (!found || found.journeyId !== journeyId) return refused("not_found", [], `No simulation with id "${simulationId}" of this journey`);
  return succeeded(viewOf(found));
}

/** The journey's latest simulations, newest first; of one version when given. */
export async function simulationsOf(db: ShardDb, panelId: string, journeyId: string, version: number | null): Promise<Result<SimulationView[]>> {
  if (!(await getJourney(db, panelId, journeyId))) return noSuchJourney(journeyId);
  return succeeded((await listSimulations(db, panelId, journeyId, version, LIST_LIMIT)).map(viewOf));
}

/** What the rules read of the contacts besides their attributes: recorded sends of the capped channels, topics left. */
interface RuleReads {
  journey: SimulatedJourney;
  range: { from: number; to: number };
}

/** The channels of the journey's message steps. */
function channelsOf(definition: JourneyDefinition): Set<MessageChannel> {
  return new Set(definition.steps.flatMap((s) => (isMessageStep(s) ? [s.type] : [])));
}

/**
 * What the senders read of these contacts on the journey's channels (domain/send-skips.ts), as
 * they are now: the stop of each one's email address or number, push turned off, push devices.
 */
async function reachOf(shards: PanelShards, panelId: string, contacts: ReadonlyMap<number, KeyedContact>, channels: ReadonlySet<MessageChannel>): Promise<Map<number, ContactReach>> {
  const list = [...contacts.values()];
  const ids = list.map((c) => c.id);
  const email = (c: KeyedContact) => emailAddressOf(messageRecipient("email", c.attributes, c.key));
  const phone = (c: KeyedContact) => phoneDigits(messageRecipient("sms", c.attributes, c.key));
  const push = channels.has("apn") || channels.has("bpn");
  const none = async <K, V>() => new Map<K, V>();
  const [suppressed, stopped, turnedOff, web, app] = await Promise.all([
    channels.has("email") ? emailStops(shards, panelId, list.map(email)) : none<string, SuppressionReason>(),
    channels.has("sms") ? mergedMap(shards, (db) => stoppedPhones(db, panelId, list.flatMap((c) => phone(c) ?? []))) : none<string, true>(),
    push ? mergedMap(shards, (db) => pushOptedOutOf(db, panelId, ids)) : none<number, true>(),
    channels.has("bpn") ? mergedMap(shards, (db) => pushSubscriptionsOf(db, panelId, "web", ids)) : none<number, PushSubscription[]>(),
    channels.has("apn") ? mergedMap(shards, (db) => pushSubscriptionsOf(db, panelId, "app", ids)) : none<number, PushSubscription[]>(),
  ]);
  const reach = new Map<number, ContactReach>();
  for (const c of list) {
    const number = phone(c);
    const installs = app.get(c.id) ?? [];
    // As the push sender's devices: the app installs, and the PUSH_TOKEN attribute when not among them.
    const appDevices = installs.length + (tokenBeyondInstalls(installs, c.attributes.PUSH_TOKEN) ? 1 : 0);
    reach.set(c.id, {
      emailSuppression: suppressed.get(email(c)) ?? null,
      phoneStopped: number !== null && stopped.has(number),
      pushTurnedOff: turnedOff.has(c.id),
      webDevices: web.get(c.id)?.length ?? 0,
      appDevices,
    });
  }
  return reach;
}

/** The email suppressions of these addresses, an erased contact's found by its hash (as suppressionOf finds it). */
async function emailStops(shards: PanelShards, panelId: string, addresses: readonly string[]): Promise<Map<string, SuppressionReason>> {
  const byKey = await erasedKeysOf(panelId, addresses);
  const found = await mergedMap(shards, (db) => suppressionsOf(db, panelId, [...byKey.keys()]));
  return new Map([...found].map(([key, reason]) => [byKey.get(key)!, reason]));
}

/** What the panel sends SMS and push through now (a channel not set up leaves its messages in the outbox). */
async function sendersOf(env: Env, home: ShardDb, panelId: string): Promise<PanelSenders> {
  const [sms, push] = await Promise.all([panelSms(env, home, panelId), panelPush(env, home, panelId)]);
  return { sms: sms !== null, webPush: push.web !== null, fcm: push.fcm !== null };
}

/** The contacts `ids` from the panel's shards (each on its own), with what the rules and the senders read of them. */
async function loadContacts(shards: PanelShards, panelId: string, ids: readonly number[], rules?: RuleReads): Promise<Map<number, KeyedContact & SimContact>> {
  const contacts = new Map<number, KeyedContact & SimContact>();
  const capped = rules ? cappedChannels(rules.journey) : null;
  const topics = rules ? topicsOf(rules.journey.definition) : [];
  for (let i = 0; i < ids.length; i += CONTACTS_PER_READ) {
    const page = ids.slice(i, i + CONTACTS_PER_READ);
    const [found, sends, left] = await Promise.all([
      mergedMap(shards, (db) => contactsByIds(db, panelId, page)),
      // A send up to the longest cap's window before the range still counts at its start.
      rules && capped ? mergedMap(shards, (db) => recordedSends(db, panelId, page, capped.channels, { from: rules.range.from - capped.window, to: rules.range.to }, rules.journey.id)) : null,
      mergedMap(shards, (db) => topicsLeftByContact(db, panelId, page, topics)),
    ]);
    const reach = rules ? await reachOf(shards, panelId, found, channelsOf(rules.journey.definition)) : null;
    for (const [id, contact] of found) contacts.set(id, { ...contact, sentAt: sends?.get(id), topicsLeft: left.get(id), reach: reach?.get(id) });
  }
  return contacts;
}

/** Members (or joins) read per statement for a list's (or a saved segment's) entries. */
const MEMBERS_PER_READ = 10_000;

/**
 * A list-triggered journey's entries: the list's members now on each of the panel's shards, each
 * at the time it was added, within the range; oldest first. (A contact removed from the list
 * since left no record.)
 */
async function listEntriesOf(shards: PanelShards, panelId: string, listId: number, sim: JourneySimulation): Promise<Array<[number, number]>> {
  const members = await everyPageOn(
    shards,
    (db, after: number | null) => membersAddedBetween(db, panelId, listId, { from: sim.from, to: sim.to }, after ?? 0, MEMBERS_PER_READ),
    ([, contactId]) => contactId,
  );
  return entriesInOrder(members, false);
}

/**
 * A saved segment's journey's entries: the joins recorded in the segment's history within the
 * range, read on each of the panel's shards (a change stays on the shard it was written on, so
 * a contact's may be on two after a split), each contact once at its first join, oldest first.
 * (A contact that was a member before the range is not entered: the live journey entered it
 * then, or at its start.)
 */
async function segmentEntriesOf(shards: PanelShards, panelId: string, segmentId: string, sim: JourneySimulation): Promise<Array<[number, number]>> {
  const joins = await everyPageOn(
    shards,
    (db, after: { at: number; id: number } | null) => segmentJoinsBetween(db, panelId, segmentId, { from: sim.from, to: sim.to }, after, MEMBERS_PER_READ),
    ([at, , id]) => ({ at, id }),
  );
  return entriesInOrder(
    joins.map(([at, contactId]) => [at, contactId]),
    true,
  );
}

/**
 * Every row `read` answers on each shard, page after page of MEMBERS_PER_READ, each page after
 * `cursorOf` the last's last row; of each page, what `keep` keeps (all when absent).
 */
async function everyPageOn<T, C, K = T>(shards: PanelShards, read: (db: ShardDb, after: C | null) => Promise<T[]>, cursorOf: (last: T) => C, keep?: (page: T[]) => K[]): Promise<K[]> {
  const rows: K[] = [];
  for (const db of shards) {
    for (let after: C | null = null; ; ) {
      const page = await read(db, after);
      rows.push(...(keep ? keep(page) : (page as unknown as K[])));
      if (page.length < MEMBERS_PER_READ) break;
      after = cursorOf(page.at(-1)!);
    }
  }
  return rows;
}

/**
 * A segment journey of its own filter's entries: the contacts that match it now and were last
 * written within the range, each at that write (since when they are known to match; they may
 * have matched before), oldest first. A contact matching now that was not written since before
 * the range matched all through it: a member before the range, not entered (as a saved
 * segment's members before the range are not). One that matched in the range and not now is
 * not known.
 */
async function filterEntriesOf(shards: PanelShards, panelId: string, filter: Filter, sim: JourneySimulation): Promise<Array<[number, number]>> {
  const matching = await everyPageOn(
    shards,
    (db, after: number | null) => contactsWrittenBetween(db, panelId, { from: sim.from, to: sim.to }, after ?? 0, MEMBERS_PER_READ),
    (last) => last.id,
    (page) => page.flatMap((c): Array<[number, number]> => (filterMatches(filter, c.attributes) ? [[c.writtenAt, c.id]] : [])),
  );
  return entriesInOrder(matching, true);
}

export type SimulationStepOutcome = "more" | "done" | "stopped";

/**
 * One step: up to SIMULATION_STEP_EVENTS events (config) of the panel's `shards` (its home
 * first, which keeps the simulation) simulated on the state the last step left, and the cursor
 * moved on.
 */
export async function simulationStep(env: Env, shards: PanelShards, panelId: string, simulationId: string, now: number): Promise<SimulationStepOutcome> {
  const [db] = shards;
  const sim = await getSimulation(db, panelId, simulationId);
  if (!sim || sim.state !== "running") return "stopped";
  const found = await definitionOf(db, panelId, sim.journeyId, sim.version);
  if (!found) {
    await failSimulation(db, panelId, sim.id, "the journey or its version was deleted", now);
    return "stopped";
  }
  // The panel's rules as they are now, as the contacts' attributes are read.
  const panel = await getPanel(env.DB, panelId);
  const journey: SimulatedJourney = {
    id: sim.journeyId,
    definition: found.definition,
    rules: { rules: panel?.messageRules ?? NO_RULES, timezone: panel?.timezone ?? "UTC" },
    senders: await sendersOf(env, db, panelId),
  };
  let state: SimulationState;
  if (sim.cursor === null) {
    state = newSimulationState();
    const { trigger } = found.definition;
    if (trigger.type === "list") state.entries = await listEntriesOf(shards, panelId, trigger.listid, sim);
    else if (trigger.type === "segment" && trigger.segment !== undefined) state.entries = await segmentEntriesOf(shards, panelId, trigger.segment, sim);
    else if (trigger.type === "segment" && trigger.filter !== undefined) state.entries = await filterEntriesOf(shards, panelId, trigger.filter, sim);
  } else {
    const object = await env.FILES.get(stateKey(sim, sim.cursor));
    if (!object) {
      // Another step moved the cursor on (and dropped this state) since this one read it.
      const latest = await getSimulation(db, panelId, simulationId);
      if (latest?.state !== "running" || latest.cursor?.occurredAt !== sim.cursor.occurredAt || latest.cursor?.id !== sim.cursor.id) return "stopped";
      // The state of the cursor's step was written before the cursor moved: missing is a fault.
      await failSimulation(db, panelId, sim.id, "the simulation's state is missing", now);
      return "stopped";
    }
    state = await object.json<SimulationState>();
  }
  let cursor: SimulationCursor = sim.cursor ?? { occurredAt: sim.from, id: 0 };
  let done = false;
  const stepEvents = config(env).simulationStepEvents;
  // The step's events first, page by page, then the contacts they need read once: a contact
  // with events on several pages of the step is read once, not once per page.
  const events: StoredEvent[] = [];
  while (events.length < stepEvents) {
    const page = await nextReplayEvents(env.FILES, shards, panelId, SELECTION, cursor, sim.to, Math.min(READ_PAGE, stepEvents - events.length));
    for (const row of page.rows) events.push(eventFromRow(row));
    const last = page.rows.at(-1);
    cursor = last ? { occurredAt: last.occurred_at, id: last.id } : page.passed;
    done = page.exhausted;
    if (done) break;
  }
  const read = events.length;
  const upTo = done ? sim.to : cursor.occurredAt;
  // The state at the step's start names every contact the step's events, timers and entries may
  // reach: one entered in the step is named by the event or entry that entered it.
  const contacts = await loadContacts(shards, panelId, contactsToLoad(journey, state, events, upTo), { journey, range: { from: sim.from, to: sim.to } });
  simulate(journey, state, events, contacts, upTo);
  const moved = sim.cursor === null || cursor.occurredAt !== sim.cursor.occurredAt || cursor.id !== sim.cursor.id;
  let result: SimulationResult | undefined;
  if (done) result = await resultOf(env, shards, panelId, sim, found.name, found.definition, state);
  else if (moved) await env.FILES.put(stateKey(sim, cursor), JSON.stringify(stateToKeep(state)));
  const advanced = await advanceSimulation(db, panelId, sim.id, { from: sim.cursor, to: cursor, read, result }, now);
  // The state the step started from is not needed again once the cursor moved past it.
  if (advanced && sim.cursor && (moved || done)) await env.FILES.delete(stateKey(sim, sim.cursor));
  if (!advanced) return "stopped";
  return done ? "done" : "more";
}

function messageContent(step: MessageStep, attributes: KeyedContact["attributes"]): Record<string, string> {
  const fill = (text: string | undefined, mode: "html" | "plain") => (text === undefined ? undefined : personalize(text, attributes, mode));
  const content: Record<string, string | undefined> =
    step.type === "email"
      ? { subject: fill(step.subject, "plain"), html: fill(step.html, "html")?.slice(0, SAMPLE_HTML_CHARS), sender: `${step.sender_name} <${step.sender_email}>` }
      : step.type === "sms"
        ? { text: step.text === undefined ? undefined : fill(step.text, "plain"), template: step.template, title: step.title }
        : { title: fill(step.title, "plain"), text: fill(step.text, "plain"), url: step.url };
  return Object.fromEntries(Object.entries(content).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** The figures, with the samples rendered for the contacts as they are now. */
async function resultOf(env: Env, shards: PanelShards, panelId: string, sim: JourneySimulation, name: string, definition: JourneyDefinition, state: SimulationState): Promise<SimulationResult> {
  const contacts = await loadContacts(shards, panelId, [...new Set(state.samples.map((s) => s.contactId))]);
  // A wait's timeout carries the trigger's event by id: read back from its shard (one archived since is described without it).
  const eventIds = [...new Set(state.samples.flatMap((s) => (s.event === null && s.eventId !== null ? [s.eventId] : [])))];
  const events = await mergedMap(shards, (db) => getEventsByIds(db, panelId, eventIds));
  const steps = new Map<string, JourneyStep>(definition.steps.map((s) => [s.id, s]));
  const result: SimulationResult = { ...simulationFigures(state, definition), samples: { messages: [], webhooks: [] } };
  for (const sample of state.samples as SimulationSample[]) {
    const step = steps.get(sample.step);
    const contact = contacts.get(sample.contactId);
    if (!step || !contact) continue;
    if (isMessageStep(step)) {
      result.samples.messages.push({ step_id: step.id, channel: step.type, contact_id: String(contact.id), contact_key: contact.key, at: sample.at, content: messageContent(step, contact.attributes) });
    } else if (step.type === "webhook") {
      const described = journeyWebhookEvent({
        journeyName: name,
        triggerType: definition.trigger.type,
        instanceId: `simulation:${sim.id}:${contact.id}`,
        step: step as WebhookStep,
        contact,
        event: (sample.event as StoredEvent | null) ?? (sample.eventId === null ? null : (events.get(sample.eventId) ?? null)),
        message: null,
        now: sample.at,
      });
      // As the webhook would have been sent it (its payload version, name and zone); nothing is queued.
      const payload = await renderWebhookEvent(env, panelId, step.webhook, { ...described, guid: described.guid! });
      if (payload) result.samples.webhooks.push({ step_id: step.id, webhook: step.webhook, contact_id: String(contact.id), at: sample.at, payload });
    }
  }
  return result;
}

async function stepAndNudge(env: Env, shards: PanelShards, panelId: string, simulationId: string, now: number): Promise<void> {
  if ((await simulationStep(env, shards, panelId, simulationId, now)) === "more") await nudge(env, panelId, simulationId);
}

/** The IMPORTS queue's `journey_simulation` nudge: the simulation's next step, if it has one. */
export async function handleSimulationNudge(env: Env, message: SimulationNudge, now = Date.now()): Promise<void> {
  const { panel, db } = await panelHome(env, message.panelId);
  await stepAndNudge(env, panelShards(env, panel, db), message.panelId, message.simulationId, now);
}

/** The cron's sweep: running simulations whose steps stopped (a lost nudge, a failed step) are nudged again. */
export const simulationRedrive = shardTask("journey-simulation-redrive", async (env, db, _index, now) => {
  for (const stalled of await stalledSimulations(db, now - SIMULATION_STALLED_AFTER_MS, now, 100)) await nudge(env, stalled.panelId, stalled.simulationId);
});
