import { sha256Hex } from "../../lib/crypto";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { getOperator } from "../../store/operators";
import { countStepFailure, endSignInStep, findSignInStep } from "../../store/two-factor";
import { openSession, type Session } from "./sessions";
import { beginEnrolment, checkCode, confirmEnrolment } from "./two-factor";

/** Wrong codes one pending sign-in takes before it ends (the password is asked again). */
export const STEP_FAILURES = 5;

type StepEnv = Parameters<typeof checkCode>[0];

const stepGone = () => refusedField<never>("invalid", "token", "this sign-in has expired or ended; sign in again with your password");

async function pending(env: StepEnv, token: string, step: "code" | "enrol", now: number) {
  const tokenHash = await sha256Hex(token);
  const found = await findSignInStep(env.DB, tokenHash, now);
  if (!found || found.step !== step) return null;
  const operator = await getOperator(env.DB, found.operatorId);
  if (!operator || operator.disabled) return null;
  return { tokenHash, failures: found.failures, operator };
}

/** Finishes a sign-in with the second factor's code (or a recovery code): a session. */
export async function signInWithCode(env: StepEnv, token: string, code: string, now = Date.now()): Promise<Result<{ token: string; session: Session }>> {
  const step = await pending(env, token, "code", now);
  if (!step) return stepGone();
  const checked = await checkCode(env, step.operator.id, code, now);
  if (!checked.ok) {
    if (checked.problem.kind !== "unauthenticated") return checked;
    await countStepFailure(env.DB, step.tokenHash);
    if (step.failures + 1 >= STEP_FAILURES) {
      await endSignInStep(env.DB, step.tokenHash);
      return refused("rate_limited", [], "Too many wrong codes for this sign-in; sign in again with your password");
    }
    return checked;
  }
  if (!(await endSignInStep(env.DB, step.tokenHash))) return stepGone();
  return succeeded(await openSession(env.DB, step.operator, now));
}

/** A panel requires a second factor the operator lacks: starts enrolling one, within the sign-in. */
export async function enrolAtSignIn(env: StepEnv, token: string, now = Date.now()): Promise<Result<{ secret: string; uri: string }>> {
  const step = await pending(env, token, "enrol", now);
  if (!step) return stepGone();
  return beginEnrolment(env, step.operator, now);
}

/** Confirms the enrolment begun at sign-in with a first code: the session, and the recovery codes shown once. */
export async function confirmAtSignIn(env: StepEnv, token: string, code: string, now = Date.now()): Promise<Result<{ token: string; session: Session; recoveryCodes: string[] }>> {
  const step = await pending(env, token, "enrol", now);
  if (!step) return stepGone();
  const confirmed = await confirmEnrolment(env, step.operator.id, code, now);
  if (!confirmed.ok) return confirmed;
  if (!(await endSignInStep(env.DB, step.tokenHash))) return stepGone();
  return succeeded({ ...(await openSession(env.DB, step.operator, now)), recoveryCodes: confirmed.value.recoveryCodes });
}
