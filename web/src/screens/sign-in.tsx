import { useState, type FormEvent } from "react";
import { solveChallenge } from "../../../src/domain/sign-in-challenge";
import type { SignInChallengeView, SignInStepView } from "../../../src/domain/operators";
import { ApiFailure, request, type SessionView } from "../api";
import { ErrorNote, Field, failureOf } from "../ui";
import { ForgotPassword } from "./password-reset";
import { PasskeySignIn } from "./passkeys";
import { SignInStep } from "./two-factor";

/** Tries a fresh challenge at most this often in one sign-in (it can grow harder while being solved). */
const CHALLENGE_TRIES = 3;

const challengeRefused = (failure: unknown) => failure instanceof ApiFailure && failure.status === 400 && failure.errors.some((e) => e.field.startsWith("challenge"));

/**
 * Signs in; when the server asks for a proof of work (the account had failed sign-ins lately,
 * maybe someone else's guesses), fetches a challenge, solves it and retries.
 */
async function signInSolving(email: string, password: string, onChecking: () => void): Promise<SessionView | SignInStepView> {
  for (let tries = 0; ; tries++) {
    try {
      return await request<SessionView | SignInStepView>("POST", "/auth/v1/sign-in", tries === 0 ? { email, password } : { email, password, challenge: await solved(email, onChecking) });
    } catch (failure) {
      if (!challengeRefused(failure) || tries >= CHALLENGE_TRIES) throw failure;
    }
  }
}

async function solved(email: string, onChecking: () => void): Promise<{ token: string; nonce: string } | undefined> {
  const challenge = await request<SignInChallengeView>("POST", "/auth/v1/sign-in/challenge", { email });
  if (!challenge.required) return undefined;
  onChecking();
  return { token: challenge.token, nonce: await solveChallenge(challenge.token, challenge.difficulty) };
}

export function SignIn({ onSignedIn }: { onSignedIn: (session: SessionView) => void }) {
  const [forgot, setForgot] = useState(false);
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [checking, setChecking] = useState(false);
  const [step, setStep] = useState<SignInStepView>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const answer = await signInSolving(email, password, () => setChecking(true));
      if ("step" in answer) setStep(answer);
      else onSignedIn(answer);
    } catch (failure) {
      setError(failureOf(failure).message);
    } finally {
      setBusy(false);
      setChecking(false);
    }
  };

  if (forgot) return <ForgotPassword onBack={() => setForgot(false)} />;
  if (step) return <SignInStep step={step} onSignedIn={onSignedIn} />;

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
          {checking ? "Checking…" : busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <PasskeySignIn onSignedIn={onSignedIn} />
      <p>
        <button type="button" className="secondary" onClick={() => setForgot(true)}>
          Forgot your password?
        </button>
      </p>
      <p className="muted">No account? The deployment's admin creates a panel's first owner; owners add everyone else.</p>
    </main>
  );
}
