// bench:simulate's second line: the simulation alone (the pure function of
// src/domain/journey-simulation.ts, bundled with esbuild) over EVENTS activities of CONTACTS
// contacts over DAYS days generated in memory as the shard's reader answers them (eventFromRow's
// shape), in the steps the queue runs (SIMULATION_STEP_EVENTS a step, the state carried as JSON
// between steps as R2 keeps it): no D1, no R2, no queue. Beside it, from the same run: the same
// pages read bare (each event's contact tallied in a Map), the least any reader does. Its
// journey is its own (condition, activity wait, split, email, SMS, webhook, goal), as before the
// end-to-end figure existed, so its figures stay comparable with the older runs.
import { build } from "esbuild";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { median, root } from "./lib.ts";

// The bundle's exports, as src/domain/journey-simulation.ts declares them (its types are not part of the node project).
export interface Figures {
  entered: number;
  completed: number;
  converted: number;
  active: number;
  messages: Record<string, number>;
  webhooks: Record<string, number>;
}
interface SimulationModule {
  newSimulationState(): unknown;
  contactsToLoad(journey: unknown, state: unknown, events: readonly unknown[], upTo: number): number[];
  simulate(journey: unknown, state: unknown, events: readonly unknown[], contacts: ReadonlyMap<number, unknown>, upTo: number): void;
  simulationFigures(state: unknown): Figures;
}

/** The pure function's figures: median seconds of `rounds` runs, and of the bare read of the same pages. */
export interface PureFigures {
  seconds: number;
  bareSeconds: number;
  figures: Figures;
  stateBytes: number;
}

export async function pureSimulation({ days, eventCount, contactCount, stepEvents, rounds }: { days: number; eventCount: number; contactCount: number; stepEvents: number; rounds: number }): Promise<PureFigures> {
  const dir = mkdtempSync(join(tmpdir(), "apiv2-bench-sim-"));
  /** A module of src/domain bundled for Node (its types are not part of the node project). */
  const bundled = async (name: string): Promise<unknown> => {
    const outfile = join(dir, `${name}.mjs`);
    await build({ entryPoints: [join(root, "src", "domain", `${name}.ts`)], bundle: true, format: "esm", platform: "neutral", target: "es2022", outfile, logLevel: "error" });
    return import(pathToFileURL(outfile).href);
  };
  const sim = (await bundled("journey-simulation")) as SimulationModule;
  const { journeyDefinitionSchema } = (await bundled("journey")) as { journeyDefinitionSchema: { parse(input: unknown): unknown } };

  const mail = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: "email", subject: "Hi {{NAME}}", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", ...extra });
  const definition = journeyDefinitionSchema.parse({
    name: "Bench cart",
    trigger: { type: "activity", activity: "add_to_cart", params: [{ attribute: "price", op: "gt", value: 5 }] },
    goal: { activity: "refund" },
    steps: [
      { id: "c", type: "condition", filter: [{ attribute: "COUNTRY", op: "eq", value: "IN" }], then: "w", else: "hook" },
      { id: "w", type: "wait_for_event", events: { activity: "purchase" }, within: "1d" },
      mail("thanks", { after: "w", on: "event" }),
      { id: "ab", type: "split", after: "w", on: "timeout", branches: [{ percent: 50, then: "mailA" }, { percent: 50, then: "smsB" }] },
      mail("mailA"),
      { id: "smsB", type: "sms", text: "Come back" },
      { id: "hook", type: "webhook", webhook: "wh_1" },
    ],
  });
  const journey = { id: "jrn_bench", definition };

  // Contacts and events: a deterministic generator (xorshift), events spread over the range in time order.
  let seed = 0x9e3779b9;
  const random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 4_294_967_296;
  };
  const contacts = new Map<number, { id: number; key: string; attributes: Record<string, string | number> }>();
  for (let id = 1; id <= contactCount; id++) contacts.set(id, { id, key: `user${id}@example.com`, attributes: { EMAIL: `user${id}@example.com`, COUNTRY: id % 3 === 0 ? "US" : "IN", NAME: `User ${id}` } });
  const to = Date.UTC(2026, 10, 30);
  const from = to - days * 86_400_000;
  const names = ["add_to_cart", "add_to_cart", "page_view", "page_view", "page_view", "purchase", "purchase", "refund"];
  const events = Array.from({ length: eventCount }, (_, i) => {
    const at = from + Math.floor(((i + random()) / eventCount) * (to - from));
    const name = names[Math.floor(random() * names.length)]!;
    return {
      id: i + 1,
      panelId: "pnl_bench",
      guid: `g${i}`,
      channel: "custom_activity",
      name,
      activityId: 1,
      contactId: 1 + Math.floor(random() * contactCount),
      uniqueid: null,
      identity: null,
      source: "web",
      params: { price: Math.floor(random() * 20), prid: i % 100 },
      occurredAt: at,
      receivedAt: at,
      msgid: null,
      campaignId: null,
      journeyId: null,
      assetId: null,
    };
  });

  /** The simulation, step by step as the queue runs it: the state carried as JSON between steps. */
  function simulateAll(): { seconds: number; figures: Figures; stateBytes: number } {
    const started = performance.now();
    let carried = JSON.stringify(sim.newSimulationState());
    let stateBytes = 0;
    for (let at = 0; at < events.length; at += stepEvents) {
      const state = JSON.parse(carried);
      const page = events.slice(at, at + stepEvents);
      const last = at + stepEvents >= events.length;
      const upTo = last ? to : page.at(-1)!.occurredAt;
      const loaded = new Map(sim.contactsToLoad(journey, state, page, upTo).map((id) => [id, contacts.get(id)!]));
      sim.simulate(journey, state, page, loaded, upTo);
      carried = JSON.stringify(state);
      stateBytes = Math.max(stateBytes, carried.length);
    }
    return { seconds: (performance.now() - started) / 1000, figures: sim.simulationFigures(JSON.parse(carried)), stateBytes };
  }

  /** The baseline: the same pages read bare, each event's contact tallied. */
  function readBare(): number {
    const started = performance.now();
    const seen = new Map<number, number>();
    for (let at = 0; at < events.length; at += stepEvents) {
      for (const event of events.slice(at, at + stepEvents)) seen.set(event.contactId, (seen.get(event.contactId) ?? 0) + 1);
    }
    if (seen.size === 0) throw new Error("no events read");
    return (performance.now() - started) / 1000;
  }

  // Alternate, so both see the same machine; the median of `rounds` each.
  const simulated: number[] = [];
  const bare: number[] = [];
  let last: ReturnType<typeof simulateAll> | null = null;
  for (let round = 0; round < rounds; round++) {
    bare.push(readBare());
    last = simulateAll();
    simulated.push(last.seconds);
  }
  return { seconds: median(simulated), bareSeconds: median(bare), figures: last!.figures, stateBytes: last!.stateBytes };
}
