import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { ChangeOperator, InvitationView, InviteOperator, OperatorView } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, Field, formatTime, Screen, unplacedFailure, useLoad, useSubmit } from "../ui";
import { useConfirm } from "../components/confirm-dialog";
import type { ScreenProps } from "../screen-props";

const ROLES: Record<OperatorView["role"], string> = {
  owner: "Owner: everything, including the team and settings",
  marketer: "Marketer: contacts, lists, campaigns, journeys, webhooks",
  viewer: "Viewer: reads only",
};

/**
 * Invites a teammate by email: they get a link to choose their own password (the owner never
 * learns it). The admin API's create-with-password stays for the ADMIN_TOKEN's first owner.
 */
function InviteForm({ panelId, onInvited }: { panelId: string; onInvited: () => void }) {
  const empty: InviteOperator = { email: "", role: "marketer" };
  const [draft, setDraft] = useState(empty);
  const [sent, setSent] = useState<string>();
  const { failure, fields, run } = useSubmit();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSent(undefined);
    const invited = await run(() => admin<InvitationView>("POST", panelId, "/invitations", draft));
    if (invited) {
      setSent(`Invitation mailed to ${draft.email}; the link works once, for 7 days.`);
      setDraft(empty);
      onInvited();
    }
  };

  return (
    <form className="card" onSubmit={submit} aria-label="Invite a teammate">
      <ErrorNote error={unplacedFailure(failure, fields, ["email", "role"])} />
      <div className="row">
        <Field label="Teammate's email" error={fields.email}>
          {(props) => <input {...props} type="email" required value={draft.email} onChange={(e) => setDraft((d) => ({ ...d, email: e.target.value }))} />}
        </Field>
        <Field label="Role" error={fields.role}>
          {(props) => (
            <select {...props} value={draft.role} onChange={(e) => setDraft((d) => ({ ...d, role: e.target.value as InviteOperator["role"] }))}>
              {Object.entries(ROLES).map(([role, label]) => (
                <option key={role} value={role}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <p className="muted">They get a mail with a link to choose their own password; it works once, for 7 days.</p>
      <button type="submit">Invite</button>
      {sent && <p role="status">{sent}</p>}
    </form>
  );
}

function Invitations({ panel }: { panel: ScreenProps["panel"] }) {
  const { data, error, reload } = useLoad(() => admin<{ invitations: InvitationView[] }>("GET", panel.id, "/invitations"), [panel.id]);
  const { failure, run: act } = useSubmit(reload);
  const [confirm, confirmation] = useConfirm();
  const revoke = async (invitation: InvitationView) => {
    const revoking = await confirm({
      title: "Revoke this invitation?",
      message: `The link mailed to ${invitation.email} stops working at once; inviting them again sends a new one.`,
      confirmLabel: "Revoke invitation",
    });
    if (revoking) await act(() => admin("DELETE", panel.id, `/invitations/${encodeURIComponent(invitation.id)}`));
  };
  return (
    <>
      <InviteForm panelId={panel.id} onInvited={reload} />
      <ErrorNote error={error ?? failure} />
      {data && data.invitations.length > 0 && (
        <DataTable
          caption="Invitations waiting for an answer"
          rows={data.invitations}
          rowKey={(invitation) => invitation.id}
          columns={[
            { header: "Email", cell: (invitation) => invitation.email, sortBy: (invitation) => invitation.email },
            { header: "Role", cell: (invitation) => invitation.role, sortBy: (invitation) => invitation.role },
            { header: "Sent", cell: (invitation) => formatTime(invitation.sent_at), sortBy: (invitation) => invitation.sent_at },
            {
              header: "Link",
              cell: (invitation) => (invitation.expired ? <span className="badge">expired</span> : `works until ${formatTime(invitation.expires_at)}`),
            },
            {
              header: "Actions",
              cell: (invitation) => (
                <>
                  <button
                    type="button"
                    className="secondary"
                    aria-label={`Resend the invitation to ${invitation.email}`}
                    onClick={() => void act(() => admin("POST", panel.id, `/invitations/${encodeURIComponent(invitation.id)}/resend`))}
                  >
                    Resend
                  </button>{" "}
                  <button type="button" className="danger" aria-label={`Revoke the invitation of ${invitation.email}`} onClick={() => void revoke(invitation)}>
                    Revoke
                  </button>
                </>
              ),
            },
          ]}
        />
      )}
      {confirmation}
    </>
  );
}

/** The panel's operators (people who sign in to this panel) and their roles; owners only. */
export function Team({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<{ operators: OperatorView[] }>("GET", panel.id, "/operators"), [panel.id]);
  const { failure, run: act } = useSubmit(reload);
  const [confirm, confirmation] = useConfirm();
  const changeRole = async (operator: OperatorView, role: ChangeOperator["role"]) => {
    const change = await confirm({
      title: "Change this operator's role?",
      message: `${operator.email} becomes a ${role} in ${panel.name} (${ROLES[role].split(": ")[1]}) from their next request on.`,
      confirmLabel: `Make ${role}`,
    });
    if (change) await act(() => admin("PATCH", panel.id, `/operators/${encodeURIComponent(operator.id)}`, { role } satisfies ChangeOperator));
  };
  const remove = async (operator: OperatorView) => {
    const removing = await confirm({
      title: "Remove this operator?",
      message: `${operator.email} loses access to ${panel.name} at once and is signed out of it; adding them back needs a new invitation.`,
      confirmLabel: "Remove operator",
    });
    if (removing) await act(() => admin("DELETE", panel.id, `/operators/${encodeURIComponent(operator.id)}`));
  };

  return (
    <Screen title="Team">
      <p className="muted">Operators sign in to this panel with their email and password. Only owners see and change the team.</p>
      <ErrorNote error={error ?? failure} />
      <Invitations panel={panel} />
      <DataTable
        caption="Operators of the panel"
        rows={data?.operators}
        rowKey={(operator) => operator.id}
        columns={[
          {
            header: "Email",
            cell: (operator) => (
              <>
                {operator.email}
                {operator.disabled && <span className="badge">disabled</span>}
              </>
            ),
            sortBy: (operator) => operator.email,
          },
          { header: "Name", cell: (operator) => operator.name ?? "—", sortBy: (operator) => operator.name },
          {
            header: "Role",
            cell: (operator) => (
              <select
                aria-label={`Role of ${operator.email}`}
                value={operator.role}
                // The select shows the saved role until the change is confirmed and saved.
                onChange={(e) => void changeRole(operator, e.target.value as ChangeOperator["role"])}
              >
                {Object.keys(ROLES).map((role) => (
                  <option key={role} value={role}>
                    {role}
                  </option>
                ))}
              </select>
            ),
            sortBy: (operator) => operator.role,
          },
          { header: "Added", cell: (operator) => formatTime(operator.created_at), sortBy: (operator) => operator.created_at },
          {
            header: "Actions",
            cell: (operator) => (
              <button
                type="button"
                className="danger"
                aria-label={`Remove ${operator.email} from the panel`}
                onClick={() => void remove(operator)}
              >
                Remove
              </button>
            ),
          },
        ]}
      />
      {confirmation}
    </Screen>
  );
}
