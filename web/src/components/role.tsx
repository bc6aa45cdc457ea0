import type { ReactNode } from "react";
import { mayDo, NEEDS, type Work } from "../../../src/domain/permissions";
import { Link } from "../router";
import type { PanelRef } from "../screen-props";
import { Empty, Screen } from "../ui";

// What the signed-in role may do, read from the table the admin routes declare their roles from
// (src/domain/permissions), so a button is never offered that the server would refuse.

export function may(panel: PanelRef, work: Work): boolean {
  return mayDo(panel.role, work);
}

/** "needs the marketer role": the reason a locked control gives. */
export function needsRole(work: Work): string {
  return `needs the ${NEEDS[work]} role`;
}

/**
 * Props that lock a button the role may not use: disabled, with the reason as its title. Spread
 * them after the button's own `disabled`, so an allowed button keeps its own.
 */
export function lockFor(panel: PanelRef, work: Work): { disabled?: true; title?: string } {
  return may(panel, work) ? {} : { disabled: true, title: `This ${needsRole(work)}` };
}

/** A visible sentence saying what the role cannot do here and why, or nothing when it can. */
export function RoleNote({ panel, work, what }: { panel: PanelRef; work: Work; what: string }) {
  if (may(panel, work)) return null;
  return (
    <p className="note role-note">
      {what} {needsRole(work)}; you are a {panel.role} in this panel.
    </p>
  );
}

/** `children` (a form) when the role may do `work`; otherwise the note saying who may. */
export function IfAllowed({ panel, work, what, children }: { panel: PanelRef; work: Work; what: string; children: ReactNode }) {
  return may(panel, work) ? <>{children}</> : <RoleNote panel={panel} work={work} what={what} />;
}

/**
 * An empty list's message: how to make the first one (`children`) for a role that may do `work`;
 * for one that may not, only that there is none yet, with `otherwise` where there is more to say
 * that asks nothing of the reader (the screen's role sentence says who may).
 */
export function EmptyFor({ panel, work, title, otherwise, children }: { panel: PanelRef; work: Work; title: string; otherwise?: ReactNode; children: ReactNode }) {
  return <Empty title={title}>{may(panel, work) ? children : otherwise}</Empty>;
}

/** The page a screen's URL shows to a role that may not open it, instead of a form that cannot load. */
export function NeedsRolePage({ panel, work, screen }: { panel: PanelRef; work: Work; screen: string }) {
  return (
    <Screen title={`This screen needs the ${NEEDS[work]} role`}>
      <p>
        {screen} is open to the panel's {NEEDS[work]}s{NEEDS[work] === "owner" ? "" : " and owners"}; you are a {panel.role} in {panel.name}. Ask an owner of the panel if you need it.
      </p>
      <p>
        <Link href={`/panels/${encodeURIComponent(panel.id)}`}>Back to Home</Link>
      </p>
    </Screen>
  );
}
