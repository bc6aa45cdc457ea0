import { config, type ConfigSource } from "../../lib/config";

/** What Turnstile's siteverify said: passed, refused (a bot, a stale or reused answer), or could not be asked. */
export type TurnstileVerdict = "passed" | "refused" | "unavailable";

/**
 * Checks a visitor's Turnstile answer server-side at TURNSTILE_SITEVERIFY_URL (Cloudflare's, or a
 * stand-in in tests) with the panel's secret. The widget's answer alone proves nothing: only
 * siteverify's `success` does, once per answer.
 */
export async function verifyTurnstile(env: ConfigSource, secret: string, answer: string, ip: string | null): Promise<TurnstileVerdict> {
  const body = new URLSearchParams({ secret, response: answer });
  if (ip) body.set("remoteip", ip);
  let response: Response;
  try {
    response = await fetch(config(env).turnstileSiteverifyUrl, { method: "POST", body, signal: AbortSignal.timeout(10_000) });
  } catch {
    return "unavailable";
  }
  if (!response.ok) {
    await response.body?.cancel();
    return "unavailable";
  }
  let verdict: unknown;
  try {
    verdict = await response.json();
  } catch {
    return "unavailable";
  }
  return typeof verdict === "object" && verdict !== null && (verdict as { success?: unknown }).success === true ? "passed" : "refused";
}
