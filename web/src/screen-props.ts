import type { SessionView } from "./api";

// What the registry (routes.tsx) hands every screen. It lives apart from the registry so screens
// never import it: registration runs one way, routes -> screens.
export type PanelRef = SessionView["panels"][number];
export interface ScreenProps {
  panel: PanelRef;
  params: Record<string, string>;
}
