import { describe, expect, it } from "vitest";
import {
  activityEventSchema,
  fastActivityEvent,
  fastUploadEvent,
  parseActivityEvent,
  parseUploadEvent,
  uploadEventSchema,
  withAliases,
} from "../../src/api/activity";

// The batch and upload endpoints read a common well-formed event without zod
// (src/api/activity.ts, "Fast paths"). Here both readings run on many inputs, well-formed ones
// and near misses: where the fast path answers, its output is the schema's to the key order;
// where it does not, the endpoint's parse is the schema's, refusals and their words included.

/** Values a member may be given: each kind the schemas accept, and the near misses beside them. */
const VALUES: unknown[] = [
  null,
  undefined,
  "",
  "   ",
  "abc",
  " 12 ",
  "7",
  "0",
  "-3",
  "1.5",
  "000000000000001",
  "1234567890123456",
  "2024-01-31T18:05:00",
  "240131180500",
  0,
  7,
  -1,
  1.5,
  1e15,
  1e21,
  240131180500,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  [],
  [{ "s^name": "Kettle" }],
  [1, "two", null],
  [, 1], // a hole
  {},
  { "s^name": "Kettle", "i^prid": 12, price: 29.5 },
  { nested: { deep: [1, { x: null }] }, "2": "numeric key", a: undefined },
  JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}'),
  { constructor: 1, a: 1 },
  { [Symbol("s")]: 1, a: 1 },
  Object.assign(Object.create(null), { a: 1 }),
  new Date(0),
  new Map([["a", 1]]),
  "x".repeat(101),
  `  ${"y".repeat(100)}  `,
];

const MEMBERS = ["cts", "timestamp", "identity", "uniqueid", "activity_source", "activity_params", "asset_id", "guid"];

/** Well-formed events of the batch endpoint, as clients send them. */
const BATCH_EVENTS: Array<Record<string, unknown>> = [
  { activityid: 3, identity: "ada@example.com" },
  { activityid: "3", uniqueid: "visitor-1", activity_params: { "s^name": "Kettle", "i^prid": 1234, "f^price": 29.5 } },
  {
    activityid: " 12 ",
    identity: 919876543210,
    uniqueid: "c1f4-visitor-77",
    cts: "240131180500",
    activity_source: "web",
    activity_params: [{ name: "Kettle" }],
    asset_id: "ast_web_1",
    guid: "g-1",
    extra: "an unknown member",
    nested_unknown: { activity_params: { x: 1 } },
  },
  { activityid: 5, identity: "", uniqueid: null, cts: null, timestamp: 1706724300, activity_source: null, activity_params: null, asset_id: 42, guid: null },
  { actvityid: 9, identity: "b@example.com" },
  { activityid: null, actvityid: "9", identity: "b@example.com" },
  { activityid: 4, actvityid: "junk", identity: "c@example.com" },
  JSON.parse('{"activityid":"3","identity":"d@example.com","activity_params":{"s^name":"K","i^prid":1},"timestamp":"2024-01-31T18:05:00+05:30"}'),
];

/** Well-formed events of the upload endpoint. */
const UPLOAD_EVENTS: Array<Record<string, unknown>> = [
  { activity_name: "add_to_cart", identity: "ada@example.com" },
  { activity_name: "  Add_To_Cart ", uniqueid: "v-1", activity_params: { amount: 10.5, prid: "p1" }, timestamp: "2024-01-31T18:05:00", extra: true },
  { activity_name: "x".repeat(100), identity: 12345, asset_id: "ast_app_1", guid: "g", activity_source: "app", cts: 240131180500 },
];

/** Each well-formed event, and every one-member change of it: each member given each value, or removed. */
function variants(events: Array<Record<string, unknown>>, members: string[]): unknown[] {
  const out: unknown[] = [];
  for (const event of events) {
    out.push(event);
    for (const member of [...members, "unknown_member"]) {
      const { [member]: _removed, ...without } = event;
      out.push(without);
      for (const value of VALUES) out.push({ ...event, [member]: value });
    }
  }
  return out;
}

/** Items that are not events at all. */
const NOT_EVENTS: unknown[] = [null, undefined, "event", 3, true, [], [{ activityid: 3, identity: "a@example.com" }], new Date(0), Object.assign(Object.create(null), { activityid: 3, identity: "a@example.com", activity_name: "x" })];

class EventLike {
  activityid = 3;
  activity_name = "add_to_cart";
  identity = "a@example.com";
}

function expectSameAsSchema<T>(
  items: unknown[],
  schema: { safeParse(value: unknown): { success: boolean; data?: T; error?: { issues: unknown[] } } },
  fast: (item: unknown) => T | undefined,
  parse: (item: unknown) => { success: boolean; data?: T; error?: { issues: unknown[] } },
  prepare: (item: unknown) => unknown = (item) => item,
): number {
  let fastOnes = 0;
  for (const item of items) {
    const input = prepare(item);
    const expected = schema.safeParse(input);
    const got = fast(input);
    if (got !== undefined) {
      fastOnes++;
      expect(expected.success, JSON.stringify(item)).toBe(true);
      expect(got).toStrictEqual(expected.data);
      // The same members in the same order, nested ones included.
      expect(JSON.stringify(got)).toBe(JSON.stringify(expected.data));
      expect(Object.keys(got as object)).toEqual(Object.keys(expected.data as object));
    }
    // What the endpoint uses: the fast answer or, failing it, the schema's own, refusal included.
    const answer = parse(item);
    expect(answer.success).toBe(expected.success);
    if (expected.success) expect(answer.data).toStrictEqual(expected.data);
    else expect(answer.error!.issues).toEqual(expected.error!.issues);
  }
  return fastOnes;
}

describe("activity event fast path", () => {
  it("outputs what activityEventSchema outputs, or leaves the event to it", () => {
    const items = [...variants(BATCH_EVENTS, ["activityid", "actvityid", ...MEMBERS]), ...NOT_EVENTS, new EventLike()];
    const fastOnes = expectSameAsSchema(items, activityEventSchema, fastActivityEvent, parseActivityEvent, withAliases);
    expect(fastOnes).toBeGreaterThan(items.length / 3);
  });

  it("outputs what uploadEventSchema outputs, or leaves the event to it", () => {
    const items = [...variants(UPLOAD_EVENTS, ["activity_name", ...MEMBERS]), ...NOT_EVENTS, new EventLike()];
    const fastOnes = expectSameAsSchema(items, uploadEventSchema, fastUploadEvent, parseUploadEvent);
    expect(fastOnes).toBeGreaterThan(items.length / 3);
  });

  it("takes the common events itself", () => {
    for (const event of BATCH_EVENTS) expect(fastActivityEvent(withAliases(event)), JSON.stringify(event)).toBeDefined();
    for (const event of UPLOAD_EVENTS) expect(fastUploadEvent(event), JSON.stringify(event)).toBeDefined();
  });

  it("copies activity_params as the schema does (one level deep)", () => {
    const params = { "s^name": "Kettle" };
    const list = [{ name: "Kettle" }];
    expect(fastActivityEvent({ activityid: 1, identity: "a", activity_params: params })!.activity_params).not.toBe(params);
    expect(fastUploadEvent({ activity_name: "a", identity: "a", activity_params: list })!.activity_params).not.toBe(list);
  });
});
