import { deleteSenderDomain, getSenderDomain, type SenderDomain } from "../../../store/sender-domains";
import type { ShardDb } from "../../../store/shards";
import { recordAudit, type Auditor } from "../../audit/record";
import { addSenderDomain, checkSenderDomain, forgetSenderSigning, type SenderDomainEnv } from "./sender-domains";

// The panel's use cases on its sender domains: add (with new DKIM keys), check the DNS now, remove.

/** Adds a sender domain with new DKIM keys; null when the panel already has it. */
export async function addPanelSenderDomain(env: SenderDomainEnv, db: ShardDb, panelId: string, domain: string, by: Auditor): Promise<SenderDomain | null> {
  const added = await addSenderDomain(env, db, panelId, domain, Date.now());
  if (added) await recordAudit(db, panelId, by, "sender_domain.added", added.domain);
  return added;
}

/** Checks the domain's DNS records now; null when the panel has no such domain. */
export async function verifySenderDomain(env: SenderDomainEnv, db: ShardDb, panelId: string, name: string): Promise<SenderDomain | null> {
  const domain = await getSenderDomain(db, panelId, name);
  return domain ? checkSenderDomain(env, db, domain, Date.now()) : null;
}

/** Removes a sender domain and its keys; false when the panel has no such domain. */
export async function removeSenderDomain(db: ShardDb, panelId: string, name: string, by: Auditor): Promise<boolean> {
  if (!(await deleteSenderDomain(db, panelId, name))) return false;
  await recordAudit(db, panelId, by, "sender_domain.removed", name);
  forgetSenderSigning();
  return true;
}
