import type { ShardDb } from "../../../store/shards";
import type { EmailProvider } from "./provider";
import { senderSigning, unverifiedSenderNote, unverifiedSenderProblem } from "./sender-domains";
import { signDkim } from "./dkim";

/**
 * How a sender's mail leaves through a provider: refused (a provider that sends real email and
 * a sender domain the panel has not verified), or signed with the domain's DKIM keys, with a
 * note for the outbox when a real provider would have refused it.
 */
export type SenderPlan = { ok: false; error: string } | { ok: true; sign(raw: string, now: number): Promise<string>; note?: string };

export async function planSender(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, provider: EmailProvider, panelId: string, address: string): Promise<SenderPlan> {
  const signing = await senderSigning(env, db, panelId, address);
  const refusal = unverifiedSenderProblem(signing, provider.realEmail);
  if (refusal) return { ok: false, error: refusal };
  const note = signing.verified ? undefined : unverifiedSenderNote(signing.domain);
  return { ok: true, sign: (raw, now) => signDkim(raw, signing.keys, now), ...(note ? { note } : {}) };
}
