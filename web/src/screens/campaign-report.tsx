import { Fragment, useMemo, useState } from "react";
import { admin } from "../api";
import { TimeChart } from "../charts/time-chart";
import type { CampaignRecipientsPage, CampaignReport, RecipientFilter } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { AbTestResultsSection } from "./campaign-ab-test";
import { MessageCopyView, useCopyToggle } from "../components/message-copy";
import { Empty, ErrorNote, formatTime, Loading, useLoad } from "../ui";

const NUMBERS: [keyof CampaignReport["counters"], string, RecipientFilter][] = [
  ["recipients", "Recipients", "all"],
  ["queued", "Queued", "queued"],
  ["sent", "Sent", "sent"],
  ["failed", "Failed", "failed"],
  ["skipped", "Skipped (suppressed or unsubscribed)", "skipped"],
  ["bounces", "Bounces", "bounced"],
  ["opens", "Opens", "opened"],
  ["unique_opens", "Unique opens", "opened"],
  ["clicks", "Clicks", "clicked"],
  ["unique_clicks", "Unique clicks", "clicked"],
  ["unsubscribes", "Unsubscribes", "unsubscribed"],
];

const RATES: [keyof CampaignReport["rates"], string][] = [
  ["delivered", "Delivered (sent, not bounced)"],
  ["unique_open", "Open rate"],
  ["click_through", "Click-through rate"],
  ["click_to_open", "Click-to-open rate"],
  ["bounce", "Bounce rate"],
  ["unsubscribe", "Unsubscribe rate"],
];

const FILTERS: Record<RecipientFilter, string> = {
  all: "Everyone",
  queued: "Queued",
  sent: "Sent",
  failed: "Failed",
  skipped: "Skipped",
  opened: "Opened",
  clicked: "Clicked",
  bounced: "Bounced",
  unsubscribed: "Unsubscribed",
};

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

function OpensAndClicks({ hours }: { hours: CampaignReport["hours"] }) {
  const times = useMemo(() => hours.map((h) => h.hour / 1000), [hours]);
  const series = useMemo(
    () => [
      { label: "Opens", values: hours.map((h) => h.opens), color: "#2563eb" },
      { label: "Clicks", values: hours.map((h) => h.clicks), color: "#d97706" },
    ],
    [hours],
  );
  if (hours.length === 0) return <Empty title="Nothing yet">Opens and clicks show here per hour once the campaign is sent.</Empty>;
  return (
    <>
      <TimeChart label="Opens and clicks per hour" times={times} series={series} />
      <details>
        <summary>The figures per hour</summary>
        <DataTable
          caption="Opens and clicks per hour"
          rows={hours}
          rowKey={(h) => h.hour}
          columns={[
            { header: "Hour", cell: (h) => formatTime(new Date(h.hour).toISOString()) },
            { header: "Sent", cell: (h) => h.sent },
            { header: "Opens", cell: (h) => h.opens },
            { header: "Clicks", cell: (h) => h.clicks },
          ]}
        />
      </details>
    </>
  );
}

function TopLinks({ links }: { links: CampaignReport["top_links"] }) {
  return (
    <DataTable
      caption="Most clicked links"
      rows={links}
      rowKey={(link) => link.url}
      empty={<Empty title="No clicks yet">The links recipients click show here, most clicked first.</Empty>}
      columns={[
        { header: "Link", cellProps: () => ({ className: "wrap" }), cell: (link) => link.url, sortBy: (link) => link.url },
        { header: "Clicks", cell: (link) => link.clicks, sortBy: (link) => link.clicks },
      ]}
    />
  );
}

function Recipients({ panelId, campaignId, filter }: { panelId: string; campaignId: string; filter: RecipientFilter }) {
  // Cursors of the pages seen, so Previous goes back without the API paging backwards.
  const [cursors, setCursors] = useState<number[]>([0]);
  const after = cursors.at(-1)!;
  const base = `/campaigns/${encodeURIComponent(campaignId)}/recipients?filter=${filter}`;
  const { data, error } = useLoad(() => admin<CampaignRecipientsPage>("GET", panelId, `${base}&after=${after}&limit=50`), [panelId, base, after]);
  const { open, toggle } = useCopyToggle();
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <>
      <p>
        <a href={`/admin/v1/panels/${encodeURIComponent(panelId)}${base}&format=csv`} download>
          Download these recipients as CSV
        </a>
      </p>
      <DataTable
        caption={`Recipients: ${FILTERS[filter]}`}
        rows={data.recipients}
        rowKey={(r) => r.contact_id}
        empty={<Empty title="Nobody here">No recipient of this campaign is {FILTERS[filter].toLowerCase()}.</Empty>}
        columns={[
          { header: "Contact", cell: (r) => r.key ?? r.address ?? `#${r.contact_id}` },
          {
            header: "Status",
            cell: (r) => (
              <>
                {r.status}
                {r.error && `: ${r.error}`}
                {r.bounced_at && ", bounced"}
                {r.unsubscribed_at && ", unsubscribed"}
              </>
            ),
          },
          { header: "Opens", cell: (r) => r.opens },
          { header: "Clicks", cell: (r) => r.clicks },
          { header: "First open", cell: (r) => formatTime(r.first_open_at) },
          { header: "First click", cell: (r) => formatTime(r.first_click_at) },
          { header: "Subject", cell: (r) => r.subject },
          { header: "Copy", cell: (r) => (r.status === "sent" ? toggle(r.message_id, `sent to ${r.key ?? r.address ?? r.contact_id}`) : "") },
        ]}
        pagerLabel="Recipient pages"
        serverPages={{
          onPrevious: cursors.length > 1 ? () => setCursors(cursors.slice(0, -1)) : undefined,
          onNext: data.next !== null ? () => setCursors([...cursors, data.next!]) : undefined,
        }}
      />
      {open && <MessageCopyView panelId={panelId} messageId={open} />}
    </>
  );
}

/** What a campaign did, from the report's aggregates: numbers, rates, opens and clicks over time, links, and who is behind each number. */
export function CampaignReportSection({ panelId, campaignId, refresh }: { panelId: string; campaignId: string; refresh: number }) {
  const { data, error } = useLoad(() => admin<CampaignReport>("GET", panelId, `/campaigns/${encodeURIComponent(campaignId)}/report`), [panelId, campaignId, refresh]);
  const [filter, setFilter] = useState<RecipientFilter>("all");
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <>
      <h2>Report</h2>
      <dl className="facts" aria-label="Counters">
        {NUMBERS.map(([key, label, behind]) => (
          <Fragment key={key}>
            <dt>{label}</dt>
            <dd>
              <button type="button" className="link" aria-label={`${label}: ${data.counters[key]}; show the recipients`} onClick={() => setFilter(behind)}>
                {data.counters[key]}
              </button>
            </dd>
          </Fragment>
        ))}
      </dl>
      <dl className="facts" aria-label="Rates">
        {RATES.map(([key, label]) => (
          <Fragment key={key}>
            <dt>{label}</dt>
            <dd>{percent(data.rates[key])}</dd>
          </Fragment>
        ))}
      </dl>
      {data.ab_test && <AbTestResultsSection results={data.ab_test} />}
      <h3>Opens and clicks over time</h3>
      <OpensAndClicks hours={data.hours} />
      <h3>Top links</h3>
      <TopLinks links={data.top_links} />
      <h3>Recipients</h3>
      <label>
        Show{" "}
        <select value={filter} onChange={(e) => setFilter(e.target.value as RecipientFilter)}>
          {Object.entries(FILTERS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <Recipients key={filter} panelId={panelId} campaignId={campaignId} filter={filter} />
    </>
  );
}
