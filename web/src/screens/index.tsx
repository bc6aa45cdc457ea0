import type { ReactNode } from "react";
import type { SessionView } from "../api";
import { Audit } from "./audit";
import { Campaign } from "./campaign";
import { Campaigns } from "./campaigns";
import { Channels } from "./channels";
import { Contact, Contacts } from "./contacts";
import { Data } from "./data";
import { Home } from "./home";
import { Journey, Journeys, NewJourney } from "./journeys";
import { ListMembers, Lists } from "./lists";
import { SenderDomains } from "./sender-domains";
import { Segment } from "./segment";
import { Segments } from "./segments";
import { Settings } from "./settings";
import { Team } from "./team";
import { Users } from "./users";
import { Webhook, Webhooks } from "./webhooks";

export type PanelRef = SessionView["panels"][number];
export interface ScreenProps {
  panel: PanelRef;
  params: Record<string, string>;
}

/** Screens by path under /panels/:panel, first match wins. */
export const SCREENS: [string, (props: ScreenProps) => ReactNode][] = [
  ["/", (props) => <Home {...props} />],
  ["/settings", (props) => <Settings {...props} />],
  ["/contacts", (props) => <Contacts {...props} />],
  ["/contacts/:key", (props) => <Contact {...props} />],
  ["/lists", (props) => <Lists {...props} />],
  ["/lists/:id", (props) => <ListMembers {...props} />],
  ["/data", (props) => <Data {...props} />],
  ["/users", (props) => <Users {...props} />],
  ["/team", (props) => <Team {...props} />],
  ["/audit", (props) => <Audit {...props} />],
  ["/segments", (props) => <Segments {...props} />],
  ["/segments/:id", (props) => <Segment {...props} />],
  ["/campaigns", (props) => <Campaigns {...props} />],
  ["/campaigns/:id", (props) => <Campaign {...props} />],
  ["/journeys", (props) => <Journeys {...props} />],
  ["/journeys/new", (props) => <NewJourney {...props} />],
  ["/journeys/:id", (props) => <Journey {...props} />],
  ["/webhooks", (props) => <Webhooks {...props} />],
  ["/sender-domains", (props) => <SenderDomains {...props} />],
  ["/channels", (props) => <Channels {...props} />],
  ["/webhooks/:id", (props) => <Webhook {...props} />],
];
