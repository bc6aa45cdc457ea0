import { lazy, Suspense, useEffect, useRef, useState, type ReactNode } from "react";
import { ApiFailure, request, useSessionToken, type SessionView } from "./api";
import { Link, match, navigate, useLocation } from "./router";
import { ResetPassword } from "./screens/password-reset";
import { InvitationPage } from "./screens/invitation";
import { SignIn } from "./screens/sign-in";
import { SCREENS } from "./routes";
import { Loading } from "./ui";
import { may, NeedsRolePage } from "./components/role";
import type { PanelRef } from "./screen-props";

type State = { kind: "loading" } | { kind: "signed-out" } | { kind: "signed-in"; session: SessionView };

// The deployment admin's operations page: its own chunk, loaded only there (admin token, no session).
const Ops = lazy(() => import("./screens/ops"));

const RESET_PAGE = "/reset-password";
const OPS_PAGE = "/ops";
const INVITATION_PAGE = "/invitation";

export function App() {
  useLocation();
  const [state, setState] = useState<State>({ kind: "loading" });
  const signedOut = () => setState({ kind: "signed-out" });
  const signedIn = (session: SessionView) => {
    useSessionToken(session.csrf_token, signedOut);
    setState({ kind: "signed-in", session });
  };

  useEffect(() => {
    request<SessionView>("GET", "/auth/v1/session").then(signedIn, (failure: unknown) => {
      if (failure instanceof ApiFailure && failure.status === 401) signedOut();
      else setState({ kind: "signed-out" });
    });
  }, []);

  if (location.pathname === OPS_PAGE) {
    return (
      <Suspense fallback={<Loading />}>
        <Ops />
      </Suspense>
    );
  }
  // A reset link opens this page signed in or not; setting the password ends every session.
  if (location.pathname === RESET_PAGE) return <ResetPassword onDone={signedOut} />;
  // An invitation link opens this page signed in or not; accepting signs the invitee in.
  if (location.pathname === INVITATION_PAGE) return <InvitationPage onSignedIn={signedIn} />;
  if (state.kind === "loading") return <Loading />;
  if (state.kind === "signed-out") return <SignIn onSignedIn={signedIn} />;
  return <Shell session={state.session} onSignedOut={signedOut} />;
}

/** Side menu: path under the panel and label; a screen some roles may not open (SCREENS) is left out for them. */
const NAV: [string, string][] = [
  ["", "Home"],
  ["/contacts", "Contacts"],
  ["/lists", "Lists"],
  ["/forms", "Signup forms"],
  ["/topics", "Topics"],
  ["/data", "Attributes and activities"],
  ["/segments", "Segments"],
  ["/campaigns", "Campaigns"],
  ["/email-templates", "Email templates"],
  ["/journeys", "Journeys"],
  ["/webhooks", "Webhooks"],
  ["/sender-domains", "Sender domains"],
  ["/channels", "Channels"],
  ["/users", "Users and API keys"],
  ["/team", "Team"],
  ["/audit", "Audit log"],
  ["/settings", "Settings"],
  ["/account", "Your account"],
];

/** Whether the panel's role may open the screen at `suffix` (its SCREENS entry names no work it lacks). */
function opens(panel: PanelRef, suffix: string): boolean {
  const needs = SCREENS.find(([pattern]) => pattern === (suffix || "/"))?.[2];
  return !needs || may(panel, needs);
}

function Shell({ session, onSignedOut }: { session: SessionView; onSignedOut: () => void }) {
  const { path } = useLocation();
  const panelId = /^\/panels\/([^/]+)/.exec(path)?.[1];
  const panel = session.panels.find((p) => p.id === (panelId && decodeURIComponent(panelId)));

  useEffect(() => {
    if (!panel && session.panels[0]) navigate(`/panels/${encodeURIComponent(session.panels[0].id)}`, { replace: true });
  }, [panel, session.panels]);

  const menu = useMenu(path);

  const signOut = async () => {
    await request("POST", "/auth/v1/sign-out").catch(() => undefined);
    navigate("/", { replace: true });
    onSignedOut();
  };

  if (!panel) {
    return (
      <main className="center">
        <h1>No panel yet</h1>
        <p>You are signed in as {session.operator.email}, but no panel has given you a role. Ask a panel's owner to add you.</p>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  }

  const base = `/panels/${encodeURIComponent(panel.id)}`;
  const rest = path.slice(base.length) || "/";
  let screen: ReactNode = <p>Nothing here. Pick a screen from the menu.</p>;
  for (const [pattern, render, needs] of SCREENS) {
    const params = match(pattern, rest);
    if (params) {
      const label = NAV.find(([suffix]) => suffix === pattern)?.[1] ?? "This screen";
      screen = needs && !may(panel, needs) ? <NeedsRolePage panel={panel} work={needs} screen={label} /> : render({ panel, params });
      break;
    }
  }

  return (
    <div className="layout">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <button type="button" className="secondary menu-button" aria-expanded={menu.open} aria-controls="screens-menu" ref={menu.button} onClick={menu.toggle}>
          Menu
        </button>
        <span className="brand">Panel</span>
        <label className="switcher">
          <span className="visually-hidden">Panel</span>
          <select value={panel.id} onChange={(e) => navigate(`/panels/${encodeURIComponent(e.target.value)}`)}>
            {session.panels.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <span className="who">
          {session.operator.email} <span className="badge">{panel.role}</span>
        </span>
        <button type="button" className="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav id="screens-menu" className={menu.open ? "side open" : "side"} aria-label="Screens" ref={menu.nav}>
        <ul>
          {NAV.filter(([suffix]) => opens(panel, suffix)).map(([suffix, label]) => {
            const href = base + suffix;
            const current = suffix === "" ? rest === "/" : rest.startsWith(suffix);
            return (
              <li key={suffix}>
                <Link href={href} aria-current={current ? "page" : undefined}>
                  {label}
                </Link>
              </li>
            );
          })}
        </ul>
      </nav>
      <main id="main" className="content">
        {screen}
      </main>
    </div>
  );
}

/**
 * The screens' menu below desktop width (styles.css folds it behind the Menu button there):
 * opening moves focus to its first link, Escape folds it and gives focus back to the button,
 * and following a link folds it so the screen shows.
 */
function useMenu(path: string) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const nav = useRef<HTMLElement>(null);
  useEffect(() => setOpen(false), [path]);
  useEffect(() => {
    if (!open) return;
    nav.current?.querySelector("a")?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      setOpen(false);
      button.current?.focus();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);
  return { open, button, nav, toggle: () => setOpen(!open) };
}
