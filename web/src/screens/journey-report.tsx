import { useMemo, useState } from "react";
import { admin } from "../api";
import { TimeChart } from "../charts/time-chart";
import type { JourneyChannel, JourneyReport as Report } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, formatTime, Loading, useEvery, useLoad } from "../ui";

const PERIODS = [7, 30, 90] as const;
type PeriodDays = (typeof PERIODS)[number];

/** The report is read again this often while it is shown: its figures come from aggregates, so a read is cheap. */
const REFRESH_MS = 30_000;

const CHANNEL_NAMES: Record<JourneyChannel, string> = { email: "Email", sms: "SMS", apn: "App push", bpn: "Browser push" };

const CHANNEL_COLUMNS: Array<[keyof Report["channels"][JourneyChannel], string]> = [
  ["sent", "Sent"],
  ["failed", "Failed"],
  ["skipped", "Skipped"],
  ["delivered", "Delivered"],
  ["opens", "Opens"],
  ["opened", "Opened"],
  ["clicks", "Clicks"],
  ["clicked", "Clicked"],
  ["bounced", "Bounced"],
];

function PeriodPicker({ days, onChange }: { days: PeriodDays; onChange: (days: PeriodDays) => void }) {
  return (
    <fieldset className="row">
      <legend>Period</legend>
      {PERIODS.map((n) => (
        <label key={n}>
          <input type="radio" name="journey-report-period" checked={days === n} onChange={() => onChange(n)} /> Last {n} days
        </label>
      ))}
    </fieldset>
  );
}

function Funnel({ report }: { report: Report }) {
  const steps = Object.entries(report.steps);
  if (steps.length === 0) return <Empty title="No steps">The journey has no steps to count.</Empty>;
  return (
    <DataTable
      caption="Funnel per step"
      captionShown
      rows={steps}
      rowKey={([id]) => id}
      columns={[
        { header: "Step", rowHeader: true, cell: ([id]) => id },
        { header: "Type", cell: ([, step]) => step.type ?? "(no longer in the journey)" },
        { header: "Entered", cell: ([, step]) => step.entered },
        { header: "Waiting now", cell: ([, step]) => step.waiting },
        { header: "Passed", cell: ([, step]) => step.passed },
        { header: "Failed", cell: ([, step]) => step.failed },
        { header: "Timed out", cell: ([, step]) => step.timed_out },
      ]}
    />
  );
}

function Channels({ report }: { report: Report }) {
  const channels = (Object.keys(CHANNEL_NAMES) as JourneyChannel[]).filter((c) => Object.values(report.channels[c]).some((n) => n > 0));
  if (channels.length === 0) return <Empty title="No messages in this period">Messages the journey sends, and what recipients do with them, show here per channel.</Empty>;
  return (
    <DataTable
      caption="Messages per channel"
      captionShown
      rows={channels}
      rowKey={(channel) => channel}
      columns={[
        { header: "Channel", rowHeader: true, cell: (channel) => CHANNEL_NAMES[channel] },
        ...CHANNEL_COLUMNS.map(([key, label]) => ({ header: label, cell: (channel: JourneyChannel) => report.channels[channel][key] })),
      ]}
    />
  );
}

function WebhookDeliveries({ report }: { report: Report }) {
  const hours = report.webhooks;
  const times = useMemo(() => hours.map((h) => Date.parse(h.hour) / 1000), [hours]);
  const series = useMemo(
    () => [
      { label: "Delivered", values: hours.map((h) => h.delivered), color: "#16a34a" },
      { label: "Retried", values: hours.map((h) => h.retried), color: "#d97706" },
      { label: "Failed", values: hours.map((h) => h.failed), color: "#dc2626" },
    ],
    [hours],
  );
  if (report.webhook_ids.length === 0) return <p className="muted">The journey has no webhook step.</p>;
  if (hours.length === 0) return <Empty title="No deliveries in this period">Deliveries of this journey's webhook events show here per hour.</Empty>;
  return (
    <>
      <TimeChart label="Webhook event deliveries per hour: delivered, retried and failed" times={times} series={series} />
      <DataTable
        caption="Webhook event deliveries per hour (events)"
        captionShown
        rows={hours}
        rowKey={(h) => h.hour}
        columns={[
          { header: "Hour", rowHeader: true, cell: (h) => formatTime(h.hour) },
          { header: "Delivered", cell: (h) => h.delivered },
          { header: "Retried", cell: (h) => h.retried },
          { header: "Failed", cell: (h) => h.failed },
        ]}
      />
    </>
  );
}

/** What a journey did over the last 7, 30 or 90 days, from the report's aggregates; read again while shown. */
export function JourneyReport({ panelId, journeyId }: { panelId: string; journeyId: string }) {
  const [days, setDays] = useState<PeriodDays>(30);
  const { data, error, reload } = useLoad(() => {
    const from = new Date(Date.now() - days * 86_400_000).toISOString();
    return admin<Report>("GET", panelId, `/journeys/${encodeURIComponent(journeyId)}/report?from=${encodeURIComponent(from)}`);
  }, [panelId, journeyId, days]);
  useEvery(REFRESH_MS, reload);
  return (
    <section aria-labelledby="journey-report-title">
      <h2 id="journey-report-title">Report</h2>
      <PeriodPicker days={days} onChange={setDays} />
      <ErrorNote error={error} />
      {!data ? (
        !error && <Loading />
      ) : (
        <>
          <dl className="facts" aria-label="Contacts in the period">
            <dt>Entered</dt>
            <dd>{data.entered}</dd>
            <dt>Completed</dt>
            <dd>{data.completed}</dd>
            <dt>Exited (journey stopped or goal reached)</dt>
            <dd>{data.exited}</dd>
            <dt>Converted (reached the journey's goal)</dt>
            <dd>{data.converted}</dd>
          </dl>
          <h3>Funnel</h3>
          <Funnel report={data} />
          <h3>Messages</h3>
          <Channels report={data} />
          <h3>Webhook deliveries</h3>
          <WebhookDeliveries report={data} />
        </>
      )}
    </section>
  );
}
