// Loaded on demand (TimeChart imports it dynamically), so uPlot stays out of the first screen's JavaScript.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface TimeSeries {
  label: string;
  /** null: no figure for that time (a gap in the line). */
  values: Array<number | null>;
  color: string;
}

/** Draws a line chart of `series` over `times` (epoch seconds) into `element`; returns its disposal. */
export function drawTimeChart(element: HTMLElement, times: number[], series: readonly TimeSeries[], width: number): () => void {
  const chart = new uPlot(
    {
      width,
      height: 220,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: times.length < 50 } }))],
      // Counts start at 0.
      scales: { y: { range: (_chart, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { size: 50 }],
    },
    // A single point alone stretches the time axis over years: an empty hour either side of it.
    times.length === 1
      ? [[times[0]! - 3600, times[0]!, times[0]! + 3600], ...series.map((s) => [null, s.values[0] ?? null, null])]
      : [times, ...series.map((s) => s.values)],
    element,
  );
  return () => chart.destroy();
}
