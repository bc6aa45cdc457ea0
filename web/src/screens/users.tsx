import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { CreateUser, PatchUser, UserView } from "../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { CopyButton, ErrorNote, Field, formatTime, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, lockFor, may, RoleNote } from "../components/role";
import type { ScreenProps } from "../screen-props";

/** A key is shown once: right after creation or rotation, never again. */
function ShownOnce({ email, apiKey, onDone }: { email: string; apiKey: string; onDone: () => void }) {
  return (
    <div className="secret" role="status">
      <p>
        API key for <strong>{email}</strong>. Copy it now: it is not shown again.
      </p>
      <p>
        <code data-testid="api-key">{apiKey}</code>
      </p>
      <CopyButton text={apiKey} label="Copy API key" />{" "}
      <button type="button" className="secondary" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

export function Users({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<{ users: UserView[] }>("GET", panel.id, "/users"), [panel.id]);
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const { failure, fields, run: act } = useSubmit(reload);
  const [shown, setShown] = useState<{ email: string; apiKey: string }>();
  const [confirm, confirmation] = useConfirm();

  const create = async (event: FormEvent) => {
    event.preventDefault();
    const body: CreateUser = { email, ...(name ? { name } : {}) };
    await act(async () => {
      const user = await admin<UserView & { api_key: string }>("POST", panel.id, "/users", body);
      setShown({ email: user.email, apiKey: user.api_key });
      setEmail("");
      setName("");
    });
  };

  return (
    <Screen title="Users and API keys">
      <p className="muted">Each user has one API key for the apiv2 API. Keys are stored only as hashes: a key is shown once, when created or rotated.</p>
      <ErrorNote error={error ?? unplacedFailure(failure, fields, ["email", "name"])} />
      {shown && <ShownOnce email={shown.email} apiKey={shown.apiKey} onDone={() => setShown(undefined)} />}
      <RoleNote panel={panel} work="apiKeys" what="Creating users, rotating their keys and disabling them" />
      {may(panel, "apiKeys") && (
        <form className="card row" onSubmit={create} aria-label="New user">
          <Field label="User email" error={fields.email}>
            {(props) => <input {...props} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />}
          </Field>
          <Field label="User name (optional)" error={fields.name}>
            {(props) => <input {...props} value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <button type="submit">Create user</button>
        </form>
      )}
      <DataTable
        caption="Users of the panel"
        rows={data?.users}
        rowKey={(user) => user.id}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="apiKeys" title="No users yet">
            Create a user above to get an API key; then turn API mode on in Settings so the key is accepted.
          </EmptyFor>
        }
        columns={[
          { header: "Email", cell: (user) => user.email, sortBy: (user) => user.email },
          { header: "Name", cell: (user) => user.name ?? "—", sortBy: (user) => user.name },
          { header: "State", cell: (user) => (user.disabled ? "disabled" : "active"), sortBy: (user) => (user.disabled ? "disabled" : "active") },
          { header: "Created", cell: (user) => formatTime(user.created_at), sortBy: (user) => user.created_at },
          {
            header: "Actions",
            cellProps: () => ({ className: "row" }),
            cell: (user) => (
              <>
                <button
                  type="button"
                  className="secondary"
                  aria-label={`Rotate key of ${user.email}`}
                  {...lockFor(panel, "apiKeys")}
                  onClick={async () => {
                    const rotate = await confirm({
                      title: "Rotate this API key?",
                      message: `The current API key of ${user.email} stops working at once; every client using it is refused until it is given the new key, which is shown only once.`,
                      confirmLabel: "Rotate key",
                    });
                    if (rotate)
                      await act(async () => {
                      const rotated = await admin<{ api_key: string }>("POST", panel.id, `/users/${encodeURIComponent(user.id)}/api-key`);
                        setShown({ email: user.email, apiKey: rotated.api_key });
                      });
                  }}
                >
                  Rotate key
                </button>
                <button
                  type="button"
                  className="danger"
                  aria-label={`${user.disabled ? "Enable" : "Disable"} ${user.email}`}
                  {...lockFor(panel, "apiKeys")}
                  onClick={() =>
                    act(async () => {
                      const change: PatchUser = { disabled: !user.disabled };
                      await admin("PATCH", panel.id, `/users/${encodeURIComponent(user.id)}`, change);
                    })
                  }
                >
                  {user.disabled ? "Enable" : "Disable"}
                </button>
              </>
            ),
          },
        ]}
      />
      {confirmation}
    </Screen>
  );
}
