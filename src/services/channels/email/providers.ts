import { OutboxProvider } from "./outbox";
import type { EmailProvider, ProviderEnv } from "./provider";
import { SesProvider } from "./ses";

/** The provider EMAIL_PROVIDER names: "outbox" (the embedded default) or "ses". */
export function emailProvider(env: ProviderEnv): EmailProvider {
  switch (env.EMAIL_PROVIDER || "outbox") {
    case "outbox":
      return new OutboxProvider(env.DB, env.FILES);
    case "ses":
      if (!env.SES_ACCESS_KEY_ID || !env.SES_SECRET_ACCESS_KEY) {
        throw new Error("EMAIL_PROVIDER is ses but the SES_ACCESS_KEY_ID and SES_SECRET_ACCESS_KEY secrets are not set");
      }
      return new SesProvider({
        accessKeyId: env.SES_ACCESS_KEY_ID,
        secretAccessKey: env.SES_SECRET_ACCESS_KEY,
        region: env.SES_REGION || "us-east-1",
        endpoint: env.SES_ENDPOINT || undefined,
        configurationSet: env.SES_CONFIGURATION_SET || undefined,
      });
    default:
      throw new Error(`EMAIL_PROVIDER "${env.EMAIL_PROVIDER}" is not one of outbox, ses`);
  }
}
