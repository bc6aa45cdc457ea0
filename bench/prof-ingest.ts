import { childCpuSeconds } from "./cpu.ts";
import { adminCall, createBenchPanel, startRuntime } from "./lib.ts";
const runtime = await startRuntime(0, {}, process.env.NO_CONSUMER === "1");
try {
  const panel = await createBenchPanel(runtime.origin);
  const activity = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/activities`, { name: "add_to_cart", params: { name: "string", prid: "integer", price: "float", prqt: "integer" } });
  const event = (i: number) => ({ activityid: activity.activityid, identity: `user${i % 5000}@example.com`, uniqueid: `visitor-${i % 5000}`, cts: "240131180500", activity_source: "web", activity_params: { "s^name": "Kettle", "i^prid": 1000 + (i % 100), "f^price": 29.5, "i^prqt": 1 + (i % 3) } });
  let seq = 0;
  const post = async () => {
    const start = seq; seq += 1000;
    const r = await fetch(`${runtime.origin}/v1/activity/batch/${panel.clientId}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(Array.from({ length: 1000 }, (_, j) => event(start + j))) });
    await r.arrayBuffer(); if (!r.ok) throw new Error(String(r.status));
  };
  for (let i = 0; i < 10; i++) await post();
  const n = Number(process.env.N ?? 40);
  const cpu0 = childCpuSeconds(); const t0 = performance.now();
  for (let i = 0; i < n; i++) await post();
  const t1 = performance.now(); const cpu1 = childCpuSeconds();
  console.log(`sequential: ${(n * 1000 / ((t1 - t0) / 1000)).toFixed(0)} events/s, cpu ${(1000 * (cpu1 - cpu0) / n).toFixed(1)} ms per 1000 events`);
} finally { await runtime.stop(); }
