import { senderDomainAnswer, senderDomainListAnswer } from "../domain/answers/segments";
import { NEEDS } from "../domain/permissions";
import { recordsToPublish } from "../services/channels/email/sender-domains";
import { addPanelSenderDomain, removeSenderDomain, verifySenderDomain } from "../services/channels/email/sender-domain-changes";
import { conflict, notFound, orNotFound } from "../lib/http/errors";
import { createSenderDomainBody, normaliseDomain } from "../domain/sender-domains";
import { getSenderDomain, listSenderDomains, type SenderDomain } from "../store/sender-domains";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { auditorOf } from "./audit";
import { config } from "../lib/config";

/** A sender domain as the operator sees it: its state, the records to publish and the last check (never a private key). */
function domainView(domain: SenderDomain, env: Env) {
  return {
    domain: domain.domain,
    state: domain.state,
    records: recordsToPublish(domain, config(env).emailProvider),
    checks: domain.checks,
    checked_at: domain.checkedAt === null ? null : isoTime(domain.checkedAt),
    created_at: isoTime(domain.createdAt),
  };
}

const noSuchDomain = (domain: string) => `No sender domain "${domain}" in this panel`;

const createDomain = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/sender-domains",
  role: NEEDS.domains,
  response: senderDomainAnswer,
  summary: "Add a sender domain: its DKIM keys (RSA-SHA256 and Ed25519) are made and the SPF, DKIM and DMARC records to publish are shown",
  status: 201,
  body: createSenderDomainBody,
  async handle({ env, caller, body, panel, db }) {
    const added = await addPanelSenderDomain(env, db, panel.id, body.domain, auditorOf(caller));
    if (!added) throw conflict(`domain: the panel already has the sender domain ${body.domain}`, [{ field: "domain", message: "already added to this panel" }]);
    return domainView(added, env);
  },
});

const listDomains = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sender-domains",
  role: NEEDS.read,
  response: senderDomainListAnswer,
  summary: "The panel's sender domains with their verification state and records to publish",
  async handle({ env, panel, db }) {
    return { sender_domains: (await listSenderDomains(db, panel.id)).map((d) => domainView(d, env)) };
  },
});

const readDomain = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/sender-domains/:domain",
  role: NEEDS.read,
  response: senderDomainAnswer,
  summary: "A sender domain: its state, the records to publish and the outcome of its last check",
  async handle({ env, path, panel, db }) {
    const name = normaliseDomain(path.domain);
    return domainView(await orNotFound(getSenderDomain(db, panel.id, name), noSuchDomain(name)), env);
  },
});

const verifyDomain = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/sender-domains/:domain/verify",
  role: NEEDS.domains,
  response: senderDomainAnswer,
  summary: "Look up the domain's SPF, DKIM and DMARC records over DNS-over-HTTPS now: each passes or fails with the record to publish; all three passing verifies the domain",
  async handle({ env, path, panel, db }) {
    const name = normaliseDomain(path.domain);
    return domainView(await orNotFound(verifySenderDomain(env, db, panel.id, name), noSuchDomain(name)), env);
  },
});

const removeDomain = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/sender-domains/:domain",
  role: NEEDS.domains,
  status: 204,
  raw: { contentType: null, description: "Removed" },
  summary: "Remove a sender domain and its keys; mail from it is no longer signed",
  async handle({ env, caller, path, panel, db }) {
    const name = normaliseDomain(path.domain);
    if (!(await removeSenderDomain(db, panel.id, name, auditorOf(caller)))) throw notFound(noSuchDomain(name));
    return new Response(null, { status: 204 });
  },
});

export const senderDomainRoutes = [createDomain, listDomains, readDomain, verifyDomain, removeDomain];
