import { config, type ConfigSource } from "../../../lib/config";
import { judgeHost } from "../../../lib/outbound-address";
import { panelDb } from "../../access/shards";
import type { CronTask } from "../../../lib/tasks";
import { OutboxProvider } from "./outbox";
import type { EmailProvider, ProviderEnv } from "./provider";
import { SesProvider } from "./ses";

/**
 * Why links under this origin must not go out in real email; null when they may. Recipients
 * open them from anywhere, so the origin must be public, and https, or every open, click and
 * unsubscribe would travel in clear text.
 */
export function publicBaseUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `PUBLIC_BASE_URL "${value}" is not a URL`;
  }
  if (url.protocol !== "https:") return `PUBLIC_BASE_URL is ${url.origin}: links in real email must use https`;
  const host = judgeHost(url.hostname);
  if (!host.ok) return `PUBLIC_BASE_URL is ${url.origin}: its host ${host.reason}, so recipients could not open its links`;
  return null;
}

/** What the deployment does with campaign and journey email, as the panel and `npm start` show it. */
export interface EmailSetup {
  provider: string;
  /** Whether messages leave for recipients (the outbox keeps them). */
  realEmail: boolean;
  /** Why real email is refused; null when it is not. */
  problem: string | null;
}

export function emailSetup(env: ConfigSource): EmailSetup {
  const { emailProvider: provider, publicBaseUrl } = config(env);
  if (provider === "outbox") return { provider, realEmail: false, problem: null };
  const problem = publicBaseUrlProblem(publicBaseUrl);
  return { provider, realEmail: problem === null, problem: problem && `real email is refused: ${problem}` };
}

/**
 * The provider EMAIL_PROVIDER names: "outbox" (the embedded default) or "ses". A provider that
 * sends real email is refused while PUBLIC_BASE_URL is not a public https origin.
 */
export function emailProvider(env: ProviderEnv): EmailProvider {
  const { emailProvider: provider, ses } = config(env);
  switch (provider) {
    case "outbox":
      return new OutboxProvider((panelId) => panelDb(env, panelId), env.FILES);
    case "ses": {
      const { problem } = emailSetup(env);
      if (problem) throw new Error(`EMAIL_PROVIDER is ses, but ${problem}`);
      if (!ses.accessKeyId || !ses.secretAccessKey) {
        throw new Error("EMAIL_PROVIDER is ses but the SES_ACCESS_KEY_ID and SES_SECRET_ACCESS_KEY secrets are not set");
      }
      return new SesProvider({
        accessKeyId: ses.accessKeyId,
        secretAccessKey: ses.secretAccessKey,
        region: ses.region,
        endpoint: ses.endpoint,
        configurationSet: ses.configurationSet,
      });
    }
  }
}

/** Whether this isolate has logged the refusal of real email yet (once per isolate, not every minute). */
let refusalLogged = false;

/**
 * A log line when real email is configured but refused (PUBLIC_BASE_URL not public https): a
 * deployment has no `npm start` printout, and its refused batches only retry quietly.
 */
export const emailSetupWarningTask: CronTask = {
  name: "email-setup",
  async run(env) {
    const { provider, problem } = emailSetup(env);
    if (!problem || refusalLogged) return;
    refusalLogged = true;
    console.warn(`EMAIL_PROVIDER is ${provider}, but ${problem}: no campaign or journey email is sent until it is fixed`);
  },
};
