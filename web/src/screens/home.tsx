import { admin } from "../api";
import { ErrorNote, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

interface PanelView {
  id: string;
  name: string;
  region: string;
  api_mode: boolean;
  timezone: string;
}

export function Home({ panel }: ScreenProps) {
  const { data, error } = useLoad(() => admin<PanelView>("GET", panel.id, ""), [panel.id]);
  return (
    <Screen title={panel.name}>
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : (
        <dl className="facts">
          <dt>Region</dt>
          <dd>{data.region}</dd>
          <dt>Time zone</dt>
          <dd>{data.timezone}</dd>
          <dt>API mode</dt>
          <dd>{data.api_mode ? "on" : "off"}</dd>
        </dl>
      )}
    </Screen>
  );
}
