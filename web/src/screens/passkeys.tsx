import { useState, type FormEvent } from "react";
import type { PasskeyView } from "../../../src/domain/operators";
import { request, type SessionView } from "../api";
import { useConfirm } from "../components/confirm-dialog";
import { ErrorNote, Field, failureOf, Loading, useLoad, useSubmit } from "../ui";

// @simplewebauthn/browser is loaded only when a passkey ceremony starts, not with the panel.
const webauthn = () => import("@simplewebauthn/browser");

/** A browser's "not allowed" (the operator cancelled or timed out) reads as a plain sentence. */
function ceremonyFailure(failure: unknown): unknown {
  if (failure instanceof Error && failure.name === "NotAllowedError") return new Error("The passkey prompt was cancelled or timed out; try again.");
  return failure;
}

/** "Sign in with a passkey" on the sign-in screen: any passkey of this site, no email needed. */
export function PasskeySignIn({ onSignedIn }: { onSignedIn: (session: SessionView) => void }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const signIn = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const { startAuthentication } = await webauthn();
      const optionsJSON = await request<Parameters<typeof startAuthentication>[0]["optionsJSON"]>("POST", "/auth/v1/sign-in/passkey/options", {});
      const credential = await startAuthentication({ optionsJSON });
      onSignedIn(await request<SessionView>("POST", "/auth/v1/sign-in/passkey", { credential }));
    } catch (failure) {
      setError(failureOf(ceremonyFailure(failure)).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div>
      <button type="button" className="secondary" disabled={busy} onClick={() => void signIn()}>
        {busy ? "Waiting for your passkey…" : "Sign in with a passkey"}
      </button>
      <ErrorNote error={error} />
    </div>
  );
}

/** The account's passkeys: add one (named), list them, delete one after a confirmation. */
export function Passkeys() {
  const { data, error, reload } = useLoad(() => request<{ passkeys: PasskeyView[] }>("GET", "/auth/v1/passkeys"), []);
  const [name, setName] = useState("");
  const { failure, fields, busy, run } = useSubmit();
  const [confirm, confirmation] = useConfirm();

  const add = async (event: FormEvent) => {
    event.preventDefault();
    await run(async () => {
      const { startRegistration } = await webauthn();
      const optionsJSON = await request<Parameters<typeof startRegistration>[0]["optionsJSON"]>("POST", "/auth/v1/passkeys/options", {});
      let credential;
      try {
        credential = await startRegistration({ optionsJSON });
      } catch (failure) {
        throw ceremonyFailure(failure);
      }
      await request("POST", "/auth/v1/passkeys", { name: name.trim() || "Passkey", credential });
      setName("");
      reload();
    });
  };
  const remove = async (passkey: PasskeyView) => {
    const removing = await confirm({
      title: `Delete the passkey "${passkey.name}"?`,
      message: "It stops signing you in at once. The authenticator may still list it; remove it there too.",
      confirmLabel: "Delete passkey",
    });
    if (removing) await run(async () => (await request("DELETE", `/auth/v1/passkeys/${encodeURIComponent(passkey.id)}`), reload()));
  };

  return (
    <section aria-labelledby="passkeys-heading">
      <h2 id="passkeys-heading">Passkeys</h2>
      <p>A passkey signs you in with your device's fingerprint, face or PIN, with no password or code: it counts as two-factor sign-in.</p>
      <ErrorNote error={error ?? (fields.name ? undefined : failure)} />
      {!data ? (
        <Loading />
      ) : data.passkeys.length === 0 ? (
        <p className="muted">No passkeys yet.</p>
      ) : (
        <ul aria-label="Your passkeys">
          {data.passkeys.map((passkey) => (
            <li key={passkey.id}>
              <strong>{passkey.name}</strong> — added {new Date(passkey.created_at).toLocaleDateString()}
              {passkey.last_used_at ? `, last used ${new Date(passkey.last_used_at).toLocaleString()}` : ", not used yet"}{" "}
              <button type="button" className="secondary" disabled={busy} onClick={() => void remove(passkey)}>
                Delete {passkey.name}
              </button>
            </li>
          ))}
        </ul>
      )}
      <form className="card" onSubmit={add} aria-label="Add a passkey">
        <Field label="Passkey name" hint="To tell your passkeys apart, such as “Work laptop”" error={fields.name}>
          {(props) => <input {...props} maxLength={60} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit" disabled={busy}>
          Add a passkey
        </button>
      </form>
      {confirmation}
    </section>
  );
}
