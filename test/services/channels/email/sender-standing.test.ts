import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { routeRequest } from "../../../../src/http/router";
import { publishDueBroadcasts } from "../../../../src/services/broadcasts/publish";
import { admin, apiFor, BASE, call, countRows, createPanel, panelSnapshot, PUBLIC_HTTPS, type TestPanel } from "../../../support/helpers";
import { broadcastData, campaign, scheduleIn, toBase64 } from "../../../support/broadcasts";
import { uniqueDomain, verifiedSenderDomain } from "../../../support/dns";

// A sender domain a real provider would refuse is refused when the mail is scheduled (a campaign
// created or published, a journey started), not message by message at send time; the outbox
// accepts it and says so.

const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" } as unknown as Env;

/** A call through the Worker's router as a deployment sending real email (SES) runs it. */
async function underSes(method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${env.ADMIN_TOKEN}` }) {
  const response = await routeRequest(
    new Request(`${BASE}${path}`, { method, headers: { ...headers, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }),
    sesEnv,
    createExecutionContext(),
  );
  return { status: response.status, body: (await response.json()) as any };
}

async function panelWithList(): Promise<{ panel: TestPanel; list: number; sender: string; domain: string }> {
  const panel = await createPanel();
  const list = (await apiFor(panel)("lists", "add", { listname: "Customers" })).body.listid as number;
  const domain = uniqueDomain();
  return { panel, list, sender: `news@${domain}`, domain };
}

const audienceCampaign = (sender: string, list: number, schedule = scheduleIn(60 * 24 * 30)) => ({
  name: "Spring",
  subject: "Hello",
  sender_name: "Shop",
  sender_email: sender,
  html: "<p>Hi</p>",
  schedule_date: schedule,
  audience: { lists: [list] },
});

const notVerified = (domain: string) =>
  `the sender domain ${domain} is not verified in this panel: add it (POST /admin/v1/panels/{panel}/sender-domains), publish its SPF, DKIM and DMARC records and verify it`;
const outboxNote = (domain: string) => `the sender domain ${domain} is not verified in this panel; a provider that sends real email would refuse this message`;

const campaignsOf = (panelId: string) => countRows("SELECT COUNT(*) AS n FROM campaigns WHERE panel_id = ?", panelId);

describe("campaigns from an unverified sender domain", () => {
  it("a deployment that sends real email refuses the admin campaign, naming the field, and writes nothing; once verified it is created", async () => {
    const { panel, list, sender, domain } = await panelWithList();
    const refused = await underSes("POST", `/admin/v1/panels/${panel.id}/campaigns`, audienceCampaign(sender, list));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: `sender_email: ${notVerified(domain)}`, errors: [{ field: "sender_email", message: notVerified(domain) }] });
    expect(await campaignsOf(panel.id)).toBe(0);

    // Added but not verified is still refused.
    expect((await admin("POST", `/panels/${panel.id}/sender-domains`, { domain })).status).toBe(201);
    expect((await underSes("POST", `/admin/v1/panels/${panel.id}/campaigns`, audienceCampaign(sender, list))).status).toBe(400);

    await verifiedSenderDomain(panel.id, domain);
    const created = await underSes("POST", `/admin/v1/panels/${panel.id}/campaigns`, audienceCampaign(sender, list));
    expect(created.status).toBe(201);
    expect(created.body.warnings).toEqual([]);
    expect(await campaignsOf(panel.id)).toBe(1);
  });

  it("the broadcast body of the admin route is refused the same way, under its own field name", async () => {
    const { panel, sender, domain } = await panelWithList();
    const before = await panelSnapshot(panel.id);
    const refused = await underSes("POST", `/admin/v1/panels/${panel.id}/campaigns`, await broadcastData({ sender_email_id: sender }));
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "data.sender_email_id", message: notVerified(domain) }]);
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect(await campaignsOf(panel.id)).toBe(0);
  });

  it("upload_contact_and_publish answers the spec 2.6 failure body and creates no list, no import, no campaign", async () => {
    const { panel, sender, domain } = await panelWithList();
    const before = await panelSnapshot(panel.id);
    const data = await broadcastData({ sender_email_id: sender });
    const refused = await underSes("POST", "/apiv2", { type: "email_broadcast", activity: "upload_contact_and_publish", apikey: panel.apiKey, data }, {});
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.body).sort()).toEqual(["CampaignID", "RequestID", "message", "payload", "success"]);
    expect(refused.body).toMatchObject({ success: false, CampaignID: "", message: `data.sender_email_id: ${notVerified(domain)}`, payload: data });
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect(await campaignsOf(panel.id)).toBe(0);
    expect(await countRows("SELECT COUNT(*) AS n FROM import_jobs WHERE panel_id = ?", panel.id)).toBe(0);

    await verifiedSenderDomain(panel.id, domain);
    const accepted = await underSes("POST", "/apiv2", { type: "email_broadcast", activity: "upload_contact_and_publish", apikey: panel.apiKey, data }, {});
    expect(accepted.status).toBe(200);
    expect(accepted.body.success).toBe(true);
    expect(accepted.body.message).not.toMatch(/not verified/);
  });

  it("the outbox accepts an unverified domain and says so: the campaign answer's warnings, the broadcast's message", async () => {
    const { panel, list, sender, domain } = await panelWithList();
    const created = await admin("POST", `/panels/${panel.id}/campaigns`, audienceCampaign(sender, list));
    expect(created.status).toBe(201);
    expect(created.body.warnings).toEqual([{ field: "sender_email", message: outboxNote(domain) }]);

    const broadcast = await apiFor(panel)("email_broadcast", "upload_contact_and_publish", { data: await broadcastData({ sender_email_id: sender, source_code: toBase64("<p>Hi</p>") }) });
    expect(broadcast.status).toBe(200);
    expect(broadcast.body.success).toBe(true);
    expect(broadcast.body.message).toMatch(new RegExp(`\\. Note: ${outboxNote(domain).replace(/\./g, "\\.")}$`));
  });

  it("a scheduled campaign whose domain was removed since fails at publish with the reason; none of its mail is queued", async () => {
    const { panel, list, sender, domain } = await panelWithList();
    await verifiedSenderDomain(panel.id, domain);
    const lead = Number(env.BROADCAST_LEAD_MINUTES || "90");
    const created = await underSes("POST", `/admin/v1/panels/${panel.id}/campaigns`, audienceCampaign(sender, list, scheduleIn(lead + 2)));
    expect(created.status).toBe(201);
    const removed = await call(`/admin/v1/panels/${panel.id}/sender-domains/${domain}`, { method: "DELETE", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
    expect(removed.status).toBe(204);

    await publishDueBroadcasts(sesEnv, Date.parse(created.body.send_at) + 1000);
    const after = await campaign(panel, created.body.id);
    expect(after.status).toBe("failed");
    expect(after.status_reason).toBe(notVerified(domain));
    expect(await countRows("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = ?", created.body.id)).toBe(0);
  });
});

describe("journeys with an email step from an unverified sender domain", () => {
  async function draftJourney(panel: TestPanel, list: number, senders: string[]) {
    const steps = senders.map((sender, i) => ({
      id: `mail${i}`,
      type: "email",
      ...(i ? { after: `wait${i - 1}` } : {}),
      subject: "Welcome",
      html: "<p>Hi</p>",
      sender_name: "Shop",
      sender_email: sender,
    }));
    const withWaits = steps.flatMap((step, i) => (i < steps.length - 1 ? [step, { id: `wait${i}`, type: "delay", after: step.id, for: "1h" }] : [step]));
    const created = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Welcome", trigger: { type: "list", listid: list }, steps: withWaits });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  it("a deployment that sends real email refuses to start it (409 naming each step's sender), the journey stays a draft; once verified it runs", async () => {
    const { panel, list, sender, domain } = await panelWithList();
    const other = `hello@${uniqueDomain("other")}`;
    const journey = await draftJourney(panel, list, [sender, other]);
    await verifiedSenderDomain(panel.id, other.split("@")[1]);

    const refused = await underSes("POST", `/admin/v1/panels/${panel.id}/journeys/${journey}/status`, { status: "running" });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ error: `steps.0.sender_email: ${notVerified(domain)}`, errors: [{ field: "steps.0.sender_email", message: notVerified(domain) }] });
    expect((await admin("GET", `/panels/${panel.id}/journeys/${journey}`)).body.status).toBe("draft");

    await verifiedSenderDomain(panel.id, domain);
    const started = await underSes("POST", `/admin/v1/panels/${panel.id}/journeys/${journey}/status`, { status: "running" });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: "running", warnings: [] });
    // Pausing is never refused for its senders.
    expect((await underSes("POST", `/admin/v1/panels/${panel.id}/journeys/${journey}/status`, { status: "paused" })).status).toBe(200);
  });

  it("the outbox starts it and names each unverified sender in warnings", async () => {
    const { panel, list, sender, domain } = await panelWithList();
    const journey = await draftJourney(panel, list, [sender]);
    const started = await admin("POST", `/panels/${panel.id}/journeys/${journey}/status`, { status: "running" });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: "running", warnings: [{ field: "steps.0.sender_email", message: outboxNote(domain) }] });
  });
});
