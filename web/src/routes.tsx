import type { ReactNode } from "react";
import type { Work } from "../../src/domain/permissions";
import type { ScreenProps } from "./screen-props";
import { Audit } from "./screens/audit";
import { Campaign } from "./screens/campaign";
import { Campaigns } from "./screens/campaigns";
import { Channels } from "./screens/channels";
import { Contact, Contacts } from "./screens/contacts";
import { Data } from "./screens/data";
import { EmailTemplates } from "./screens/email-templates";
import { Forms } from "./screens/forms";
import { Home } from "./screens/home";
import { Journey, Journeys, NewJourney } from "./screens/journeys";
import { ListMembers, Lists } from "./screens/lists";
import { SenderDomains } from "./screens/sender-domains";
import { Segment } from "./screens/segment";
import { Segments } from "./screens/segments";
import { Settings } from "./screens/settings";
import { Team } from "./screens/team";
import { Topics } from "./screens/topics";
import { Account } from "./screens/two-factor";
import { Users } from "./screens/users";
import { Webhook, Webhooks } from "./screens/webhooks";

/**
 * Screens by path under /panels/:panel, first match wins. The one place screens are registered:
 * this module imports the screens and no screen imports it (check:boundaries fails on a cycle).
 * A third entry names the work (src/domain/permissions) a role needs to open the screen at all:
 * the menu leaves it out for other roles, and its URL shows them a "needs the … role" page.
 */
export const SCREENS: [string, (props: ScreenProps) => ReactNode, Work?][] = [
  ["/", (props) => <Home {...props} />],
  ["/settings", (props) => <Settings {...props} />],
  ["/contacts", (props) => <Contacts {...props} />],
  ["/contacts/:key", (props) => <Contact {...props} />],
  ["/lists", (props) => <Lists {...props} />],
  ["/lists/:id", (props) => <ListMembers {...props} />],
  ["/data", (props) => <Data {...props} />],
  ["/users", (props) => <Users {...props} />],
  ["/team", (props) => <Team {...props} />, "team"],
  ["/account", (props) => <Account {...props} />],
  ["/audit", (props) => <Audit {...props} />, "audit"],
  ["/segments", (props) => <Segments {...props} />],
  ["/segments/:id", (props) => <Segment {...props} />],
  ["/campaigns", (props) => <Campaigns {...props} />],
  ["/campaigns/:id", (props) => <Campaign {...props} />],
  ["/email-templates", (props) => <EmailTemplates {...props} />],
  ["/forms", (props) => <Forms {...props} />],
  ["/topics", (props) => <Topics {...props} />],
  ["/journeys", (props) => <Journeys {...props} />],
  ["/journeys/new", (props) => <NewJourney {...props} />, "journeys"],
  ["/journeys/:id", (props) => <Journey {...props} />],
  ["/webhooks", (props) => <Webhooks {...props} />],
  ["/sender-domains", (props) => <SenderDomains {...props} />],
  ["/channels", (props) => <Channels {...props} />],
  ["/webhooks/:id", (props) => <Webhook {...props} />],
];
