import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { compileAudience } from "../../../src/services/broadcasts/audience";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { getCampaign, publishCampaign } from "../../../src/store/campaigns";
import { withBindings } from "../../support/cron";
import { admin, apiFor, createPanel, panelData } from "../../support/helpers";
import { campaign, outbox, scheduleIn } from "../../support/broadcasts";

// Campaign sends against what operators do while a batch is being handed to the provider.

/** `FILES` whose first outbox write runs `during` before it lands: an operator acting while a batch is with the provider. */
function filesActingOnSend(during: () => Promise<void>): R2Bucket {
  let done = false;
  return new Proxy(env.FILES, {
    get(target, key) {
      if (key === "put") {
        return async (name: string, ...rest: unknown[]) => {
          if (!done && name.startsWith("outbox/")) {
            done = true;
            await during();
          }
          return (target.put as (...a: unknown[]) => unknown).call(target, name, ...rest);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("campaign batch with the provider", () => {
  it("a campaign cancelled and deleted while a batch is being sent is archived, not deleted: its messages went out and its report stays", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Customers" })).body.listid as number;
    for (const name of ["Ada", "Bob", "Cy"]) await api("contact", "add", { data: { EMAIL: `${name.toLowerCase()}@example.com`, NAME: name }, listid: list });
    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Spring",
      subject: "Hello",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hi</p>",
      audience: { lists: [list] },
      schedule_date: scheduleIn(60 * 24 * 45),
    });
    const id = created.body.id as string;
    const stored = (await getCampaign(panelData, panel.id, id))!;
    const now = Date.now();
    expect(await publishCampaign(panelData, stored, 3, now, await compileAudience(panelData, panel.id, stored.audience!, now))).toBe(3);

    let deleted: unknown;
    const racing = withBindings(env, {
      FILES: filesActingOnSend(async () => {
        expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/cancel`)).status).toBe(200);
        deleted = (await admin("DELETE", `/panels/${panel.id}/campaigns/${id}`)).body;
      }),
    });
    await sendCampaignBatch(racing, emailProvider(racing), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 } satisfies SendNudge);
    expect(await outbox(panel)).toHaveLength(3);
    expect(deleted).toEqual({ id, outcome: "archived" });
    expect(await campaign(panel, id)).toMatchObject({ status: "archived", counters: { sent: 3 } });
  });
});
