import { useEffect, useRef, useState, type FormEvent } from "react";
import { request } from "../api";
import { Link, navigate } from "../router";
import type { PasswordReset, PasswordResetRequest } from "../../../src/domain/answers";
import { ErrorNote, Field, useSubmit, unplacedFailure } from "../ui";

/** Asks for a reset link: the answer is the same whether the address has an account. */
export function ForgotPassword({ onBack }: { onBack: () => void }) {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState<string>();
  const { failure, fields, busy, run } = useSubmit();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: PasswordResetRequest = { email };
    await run(async () => setSent((await request<{ message: string }>("POST", "/auth/v1/password-reset", body)).message));
  };

  return (
    <main className="center">
      <h1 tabIndex={-1} ref={heading}>
        Set a new password
      </h1>
      {sent ? (
        <p role="status" className="card">
          {sent}
        </p>
      ) : (
        <form onSubmit={submit} className="card" aria-label="Ask for a reset link">
          <p className="muted">We mail a link to set a new password to the address of your operator account.</p>
          <Field label="Email" error={fields.email}>
            {(props) => <input {...props} type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />}
          </Field>
          <ErrorNote error={unplacedFailure(failure, fields, ["email"])} />
          <button type="submit" disabled={busy}>
            Send the link
          </button>
        </form>
      )}
      <p>
        <button type="button" className="secondary" onClick={onBack}>
          Back to sign-in
        </button>
      </p>
    </main>
  );
}

/** The page a reset link opens: the token is in the fragment (#token=…), which no server sees. */
export function ResetPassword({ onDone }: { onDone: () => void }) {
  const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [mismatch, setMismatch] = useState<string>();
  const [done, setDone] = useState<string>();
  const { failure, fields, busy, run } = useSubmit();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setMismatch(password === repeat ? undefined : "the two passwords differ");
    if (password !== repeat) return;
    const body: PasswordReset = { token, password };
    await run(async () => setDone((await request<{ message: string }>("POST", "/auth/v1/password-reset/confirm", body)).message));
  };

  return (
    <main className="center">
      <h1 id="reset-heading">Choose a new password</h1>
      {done ? (
        <div role="status" className="card">
          <p>{done}</p>
          <button
            type="button"
            onClick={() => {
              navigate("/", { replace: true });
              onDone();
            }}
          >
            Sign in
          </button>
        </div>
      ) : !token ? (
        <p className="card error">This page needs the link from the reset mail. <Link href="/">Ask for a new one from the sign-in page.</Link></p>
      ) : (
        <form onSubmit={submit} className="card" aria-labelledby="reset-heading">
          <Field label="New password" hint="10 characters or more" error={fields.password}>
            {(props) => <input {...props} type="password" autoComplete="new-password" required value={password} onChange={(e) => setPassword(e.target.value)} />}
          </Field>
          <Field label="Repeat the new password" error={mismatch}>
            {(props) => <input {...props} type="password" autoComplete="new-password" required value={repeat} onChange={(e) => setRepeat(e.target.value)} />}
          </Field>
          <ErrorNote error={fields.token ? `This link has expired or was already used; ask for a new one from the sign-in page.` : failure} />
          <button type="submit" disabled={busy}>
            Set the new password
          </button>
        </form>
      )}
    </main>
  );
}
