import { admin } from "../api";
import { Link } from "../router";
import type { Overview } from "../../../src/domain/answers";
import { countFigure, ErrorNote, Loading, Screen, useLoad } from "../ui";
import { EmptyFor, may } from "../components/role";
import { HomeHistory } from "./home-history";
import type { ScreenProps } from "../screen-props";

export function Home({ panel }: ScreenProps) {
  const { data, error } = useLoad(() => admin<Overview>("GET", panel.id, "/overview"), [panel.id]);
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  const tiles: [string, number | string | undefined, string][] = [
    ["Contacts", data && countFigure(data.contacts, data.contacts_counted_at, data.contacts_at_least), "/contacts"],
    ["Lists", data?.lists, "/lists"],
    ["Events today", data?.events_today, "/contacts"],
    ["Sends today", data?.sends_today, "/campaigns"],
    ["Running journeys", data?.running_journeys, "/journeys"],
    ["Webhooks not operational", data?.webhooks_not_operational, "/webhooks"],
  ];
  return (
    <Screen title={panel.name}>
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : (
        <>
          {data.email.problem ? (
            <p className="error" role="alert">
              Email is not sent: {data.email.problem}.
            </p>
          ) : (
            !data.email.real_email && <p className="muted">Email goes to the outbox: each message is kept and listed, none is sent.</p>
          )}
          <div className="tiles">
            {tiles.map(([label, value, href]) => (
              <Link key={label} className="tile" href={base + href}>
                <strong>{value}</strong> {label}
              </Link>
            ))}
          </div>
          {data.contacts === 0 && (
            <div style={{ marginTop: "1rem" }}>
              <EmptyFor panel={panel} work="audience" title="No contacts yet" otherwise="Contacts arrive through the API and with files imported into lists.">
                Create a list and drop a CSV file on it in <Link href={`${base}/lists`}>Lists</Link>, or{" "}
                {/* API users and their keys are an owner's to make: a marketer is not sent there. */}
                {may(panel, "apiKeys") ? (
                  <>
                    create a user in <Link href={`${base}/users`}>Users and API keys</Link> and add contacts through the API.
                  </>
                ) : (
                  "add contacts through the API with an API user's key."
                )}
              </EmptyFor>
            </div>
          )}
          <HomeHistory panelId={panel.id} />
        </>
      )}
    </Screen>
  );
}
