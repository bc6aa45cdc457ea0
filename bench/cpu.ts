// CPU seconds used so far by the processes this one started (workerd under Miniflare), read
// from /proc. Under a shared machine, CPU time per request is steadier than requests per
// second: it does not shrink when other processes take the cores. Linux only; NaN elsewhere.
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

export function childCpuSeconds(): number {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry));
  } catch {
    return Number.NaN;
  }
  const parentOf = new Map<number, number>();
  const ticksOf = new Map<number, number>();
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name: state, ppid, ..., utime (14th), stime (15th).
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parentOf.set(Number(entry), Number(fields[1]));
      ticksOf.set(Number(entry), Number(fields[11]) + Number(fields[12]));
    } catch {
      // the process ended meanwhile
    }
  }
  let ticks = 0;
  for (const [pid, own] of ticksOf) {
    let parent = parentOf.get(pid);
    while (parent !== undefined && parent !== process.pid && parent > 1) parent = parentOf.get(parent);
    if (parent === process.pid) ticks += own;
  }
  return ticks / TICKS_PER_SECOND;
}
