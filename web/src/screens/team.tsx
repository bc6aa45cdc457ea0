import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { AddOperator, ChangeOperator, OperatorView } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, Field, formatTime, Screen, useLoad, useSubmit } from "../ui";
import { useConfirm } from "../components/confirm-dialog";
import type { ScreenProps } from "../screen-props";

const ROLES: Record<OperatorView["role"], string> = {
  owner: "Owner: everything, including the team and settings",
  marketer: "Marketer: contacts, lists, campaigns, journeys, webhooks",
  viewer: "Viewer: reads only",
};

function AddForm({ panelId, onAdded }: { panelId: string; onAdded: () => void }) {
  const empty: AddOperator = { email: "", name: "", role: "marketer", password: "" };
  const [draft, setDraft] = useState(empty);
  const { failure, fields, run } = useSubmit();
  const set = <K extends keyof AddOperator>(key: K, value: AddOperator[K]) => setDraft((d) => ({ ...d, [key]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: AddOperator = { email: draft.email, role: draft.role, ...(draft.name ? { name: draft.name } : {}), ...(draft.password ? { password: draft.password } : {}) };
    if (await run(() => admin<OperatorView>("POST", panelId, "/operators", body))) {
      setDraft(empty);
      onAdded();
    }
  };

  return (
    <form className="card" onSubmit={submit} aria-label="Add an operator">
      <ErrorNote error={failure} />
      <div className="row">
        <Field label="Operator email" error={fields.email}>
          {(props) => <input {...props} type="email" required value={draft.email} onChange={(e) => set("email", e.target.value)} />}
        </Field>
        <Field label="Name (optional)" error={fields.name}>
          {(props) => <input {...props} value={draft.name ?? ""} onChange={(e) => set("name", e.target.value)} />}
        </Field>
        <Field label="Role" error={fields.role}>
          {(props) => (
            <select {...props} value={draft.role} onChange={(e) => set("role", e.target.value as AddOperator["role"])}>
              {Object.entries(ROLES).map(([role, label]) => (
                <option key={role} value={role}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Password" hint="Needed only for someone without an operator account yet (10 characters or more)" error={fields.password}>
          {(props) => <input {...props} type="password" autoComplete="new-password" value={draft.password ?? ""} onChange={(e) => set("password", e.target.value)} />}
        </Field>
      </div>
      <button type="submit">Add operator</button>
    </form>
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
      message: `${operator.email} loses access to ${panel.name} at once and is signed out of it; adding them back needs the Add operator form again.`,
      confirmLabel: "Remove operator",
    });
    if (removing) await act(() => admin("DELETE", panel.id, `/operators/${encodeURIComponent(operator.id)}`));
  };

  return (
    <Screen title="Team">
      <p className="muted">Operators sign in to this panel with their email and password. Only owners see and change the team.</p>
      <ErrorNote error={error ?? failure} />
      <AddForm panelId={panel.id} onAdded={reload} />
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
