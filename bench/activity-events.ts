// The activity events bench:activity and bench:profile send: one activity, 5,000 contacts each
// with its visitor id (most posts land on a contact that already exists).

/** The activity both benchmarks define. */
export const BENCH_ACTIVITY = { name: "add_to_cart", params: { name: "string", prid: "integer", price: "float", prqt: "integer" } };

/** Event `i` as the batch and single endpoints take it: numbered activity, prefixed parameters. */
export function benchEvent(activityid: number, i: number) {
  return {
    activityid,
    identity: `user${i % 5000}@example.com`,
    uniqueid: `visitor-${i % 5000}`,
    cts: "240131180500",
    activity_source: "web",
    activity_params: { "s^name": "Kettle", "i^prid": 1000 + (i % 100), "f^price": 29.5, "i^prqt": 1 + (i % 3) },
  };
}

/** The same event as Activity API v2 clients send it: named, unprefixed, an ISO timestamp. */
export function asUploadEvent(event: ReturnType<typeof benchEvent>) {
  const { activityid: _id, cts: _cts, activity_params: params, ...rest } = event;
  return {
    ...rest,
    activity_name: BENCH_ACTIVITY.name,
    timestamp: "2024-01-31T18:05:00+05:30",
    activity_params: Object.fromEntries(Object.entries(params).map(([key, value]) => [key.slice(2), value])),
  };
}
