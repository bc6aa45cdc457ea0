import { useEffect, useState, type FormEvent } from "react";
import { request, type SessionView } from "../api";
import type { SignInStepView, TotpEnrolmentView, TwoFactorStatusView } from "../../../src/domain/operators";
import { CopyableValue, ErrorNote, Field, failureOf, Loading, Screen, useLoad, useSubmit } from "../ui";
import type { ScreenProps } from "../screen-props";
import { PasskeySignIn, Passkeys } from "./passkeys";

/** A code form: the authenticator's six digits (or, where `recovery`, a recovery code). */
function CodeForm({ label, action, recovery, onCode }: { label: string; action: string; recovery?: boolean; onCode: (code: string) => Promise<unknown> }) {
  const [code, setCode] = useState("");
  const { failure, fields, busy, run } = useSubmit();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    await run(() => onCode(code));
  };
  return (
    <form className="card" onSubmit={submit} aria-label={label}>
      <Field label="Code" hint={recovery ? "The 6 digits your authenticator app shows now, or one of your recovery codes" : "The 6 digits your authenticator app shows now"} error={fields.code}>
        {(props) => <input {...props} autoComplete="one-time-code" inputMode={recovery ? "text" : "numeric"} required value={code} onChange={(e) => setCode(e.target.value)} />}
      </Field>
      <ErrorNote error={fields.code ? undefined : failure} />
      <button type="submit" disabled={busy}>
        {action}
      </button>
    </form>
  );
}

/** The secret to add to an authenticator app: its otpauth:// URI (a link phones open in their app) and the text to type. */
function Enrolment({ enrolment }: { enrolment: TotpEnrolmentView }) {
  return (
    <div className="card">
      <p>Add this account to your authenticator app (such as a password manager or an authenticator on your phone):</p>
      <ul>
        <li>
          On this device: <a href={enrolment.uri}>open it in your authenticator app</a>
        </li>
        <li>
          Or type the key: <CopyableValue text={enrolment.secret} label="Copy the key" />
        </li>
      </ul>
      <details>
        <summary>The otpauth:// address</summary>
        <code className="wrap">{enrolment.uri}</code>
      </details>
    </div>
  );
}

/** The recovery codes, shown once after enrolling. */
function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <div className="card" role="status">
      <h2>Your recovery codes</h2>
      <p>Each works once in place of a code, should you lose your authenticator. Keep them somewhere safe: they are not shown again.</p>
      <ul aria-label="Recovery codes" className="codes">
        {codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * The step of a sign-in after a right password: the second factor's code, or enrolling one
 * because a panel of the operator requires it.
 */
export function SignInStep({ step, onSignedIn }: { step: SignInStepView; onSignedIn: (session: SessionView) => void }) {
  const [enrolment, setEnrolment] = useState<TotpEnrolmentView>();
  const [failure, setFailure] = useState<string>();
  const [done, setDone] = useState<{ session: SessionView; codes: string[] }>();

  useEffect(() => {
    if (step.step !== "enrol") return;
    request<TotpEnrolmentView>("POST", "/auth/v1/sign-in/enrol", { token: step.token }).then(setEnrolment, (problem: unknown) => setFailure(failureOf(problem).message));
  }, [step]);

  if (step.step === "code") {
    return (
      <main className="center">
        <h1>Two-factor sign-in</h1>
        <CodeForm
          label="Two-factor code"
          action="Verify"
          recovery
          onCode={async (code) => onSignedIn(await request<SessionView>("POST", "/auth/v1/sign-in/code", { token: step.token, code }))}
        />
      </main>
    );
  }
  return (
    <main className="center">
      <h1>Set up two-factor sign-in</h1>
      {done ? (
        <>
          <RecoveryCodes codes={done.codes} />
          <button type="button" onClick={() => onSignedIn(done.session)}>
            Continue to the panel
          </button>
        </>
      ) : (
        <>
          <p>A panel you work in requires a second factor: enrol an authenticator app to finish signing in, or sign in with a passkey of this account instead.</p>
          <PasskeySignIn onSignedIn={onSignedIn} />
          <ErrorNote error={failure} />
          {enrolment ? (
            <>
              <Enrolment enrolment={enrolment} />
              <CodeForm
                label="Confirm the authenticator"
                action="Confirm and sign in"
                onCode={async (code) => {
                  const answer = await request<SessionView & { recovery_codes: string[] }>("POST", "/auth/v1/sign-in/enrol/confirm", { token: step.token, code });
                  setDone({ session: answer, codes: answer.recovery_codes });
                }}
              />
            </>
          ) : (
            !failure && <Loading />
          )}
        </>
      )}
    </main>
  );
}

/** The signed-in operator's own account: two-factor sign-in on or off, and passkeys. */
export function Account({ panel }: ScreenProps) {
  const { data: status, error, reload } = useLoad(() => request<TwoFactorStatusView>("GET", "/auth/v1/two-factor"), [panel.id]);
  const [enrolment, setEnrolment] = useState<TotpEnrolmentView>();
  const [codes, setCodes] = useState<string[]>();
  const [turningOff, setTurningOff] = useState(false);
  const { failure, run } = useSubmit();

  return (
    <Screen title="Your account">
      <h2>Two-factor sign-in</h2>
      <ErrorNote error={error ?? failure} />
      {codes && <RecoveryCodes codes={codes} />}
      {!status ? (
        <Loading />
      ) : status.enabled ? (
        <>
          <p>
            On: signing in asks for your authenticator's code after the password. {status.recovery_codes_left} of 10 recovery codes left.
            {status.required && " A panel you work in requires it."}
          </p>
          {!status.required &&
            (turningOff ? (
              <CodeForm
                label="Turn two-factor sign-in off"
                action="Turn off"
                recovery
                onCode={async (code) => {
                  await request("POST", "/auth/v1/two-factor/disable", { code });
                  setTurningOff(false);
                  setCodes(undefined);
                  reload();
                }}
              />
            ) : (
              <button type="button" className="secondary" onClick={() => setTurningOff(true)}>
                Turn two-factor sign-in off…
              </button>
            ))}
        </>
      ) : enrolment ? (
        <>
          <Enrolment enrolment={enrolment} />
          <CodeForm
            label="Confirm the authenticator"
            action="Confirm"
            onCode={async (code) => {
              const answer = await request<{ recovery_codes: string[] }>("POST", "/auth/v1/two-factor/confirm", { code });
              setEnrolment(undefined);
              setCodes(answer.recovery_codes);
              reload();
            }}
          />
        </>
      ) : (
        <>
          <p>Off: your password alone signs you in.{status.required && " A panel you work in requires a second factor: you will be asked to set one up at your next sign-in."}</p>
          <button type="button" onClick={() => void run(async () => setEnrolment(await request<TotpEnrolmentView>("POST", "/auth/v1/two-factor/setup")))}>
            Set up two-factor sign-in
          </button>
        </>
      )}
      <Passkeys />
    </Screen>
  );
}
