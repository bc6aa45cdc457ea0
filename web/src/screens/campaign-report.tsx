import { Fragment, useMemo, useState } from "react";
import { admin } from "../api";
import { TimeChart } from "../charts/time-chart";
import type { CampaignRecipientsPage, CampaignReport, RecipientFilter } from "../../../src/domain/answers";
import { Empty, ErrorNote, formatTime, Loading, Pager, useLoad } from "../ui";

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
        <table>
          <caption className="visually-hidden">Opens and clicks per hour</caption>
          <thead>
            <tr>
              <th scope="col">Hour</th>
              <th scope="col">Sent</th>
              <th scope="col">Opens</th>
              <th scope="col">Clicks</th>
            </tr>
          </thead>
          <tbody>
            {hours.map((h) => (
              <tr key={h.hour}>
                <td>{formatTime(new Date(h.hour).toISOString())}</td>
                <td>{h.sent}</td>
                <td>{h.opens}</td>
                <td>{h.clicks}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </>
  );
}

function TopLinks({ links }: { links: CampaignReport["top_links"] }) {
  if (links.length === 0) return <Empty title="No clicks yet">The links recipients click show here, most clicked first.</Empty>;
  return (
    <table>
      <caption className="visually-hidden">Most clicked links</caption>
      <thead>
        <tr>
          <th scope="col">Link</th>
          <th scope="col">Clicks</th>
        </tr>
      </thead>
      <tbody>
        {links.map((link) => (
          <tr key={link.url}>
            <td className="wrap">{link.url}</td>
            <td>{link.clicks}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Recipients({ panelId, campaignId, filter }: { panelId: string; campaignId: string; filter: RecipientFilter }) {
  // Cursors of the pages seen, so Previous goes back without the API paging backwards.
  const [cursors, setCursors] = useState<number[]>([0]);
  const after = cursors.at(-1)!;
  const base = `/campaigns/${encodeURIComponent(campaignId)}/recipients?filter=${filter}`;
  const { data, error } = useLoad(() => admin<CampaignRecipientsPage>("GET", panelId, `${base}&after=${after}&limit=50`), [panelId, base, after]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <>
      <p>
        <a href={`/admin/v1/panels/${encodeURIComponent(panelId)}${base}&format=csv`} download>
          Download these recipients as CSV
        </a>
      </p>
      {data.recipients.length === 0 ? (
        <Empty title="Nobody here">No recipient of this campaign is {FILTERS[filter].toLowerCase()}.</Empty>
      ) : (
        <table>
          <caption className="visually-hidden">Recipients: {FILTERS[filter]}</caption>
          <thead>
            <tr>
              <th scope="col">Contact</th>
              <th scope="col">Status</th>
              <th scope="col">Opens</th>
              <th scope="col">Clicks</th>
              <th scope="col">First open</th>
              <th scope="col">First click</th>
            </tr>
          </thead>
          <tbody>
            {data.recipients.map((r) => (
              <tr key={r.contact_id}>
                <td>{r.key ?? r.address ?? `#${r.contact_id}`}</td>
                <td>
                  {r.status}
                  {r.bounced_at && ", bounced"}
                  {r.unsubscribed_at && ", unsubscribed"}
                </td>
                <td>{r.opens}</td>
                <td>{r.clicks}</td>
                <td>{formatTime(r.first_open_at)}</td>
                <td>{formatTime(r.first_click_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager
        label="Recipient pages"
        onPrevious={cursors.length > 1 ? () => setCursors(cursors.slice(0, -1)) : undefined}
        onNext={data.next !== null ? () => setCursors([...cursors, data.next!]) : undefined}
      />
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
