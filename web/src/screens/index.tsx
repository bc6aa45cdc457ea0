import type { ReactNode } from "react";
import type { SessionView } from "../api";
import { Home } from "./home";
import { Settings } from "./settings";
import { Users } from "./users";

export type PanelRef = SessionView["panels"][number];
export interface ScreenProps {
  panel: PanelRef;
  params: Record<string, string>;
}

/** Screens by path under /panels/:panel, first match wins. */
export const SCREENS: [string, (props: ScreenProps) => ReactNode][] = [
  ["/", (props) => <Home {...props} />],
  ["/settings", (props) => <Settings {...props} />],
  ["/users", (props) => <Users {...props} />],
];
