import { useState, type FormEvent } from "react";
import { request, type SessionView } from "../api";
import { ErrorNote, Field, failureOf } from "../ui";
import { ForgotPassword } from "./password-reset";

export function SignIn({ onSignedIn }: { onSignedIn: (session: SessionView) => void }) {
  const [forgot, setForgot] = useState(false);
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await request<SessionView>("POST", "/auth/v1/sign-in", { email, password }));
    } catch (failure) {
      setError(failureOf(failure).message);
    } finally {
      setBusy(false);
    }
  };

  if (forgot) return <ForgotPassword onBack={() => setForgot(false)} />;

  return (
    <main className="center">
      <h1>Sign in to the panel</h1>
      <form onSubmit={submit} className="card" aria-describedby={error ? "sign-in-error" : undefined}>
        <Field label="Email">
          {(props) => <input {...props} type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />}
        </Field>
        <Field label="Password">
          {(props) => (
            <input {...props} type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
          )}
        </Field>
        <div id="sign-in-error">
          <ErrorNote error={error} />
        </div>
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <p>
        <button type="button" className="secondary" onClick={() => setForgot(true)}>
          Forgot your password?
        </button>
      </p>
      <p className="muted">No account? The deployment's admin creates a panel's first owner; owners add everyone else.</p>
    </main>
  );
}
