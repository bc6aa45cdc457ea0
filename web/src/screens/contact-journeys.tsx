import { admin } from "../api";
import { Link } from "../router";
import type { ContactJourneys } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, formatTime, Loading, useLoad } from "../ui";

/** The contact's path through journeys: each journey entered, newest first, with the steps it ran and what each came to. */
export function ContactJourneyPaths({ panelId, contactKey }: { panelId: string; contactKey: string }) {
  const { data, error } = useLoad(() => admin<ContactJourneys>("GET", panelId, `/contacts/${encodeURIComponent(contactKey)}/journeys`), [panelId, contactKey]);
  const base = `/panels/${encodeURIComponent(panelId)}`;
  return (
    <section aria-labelledby="contact-journey-paths">
      <h2 id="contact-journey-paths">Journeys</h2>
      <ErrorNote error={error} />
      {!data ? (
        !error && <Loading />
      ) : data.journeys.length === 0 ? (
        <p className="muted">In no journey yet.</p>
      ) : (
        data.journeys.map((journey) => (
          <DataTable
            key={`${journey.journey_id}-${journey.entered_at}`}
            caption={
              <>
                <Link href={`${base}/journeys/${encodeURIComponent(journey.journey_id)}`}>{journey.name}</Link>: entered {formatTime(journey.entered_at)},{" "}
                {journey.status === "active" ? "still in it" : `${journey.status} ${formatTime(journey.ended_at)}`}
              </>
            }
            captionShown
            rows={journey.steps}
            rowKey={(step) => step.step_id}
            columns={[
              { header: "Step", rowHeader: true, cell: (step) => step.step_id },
              { header: "Type", cell: (step) => step.type ?? "—" },
              { header: "At", cell: (step) => formatTime(step.at) },
              { header: "Result", cell: (step) => step.result ?? "—" },
            ]}
          />
        ))
      )}
    </section>
  );
}
