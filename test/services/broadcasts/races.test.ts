import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { compileAudience } from "../../../src/services/broadcasts/audience";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../src/store/campaigns/publish";
import { withBindings } from "../../support/cron";
import { filesActingOnSend, overriding } from "../../support/interleave";
import { admin, apiFor, createPanel, panelData, TEST_SHARD, type TestPanel } from "../../support/helpers";
import { campaign, outbox, scheduleIn } from "../../support/broadcasts";

// Campaign publishing and sends against what operators do while a step is under way.

/** A panel (campaigns without lead time) with a list of three contacts, and a campaign to it (`schedule`: its schedule fields). */
async function campaignToList(schedule: Record<string, unknown>): Promise<{ panel: TestPanel; id: string }> {
  const panel = await createPanel();
  expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
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
    ...schedule,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { panel, id: created.body.id as string };
}

/**
 * The test shard, whose statement starting a campaign's publishing (startPublish) runs `during`
 * first: an operator acting after the cron read the due campaigns, before it started one.
 */
function shardActingBeforeStart(during: () => Promise<void>): D1Database {
  const db = panelData as unknown as D1Database;
  let done = false;
  const prepare = (sql: string) => {
    const statement = db.prepare(sql);
    if (done || !sql.includes("SET status = 'sending', published_at")) return statement;
    return overriding(statement, {
      bind: (...values: unknown[]) => {
        const bound = statement.bind(...values);
        return overriding(bound, {
          first: async (...args: unknown[]) => {
            done = true;
            await during();
            return (bound.first as (...a: unknown[]) => unknown)(...args);
          },
        });
      },
    });
  };
  return overriding(db, { prepare });
}

describe("campaign publishing under way", () => {
  it("a campaign rescheduled after the cron found it due is not started: it keeps its new date and mails no one now", async () => {
    const { panel, id } = await campaignToList({ draft: true });
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
    const later = scheduleIn(60 * 24 * 46);
    const racing = withBindings(env, {
      [`SHARD_${TEST_SHARD}`]: shardActingBeforeStart(async () => {
        const moved = await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { schedule_date: later });
        expect(moved.body).toMatchObject({ status: "scheduled", schedule_date: later });
      }),
    } as Partial<Env>);
    await publishDueBroadcasts(racing, Date.now());
    expect(await campaign(panel, id)).toMatchObject({ status: "scheduled", schedule_date: later, counters: { recipients: 0 } });
    expect(await outbox(panel)).toEqual([]);
  });
});

describe("campaign batch with the provider", () => {
  it("a campaign cancelled and deleted while a batch is being sent is archived, not deleted: its messages went out and its report stays", async () => {
    const { panel, id } = await campaignToList({ schedule_date: scheduleIn(60 * 24 * 45) });
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
