import { trackingDomainAnswer } from "../domain/answers/segments";
import { checkTrackingDomain, cnameTarget } from "../services/channels/email/tracking-domains";
import { notFound, orNotFound } from "../lib/http/errors";
import { createSenderDomainBody } from "../domain/sender-domains";
import { deleteTrackingDomain, getTrackingDomain, putTrackingDomain, type TrackingDomain } from "../store/tracking-domains";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";
import { audited } from "./audit";

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
  role: "owner",
  response: trackingDomainAnswer,
  summary: "Set the panel's tracking domain (links, pixel and unsubscribe link of its email on the sender's own host); used once verified",
  body: createSenderDomainBody,
  async handle({ env, caller, body, panel, db }) {
    const domain = await putTrackingDomain(db, panel.id, body.domain, Date.now());
    await audited({ db, caller, panel }, "tracking_domain.set", domain.domain);
    return domainView(domain, env);
  },
});

const readDomain = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/tracking-domain",
  role: "viewer",
  response: trackingDomainAnswer,
  summary: "The panel's tracking domain, the CNAME record to publish and whether it is verified",
  async handle({ env, panel, db }) {
    return domainView(await orNotFound(getTrackingDomain(db, panel.id), noDomain), env);
  },
});

const verifyDomain = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/tracking-domain/verify",
  role: "owner",
  response: trackingDomainAnswer,
  summary: "Look the tracking domain's CNAME up now over DNS-over-HTTPS; pointing at the service's host verifies it",
  async handle({ env, panel, db }) {
    const domain = await orNotFound(getTrackingDomain(db, panel.id), noDomain);
    const check = await checkTrackingDomain(env, db, domain, Date.now());
    return domainView(check.domain, env, check);
  },
});

const removeDomain = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/tracking-domain",
  role: "owner",
  status: 204,
  raw: { contentType: null, description: "Removed" },
  summary: "Remove the tracking domain: links go back to PUBLIC_BASE_URL",
  async handle({ env, caller, panel, db }) {
    if (!(await deleteTrackingDomain(db, panel.id))) throw notFound(noDomain);
    await audited({ db, caller, panel }, "tracking_domain.removed", panel.id);
    return new Response(null, { status: 204 });
  },
});

export const trackingDomainRoutes = [putDomain, readDomain, verifyDomain, removeDomain];
