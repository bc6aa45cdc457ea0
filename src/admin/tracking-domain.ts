import { trackingDomainAnswer } from "../domain/answers/segments";
import { NEEDS } from "../domain/permissions";
import { cnameTarget } from "../services/channels/email/tracking-domains";
import { removeTrackingDomain, setTrackingDomain, verifyTrackingDomain } from "../services/channels/email/tracking-domain-changes";
import { notFound, orNotFound, unwrap } from "../lib/http/errors";
import { createSenderDomainBody } from "../domain/sender-domains";
import { getTrackingDomain, type TrackingDomain } from "../store/tracking-domains";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { auditorOf } from "./audit";

function domainView(domain: TrackingDomain, env: Env, check?: { found: string[]; reason: string | null }) {
  return {
    domain: domain.domain,
    verified: domain.verified,
    record: { type: "CNAME", name: domain.domain, value: cnameTarget(env) },
    ...(check ? { found: check.found, reason: check.reason } : {}),
    checked_at: domain.checkedAt === null ? null : isoTime(domain.checkedAt),
    created_at: isoTime(domain.createdAt),
  };
}

const noDomain = "The panel has no tracking domain";

const putDomain = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/tracking-domain",
  role: NEEDS.domains,
  response: trackingDomainAnswer,
  summary: "Set the panel's tracking domain (links, pixel and unsubscribe link of its email on the sender's own host); used once verified; 409 while another panel of the deployment uses it verified",
  body: createSenderDomainBody,
  async handle({ env, caller, body, panel, db }) {
    return domainView(unwrap(await setTrackingDomain(env, db, panel.id, body.domain, auditorOf(caller))), env);
  },
});

const readDomain = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/tracking-domain",
  role: NEEDS.read,
  response: trackingDomainAnswer,
  summary: "The panel's tracking domain, the CNAME record to publish and whether it is verified",
  async handle({ env, panel, db }) {
    return domainView(await orNotFound(getTrackingDomain(db, panel.id), noDomain), env);
  },
});

const verifyDomain = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/tracking-domain/verify",
  role: NEEDS.domains,
  response: trackingDomainAnswer,
  summary: "Look the tracking domain's CNAME up now over DNS-over-HTTPS; pointing at the service's host verifies it",
  async handle({ env, panel, db }) {
    const check = await orNotFound(verifyTrackingDomain(env, db, panel.id), noDomain);
    return domainView(check.domain, env, check);
  },
});

const removeDomain = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/tracking-domain",
  role: NEEDS.domains,
  status: 204,
  raw: { contentType: null, description: "Removed" },
  summary: "Remove the tracking domain: links go back to PUBLIC_BASE_URL",
  async handle({ env, caller, panel, db }) {
    if (!(await removeTrackingDomain(db, panel.id, auditorOf(caller)))) throw notFound(noDomain);
    return new Response(null, { status: 204 });
  },
});

export const trackingDomainRoutes = [putDomain, readDomain, verifyDomain, removeDomain];
