import { useEffect, useState, type FormEvent } from "react";
import { admin } from "../api";
import type { AudienceEstimate, AudienceEstimateRequest, CampaignChecks, CampaignPreview } from "../../../src/domain/answers";
import { ErrorNote, Field, formatTime, Loading, useSubmit } from "../ui";

type Audience = AudienceEstimateRequest["audience"];

/**
 * How many contacts the audience reaches, asked a moment after the last change (the stale
 * answer dropped); nothing is asked until a list or segment is chosen.
 */
export function AudienceEstimateNote({ panelId, audience }: { panelId: string; audience: Audience }) {
  const [state, setState] = useState<{ estimate?: AudienceEstimate; error?: string }>({});
  const key = JSON.stringify(audience);
  const chosen = (audience.lists?.length ?? 0) + (audience.segments?.length ?? 0) > 0;
  useEffect(() => {
    if (!chosen) return setState({});
    let live = true;
    const timer = setTimeout(() => {
      const body: AudienceEstimateRequest = { audience };
      admin<AudienceEstimate>("POST", panelId, "/campaigns/audience-estimate", body).then(
        (estimate) => live && setState({ estimate }),
        (failure: unknown) => live && setState({ error: failure instanceof Error ? failure.message : String(failure) }),
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [panelId, key]);
  if (!chosen) return null;
  const { estimate, error } = state;
  return (
    <p className="muted" role="status" aria-live="polite">
      {error ? (
        `Audience size unknown: ${error}`
      ) : !estimate ? (
        "Counting the audience…"
      ) : estimate.exact ? (
        <>
          Reaches <strong>{estimate.count.toLocaleString()}</strong> contacts now.
        </>
      ) : (
        <>
          Reaches about <strong>{estimate.count.toLocaleString()}</strong> contacts (an estimate: more than {estimate.exact_up_to.toLocaleString()}, from list and segment counts as of{" "}
          {formatTime(estimate.counted_at)}, less exclusions and suppressed addresses).
        </>
      )}
    </p>
  );
}

const WIDTHS = { desktop: { label: "Desktop", px: null }, mobile: { label: "Phone (390 px)", px: 390 } } as const;
type Width = keyof typeof WIDTHS;

/** The letters of an A/B test's variants (none without a test). */
export const variantLetters = (count: number) => Array.from({ length: count }, (_, i) => String.fromCharCode(65 + i));

/**
 * Which copy to use: the campaign's own, or one A/B test variant's (issue 43, item 5); shown
 * only where the campaign has a test.
 */
export function VariantChoice({ variants, value, onChange, label, error }: { variants: number; value: string; onChange: (variant: string) => void; label: string; error?: string }) {
  if (variants === 0) return null;
  return (
    <Field label={label} hint="An A/B test variant's subject and body, as its recipients get them" error={error}>
      {(props) => (
        <select {...props} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">The campaign's own</option>
          {variantLetters(variants).map((letter) => (
            <option key={letter} value={letter}>
              Variant {letter}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** The campaign (or one A/B variant) as a chosen contact gets it, at desktop or phone width, in a sandbox that runs nothing. */
export function CampaignPreviewSection({ panelId, campaignId, refresh, variants = 0 }: { panelId: string; campaignId: string; refresh: unknown; variants?: number }) {
  const [contact, setContact] = useState("");
  const [asked, setAsked] = useState<string | null>(null);
  const [variant, setVariant] = useState("");
  const [width, setWidth] = useState<Width>("desktop");
  const [preview, setPreview] = useState<CampaignPreview>();
  const { failure, fields, busy, run } = useSubmit();
  const path = `/campaigns/${encodeURIComponent(campaignId)}/preview`;
  // A variant the test no longer has (it was removed or cut down) falls back to the campaign's own.
  const chosen = variantLetters(variants).includes(variant) ? variant : "";
  useEffect(() => {
    const query = new URLSearchParams({ ...(asked ? { contact: asked } : {}), ...(chosen ? { variant: chosen } : {}) }).toString();
    void run(async () => setPreview(await admin<CampaignPreview>("GET", panelId, query ? `${path}?${query}` : path)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [panelId, path, asked, chosen, refresh]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setAsked(contact.trim() || null);
  };
  const px = WIDTHS[width].px;
  return (
    <section className="card" aria-label="Preview">
      <form onSubmit={submit} className="row" aria-label="Preview as a contact">
        <Field label="Preview as contact" hint="The contact's key; empty: every merge tag shows its fallback" error={fields.contact}>
          {(props) => <input {...props} value={contact} onChange={(e) => setContact(e.target.value)} />}
        </Field>
        <VariantChoice variants={variants} value={chosen} onChange={setVariant} label="Preview variant" error={fields.variant} />
        <button type="submit" className="secondary" disabled={busy}>
          Show
        </button>
        <div role="group" aria-label="Preview width" className="row">
          {(Object.keys(WIDTHS) as Width[]).map((w) => (
            <button key={w} type="button" className="secondary" aria-pressed={width === w} onClick={() => setWidth(w)}>
              {WIDTHS[w].label}
            </button>
          ))}
        </div>
      </form>
      <ErrorNote error={fields.contact || fields.variant ? undefined : failure} />
      {!preview ? (
        <Loading />
      ) : (
        <>
          <p>
            <strong>{preview.subject}</strong> {chosen ? `(variant ${chosen}) ` : ""}
            {preview.contact ? `as ${preview.contact}` : "with every fallback"}
          </p>
          {/* An empty sandbox: the body's scripts, forms and links cannot run or reach the panel. */}
          <iframe title="Preview of the campaign" sandbox="" srcDoc={preview.html} className="preview" style={px ? { width: `${px}px`, maxWidth: "100%" } : undefined} />
        </>
      )}
    </section>
  );
}

const KIND_LABELS: Record<CampaignChecks["warnings"][number]["kind"], string> = {
  merge_tag: "Merge tag",
  unsubscribe: "Unsubscribe",
  image_alt: "Image",
  link: "Link",
};

/** The checks before scheduling, run on request (they try the body's links). */
export function CampaignChecksSection({ panelId, campaignId }: { panelId: string; campaignId: string }) {
  const [checks, setChecks] = useState<CampaignChecks>();
  const { failure, busy, run } = useSubmit();
  const check = () => run(async () => setChecks(await admin<CampaignChecks>("POST", panelId, `/campaigns/${encodeURIComponent(campaignId)}/checks`)));
  return (
    <section className="card" aria-label="Checks before scheduling">
      <button type="button" className="secondary" disabled={busy} onClick={() => void check()}>
        {busy ? "Checking…" : "Check the campaign"}
      </button>
      <ErrorNote error={failure} />
      {checks &&
        (checks.warnings.length === 0 ? (
          <p role="status" className="ok">
            No problems found: merge tags known, an unsubscribe link, alt text on images, every link answers.
          </p>
        ) : (
          <div role="status">
            <p>
              {checks.warnings.length} {checks.warnings.length === 1 ? "warning" : "warnings"} before scheduling:
            </p>
            <ul aria-label="Warnings">
              {checks.warnings.map((w, i) => (
                <li key={i}>
                  <strong>{KIND_LABELS[w.kind]}</strong>
                  {w.subject && <code> {w.subject}</code>}: {w.message}
                </li>
              ))}
            </ul>
          </div>
        ))}
    </section>
  );
}
