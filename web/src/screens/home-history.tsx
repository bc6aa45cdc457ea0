import { useMemo } from "react";
import { admin } from "../api";
import { TimeChart } from "../charts/time-chart";
import type { PanelHistory } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, Loading, useLoad } from "../ui";

const COLORS = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4b5563"];

type Series = { label: string; values: Array<number | null> };

/** `custom_activity:Added to cart` reads as `Added to cart`; other channels keep theirs (`email: open`). */
function eventLabel(name: string): string {
  const [channel, ...rest] = name.split(":");
  const event = rest.join(":");
  return channel === "custom_activity" ? event : `${channel}: ${event}`;
}

const dayText = (day: number) => new Date(day).toISOString().slice(0, 10);

/** One chart of daily series, with the same figures in a table for screen readers. */
function DailyChart({ title, days, series }: { title: string; days: number[]; series: Series[] }) {
  const times = useMemo(() => days.map((day) => day / 1000), [days]);
  const lines = useMemo(() => series.map((s, i) => ({ label: s.label, values: s.values, color: COLORS[i % COLORS.length]! })), [series]);
  return (
    <section aria-label={title}>
      <h3>{title}</h3>
      {series.length === 0 ? (
        <p className="muted">Nothing counted in these days.</p>
      ) : (
        <>
          <TimeChart label={title} times={times} series={lines} />
          <details>
            <summary>The figures per day</summary>
            <DataTable
              caption={`${title}, per day (UTC)`}
              rows={days}
              rowKey={(day) => day}
              columns={[
                { header: "Day", cell: (day) => dayText(day) },
                ...series.map((s) => ({ header: s.label, cell: (day: number) => s.values[days.indexOf(day)] ?? "—" })),
              ]}
            />
          </details>
        </>
      )}
    </section>
  );
}

/** The Home screen's last 30 days: contacts over time, events per day by activity, sends per day by channel. */
export function HomeHistory({ panelId }: { panelId: string }) {
  const { data, error } = useLoad(() => admin<PanelHistory>("GET", panelId, "/overview/history?days=30"), [panelId]);
  const contacts = useMemo<Series[]>(() => (data ? [{ label: "Contacts", values: data.contacts }] : []), [data]);
  const events = useMemo<Series[]>(() => (data ? data.events.map((e) => ({ label: eventLabel(e.name), values: e.counts })) : []), [data]);
  const sends = useMemo<Series[]>(() => (data ? data.sends.map((s) => ({ label: s.channel, values: s.counts })) : []), [data]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <>
      <h2>The last 30 days</h2>
      <DailyChart title="Contacts over time" days={data.days} series={contacts} />
      <DailyChart title="Events per day by activity" days={data.days} series={events} />
      <DailyChart title="Sends per day by channel" days={data.days} series={sends} />
    </>
  );
}
