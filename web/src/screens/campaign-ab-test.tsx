import { useEffect, useState, type FormEvent } from "react";
import { admin } from "../api";
import type { AbMetric, AbTestAnswer, AbTestResults, SetAbTest } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, Field, formatTime, useLoad, useSubmit, unplacedFailure } from "../ui";

// A campaign's A/B test (issue 43, item 7): 2 to 4 variants of the subject and/or body, the
// share of the audience that tests them, the metric and the wait before the winner goes to the rest.

const METRICS: Record<AbMetric, string> = { unique_opens: "Unique opens", unique_clicks: "Unique clicks" };
const LABELS = ["A", "B", "C", "D"];

interface VariantDraft {
  subject: string;
  html: string;
}

const blank = (): VariantDraft => ({ subject: "", html: "" });

/** The A/B test of a draft or scheduled campaign: set, change or remove it. */
export function AbTestForm({ panelId, campaignId, onSaved }: { panelId: string; campaignId: string; onSaved: () => void }) {
  const path = `/campaigns/${encodeURIComponent(campaignId)}/ab-test`;
  const current = useLoad(() => admin<AbTestAnswer>("GET", panelId, path), [panelId, path]);
  const [variants, setVariants] = useState<VariantDraft[]>([blank(), blank()]);
  const [share, setShare] = useState("20");
  const [metric, setMetric] = useState<AbMetric>("unique_opens");
  const [wait, setWait] = useState("240");
  const [saved, setSaved] = useState<string>();
  const { failure, fields, busy, run } = useSubmit(onSaved);
  useEffect(() => {
    const test = current.data?.ab_test;
    if (!test) return;
    setVariants(test.variants.map((v) => ({ subject: v.subject ?? "", html: v.html ?? "" })));
    setShare(String(test.test_share));
    setMetric(test.metric);
    setWait(String(test.wait_minutes));
  }, [current.data]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(undefined);
    const body: SetAbTest = {
      variants: variants.map((v) => ({ ...(v.subject.trim() ? { subject: v.subject } : {}), ...(v.html.trim() ? { html: v.html } : {}) })),
      test_share: Number(share),
      metric,
      wait_minutes: Number(wait),
    };
    if (await run(() => admin("PUT", panelId, path, body))) {
      setSaved("A/B test saved.");
      current.reload();
    }
  };
  const remove = async () => {
    setSaved(undefined);
    if (await run(() => admin("DELETE", panelId, path))) {
      setVariants([blank(), blank()]);
      setSaved("A/B test removed: everyone gets the campaign's own subject and body.");
      current.reload();
    }
  };
  const change = (index: number, key: keyof VariantDraft, value: string) => setVariants((vs) => vs.map((v, i) => (i === index ? { ...v, [key]: value } : v)));

  return (
    <details>
      <summary>A/B test{current.data?.ab_test ? ` (${current.data.ab_test.variants.length} variants)` : ""}</summary>
      <form onSubmit={submit} aria-label="A/B test">
        <p className="muted">Each variant changes the subject, the body or both; left empty, the campaign's own is used.</p>
        {variants.map((variant, index) => (
          <fieldset key={index}>
            <legend>Variant {LABELS[index]}</legend>
            <Field label={`Variant ${LABELS[index]} subject`} error={fields[`variants.${index}.subject`]}>
              {(props) => <input {...props} value={variant.subject} onChange={(e) => change(index, "subject", e.target.value)} />}
            </Field>
            <Field label={`Variant ${LABELS[index]} HTML body`} error={fields[`variants.${index}.html`]}>
              {(props) => <textarea {...props} rows={4} value={variant.html} onChange={(e) => change(index, "html", e.target.value)} />}
            </Field>
          </fieldset>
        ))}
        {fields.variants && <p className="error">{fields.variants}</p>}
        <div className="row">
          {variants.length < 4 && (
            <button type="button" onClick={() => setVariants((vs) => [...vs, blank()])}>
              Add variant
            </button>
          )}
          {variants.length > 2 && (
            <button type="button" onClick={() => setVariants((vs) => vs.slice(0, -1))}>
              Remove variant {LABELS[variants.length - 1]}
            </button>
          )}
        </div>
        <div className="row">
          <Field label="Test share (%)" hint="1 to 50: this share of the audience gets the variants, split evenly" error={fields.test_share}>
            {(props) => <input {...props} type="number" min={1} max={50} required value={share} onChange={(e) => setShare(e.target.value)} />}
          </Field>
          <Field label="Winner by" error={fields.metric}>
            {(props) => (
              <select {...props} value={metric} onChange={(e) => setMetric(e.target.value as AbMetric)}>
                {Object.entries(METRICS).map(([value, label]) => (
                  <option key={value} value={value}>
                    {label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Wait (minutes)" hint="After sending starts, before the winner goes to the rest" error={fields.wait_minutes}>
            {(props) => <input {...props} type="number" min={1} max={10080} required value={wait} onChange={(e) => setWait(e.target.value)} />}
          </Field>
        </div>
        <div className="row">
          <button type="submit" disabled={busy}>
            Save A/B test
          </button>
          {current.data?.ab_test && (
            <button type="button" disabled={busy} onClick={remove}>
              Remove A/B test
            </button>
          )}
        </div>
        {saved && (
          <p role="status" className="ok">
            {saved}
          </p>
        )}
        <ErrorNote error={unplacedFailure(failure, fields, (field) => ["test_share", "metric", "wait_minutes"].includes(field) || /^variants\.\d+\.(subject|html)$/.test(field)) ?? current.error} />
      </form>
    </details>
  );
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** The report's A/B test: each variant's test recipients side by side, the rest, and which won. */
export function AbTestResultsSection({ results }: { results: AbTestResults }) {
  const rows = [...results.variants.map((v) => ({ key: v.label, name: `Variant ${v.label}${v.winner ? " (winner)" : ""}`, subject: v.subject, figures: v })), { key: "rest", name: `The rest${results.rest.variant ? ` (got ${results.rest.variant})` : ""}`, subject: "", figures: results.rest }];
  return (
    <>
      <h3>A/B test</h3>
      <p>
        {results.winner
          ? `Variant ${results.winner} won by ${METRICS[results.metric].toLowerCase()} and went to the rest.`
          : results.decide_at
            ? `The winner by ${METRICS[results.metric].toLowerCase()} is picked at ${formatTime(results.decide_at)}; ${results.test_share}% of the audience tests the variants until then.`
            : `${results.test_share}% of the audience tests the variants; the winner by ${METRICS[results.metric].toLowerCase()} goes to the rest ${results.wait_minutes} minutes after sending starts.`}
      </p>
      <DataTable
        caption="Variants side by side"
        rows={rows}
        rowKey={(r) => r.key}
        columns={[
          { header: "Variant", cell: (r) => r.name },
          { header: "Subject", cell: (r) => r.subject },
          { header: "Recipients", cell: (r) => r.figures.recipients },
          { header: "Sent", cell: (r) => r.figures.sent },
          { header: "Unique opens", cell: (r) => r.figures.unique_opens },
          { header: "Open rate", cell: (r) => percent(r.figures.open_rate) },
          { header: "Unique clicks", cell: (r) => r.figures.unique_clicks },
          { header: "Click rate", cell: (r) => percent(r.figures.click_rate) },
        ]}
      />
    </>
  );
}
