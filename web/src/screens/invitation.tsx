import { useEffect, useState, type FormEvent } from "react";
import { request, type SessionView } from "../api";
import { Link, navigate } from "../router";
import type { AcceptInvitation, InvitationPreviewView } from "../../../src/domain/answers";
import type { SignInStepView } from "../../../src/domain/operators";
import { SignInStep } from "./two-factor";
import { ErrorNote, Field, failureOf, formatTime, Loading, useSubmit } from "../ui";

/**
 * The page an invitation link opens (#token=… in the fragment, which no server sees): it names
 * the panel and role, then the invitee chooses a password (or, with an account already, gives
 * its password) and is signed in. A closed link (expired, used, revoked, replaced) says why.
 */
const tokenInFragment = () => new URLSearchParams(location.hash.slice(1)).get("token") ?? "";

export function InvitationPage({ onSignedIn }: { onSignedIn: (session: SessionView) => void }) {
  // A newer link opened in the same tab changes only the fragment: the page follows it.
  const [token, setToken] = useState(tokenInFragment);
  useEffect(() => {
    const follow = () => setToken(tokenInFragment());
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);
  const [preview, setPreview] = useState<InvitationPreviewView>();
  const [closed, setClosed] = useState<string>();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [repeat, setRepeat] = useState("");
  const [mismatch, setMismatch] = useState<string>();
  const [step, setStep] = useState<SignInStepView>();
  const { failure, fields, busy, run } = useSubmit();

  useEffect(() => {
    setPreview(undefined);
    setClosed(undefined);
    if (!token) return setClosed("This page needs the link from the invitation mail.");
    request<InvitationPreviewView>("POST", "/auth/v1/invitation", { token }).then(setPreview, (problem: unknown) => {
      const refused = failureOf(problem);
      setClosed(refused.fields.token ? `This invitation link does not work any more: ${refused.fields.token}.` : refused.message);
    });
  }, [token]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const newAccount = !preview?.has_account;
    setMismatch(newAccount && password !== repeat ? "the two passwords differ" : undefined);
    if (newAccount && password !== repeat) return;
    const body: AcceptInvitation = { token, password, ...(newAccount && name.trim() ? { name: name.trim() } : {}) };
    let answer: SessionView | SignInStepView | undefined;
    if (!(await run(async () => (answer = await request<SessionView | SignInStepView>("POST", "/auth/v1/invitation/accept", body))))) return;
    // The account's second factor (or a panel's requirement of one) comes before the session.
    if ("step" in answer!) return setStep(answer);
    signedIn(answer!);
  };

  const signedIn = (session: SessionView) => {
    navigate("/", { replace: true });
    onSignedIn(session);
  };
  if (step) return <SignInStep step={step} onSignedIn={signedIn} />;
  const heading = <h1 id="invitation-heading">Join the panel</h1>;
  if (closed || fields.token) {
    return (
      <main className="center">
        {heading}
        <div className="card error" role="alert">
          <p>{closed ?? `This invitation link does not work any more: ${fields.token}.`}</p>
          <p>
            <Link href="/">Go to the sign-in page</Link>
          </p>
        </div>
      </main>
    );
  }
  if (!preview) return <Loading />;
  return (
    <main className="center">
      {heading}
      <form onSubmit={submit} className="card" aria-labelledby="invitation-heading">
        <p>
          You are invited to <strong>{preview.panel_name}</strong> as <strong>{preview.role}</strong>, with the email {preview.email}. The link works until{" "}
          {formatTime(preview.expires_at)}.
        </p>
        {preview.has_account ? (
          <>
            <p className="muted">This email has an operator account already: give its password to accept.</p>
            <Field label="Your password" error={fields.password}>
              {(props) => <input {...props} type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />}
            </Field>
          </>
        ) : (
          <>
            <Field label="Your name (optional)" error={fields.name}>
              {(props) => <input {...props} autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <Field label="Choose a password" hint="10 characters or more" error={fields.password}>
              {(props) => <input {...props} type="password" autoComplete="new-password" required value={password} onChange={(e) => setPassword(e.target.value)} />}
            </Field>
            <Field label="Repeat the password" error={mismatch}>
              {(props) => <input {...props} type="password" autoComplete="new-password" required value={repeat} onChange={(e) => setRepeat(e.target.value)} />}
            </Field>
          </>
        )}
        <ErrorNote error={Object.keys(fields).length > 0 ? undefined : failure} />
        <button type="submit" disabled={busy}>
          {preview.has_account ? "Accept and sign in" : "Set the password and sign in"}
        </button>
      </form>
    </main>
  );
}
