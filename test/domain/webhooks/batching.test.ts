import { describe, expect, it } from "vitest";
import { batchBody, decideCut, envelopeBytes, type PendingEvent } from "../../../src/domain/webhooks/batching";

const limits = { maxEvents: 3, maxBytes: 1_000, windowMs: 5_000 };
const pending = (sizes: number[], at = 0): PendingEvent[] => sizes.map((bytes, i) => ({ seq: i + 1, bytes, enqueuedAt: at + i }));

describe("decideCut", () => {
  it("has nothing to do without events", () => {
    expect(decideCut([], 0, "P", limits)).toEqual({ kind: "empty" });
  });

  it("waits for the window while a batch is not full", () => {
    expect(decideCut(pending([10, 10]), 1_000, "P", limits)).toEqual({ kind: "wait", until: 5_000 });
    expect(decideCut(pending([10, 10]), 5_000, "P", limits)).toEqual({ kind: "cut", seqs: [1, 2] });
  });

  it("cuts at once at the event limit", () => {
    expect(decideCut(pending([10, 10, 10, 10]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1, 2, 3] });
  });

  it("cuts at once when the next event would pass the byte limit", () => {
    const room = 1_000 - envelopeBytes("P");
    expect(decideCut(pending([room - 400, 397, 1]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1, 2] });
    // Exactly full (with the separator between the two) still fits.
    expect(decideCut(pending([room - 403, 400]), 0, "P", limits)).toEqual({ kind: "wait", until: 5_000 });
    expect(decideCut(pending([room - 402, 400]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1] });
  });
});

describe("decideCut with replays", () => {
  const tagged = (tags: Array<string | null>): PendingEvent[] => tags.map((replay, i) => ({ seq: i + 1, bytes: 10, enqueuedAt: i, replay }));

  it("never puts a replay's events and live ones, or two replays', in one batch, and cuts at the change at once", () => {
    expect(decideCut(tagged([null, "r1", "r1"]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1] });
    expect(decideCut(tagged(["r1", "r1", null]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1, 2] });
    expect(decideCut(tagged(["r1", "r2"]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1] });
    // A replay's events alone batch as live ones do.
    expect(decideCut(tagged(["r1", "r1"]), 0, "P", limits)).toEqual({ kind: "wait", until: 5_000 });
    expect(decideCut(tagged(["r1", "r1", "r1", "r1"]), 0, "P", limits)).toEqual({ kind: "cut", seqs: [1, 2, 3] });
  });
});

describe("batchBody", () => {
  it("is data= and the URL-encoded {panel: [events]} whose length the cut predicted", () => {
    const events = [{ a: 1, s: "é &=+" }, { b: [2] }].map((e) => encodeURIComponent(JSON.stringify(e)));
    const body = batchBody('Shop "One"', events);
    expect(JSON.parse(new URLSearchParams(body).get("data")!)).toEqual({ 'Shop "One"': [{ a: 1, s: "é &=+" }, { b: [2] }] });
    expect(body.length).toBe(envelopeBytes('Shop "One"') + events[0]!.length + 3 + events[1]!.length);
  });
});
