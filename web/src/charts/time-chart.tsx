import { useEffect, useRef } from "react";
import type { TimeSeries } from "./draw";

/**
 * A line chart over time (uPlot, loaded when the first chart is shown). The same figures are
 * in a table beside it for screen readers; the chart itself is marked as an image with `label`.
 */
export function TimeChart({ label, times, series }: { label: string; times: number[]; series: readonly TimeSeries[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    let dispose: (() => void) | undefined;
    let cancelled = false;
    void import("./draw").then(({ drawTimeChart }) => {
      if (!cancelled) dispose = drawTimeChart(element, times, series, Math.max(320, element.clientWidth));
    });
    return () => {
      cancelled = true;
      dispose?.();
    };
  }, [times, series]);
  return <div ref={box} className="chart" role="img" aria-label={label} />;
}
