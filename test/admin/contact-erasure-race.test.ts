import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { sendCampaignBatch } from "../../src/services/broadcasts/send";
import { emailProvider } from "../../src/services/channels/email/providers";
import { eraseContact } from "../../src/services/contacts/erase";
import { journeyTimers } from "../../src/services/journeys/timers";
import { sendJourneyEmail } from "../../src/services/journeys/messages";
import { insertMessageStatement } from "../../src/store/journeys/messages";
import type { EmailStep } from "../../src/domain/journey";
import { contactBucket } from "../../src/domain/partitions";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { publishCampaign } from "../../src/store/campaigns/publish";
import { postActivity } from "../support/activity";
import { outbox, scheduled } from "../support/broadcasts";
import { withBindings } from "../support/cron";
import { placesNaming } from "../support/erasure";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";
import { act, cartPanel, MINUTE, startJourney } from "../support/journeys";
import { instancesOn, settledOnBoth, shard0, TWO } from "../support/partitions";

// A send through the outbox reads the contact's address, then stores its copy (.eml in R2, row
// in D1). An erasure coming between must still leave nothing of the address: the outbox keeps
// no copy of a message whose row the erasure deleted, and the erasure deletes the copies of the
// messages it deleted, by id, after its batch. Each test has its own address: the search for
// what names it reads every panel's data.

/** FILES as the test's env has it, with `put` and `list` first handing the call to the hooks. */
function hookedFiles(hooks: { put?: (key: string) => Promise<void>; list?: (options: R2ListOptions | undefined) => Promise<void> }): R2Bucket {
  return {
    get: (key: string) => env.FILES.get(key),
    head: (key: string) => env.FILES.head(key),
    delete: (keys: string | string[]) => env.FILES.delete(keys),
    async list(options?: R2ListOptions) {
      await hooks.list?.(options);
      return env.FILES.list(options);
    },
    async put(key: string, body: any, options: any) {
      await hooks.put?.(key);
      return env.FILES.put(key, body, options);
    },
  } as unknown as R2Bucket;
}

/** Erases `key` through the admin API the first time `erase` is called; `state.erased` tells whether it was. */
function eraseOnce(panel: TestPanel, key: string) {
  const state = { erased: false };
  const erase = async () => {
    if (state.erased) return;
    state.erased = true;
    const answer = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(key)}`);
    expect(answer.status).toBe(200);
  };
  return { state, erase };
}

const DUE_EMAIL = {
  trigger: { type: "activity", activity: "add_to_cart" },
  steps: [
    { id: "pause", type: "delay", for: "1h" },
    { id: "send", type: "email", after: "pause", subject: "Still there?", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" },
  ],
};

const TWO_HOURS_ON = () => Date.now() + 2 * 60 * MINUTE;

/** A panel whose journey has an email due to `address` in an hour. */
async function emailDueTo(address: string): Promise<TestPanel> {
  const panel = await createPanel();
  const { cart } = await cartPanel(panel);
  await apiFor(panel)("contact", "add", { data: { EMAIL: address, NAME: "Ada" } });
  await startJourney(panel, DUE_EMAIL);
  await act(panel, cart, address);
  return panel;
}

/** The journey timers two hours on, `address` erased as the first outbox copy of the panel is about to be stored. */
async function timersErasingAtTheCopy(panel: TestPanel, address: string): Promise<void> {
  const { state, erase } = eraseOnce(panel, address);
  const files = hookedFiles({ put: async (key) => (key.startsWith(`outbox/${panel.id}/`) ? erase() : undefined) });
  await journeyTimers.run(withBindings(env, { FILES: files }), TWO_HOURS_ON());
  expect(state.erased).toBe(true);
}

async function nothingNames(address: string): Promise<void> {
  const search = await placesNaming((text) => text.toLowerCase().includes(address));
  expect(search.found).toEqual([]);
}

describe("erasure racing a send through the outbox", () => {
  it("a contact erased while its journey's due email is being continued is not mailed, and nothing keeps its address", async () => {
    const address = "ada.race@example.com";
    const panel = await emailDueTo(address);
    // The timer has read ada's due point and her attributes; the operator erases her before the mail's copy is stored.
    await timersErasingAtTheCopy(panel, address);
    await nothingNames(address);
  });

  it("a contact erased while a campaign's batch is being sent to it keeps no copy; the batch's other copies stay", async () => {
    const address = "ada.campaign.race@example.com";
    const panel = await createPanel();
    const { id } = await scheduled(panel, `EMAIL,NAME\n${address},Ada\nbob.race@example.com,Bob\n`, {}, 171);
    expect(await publishCampaign(panelData, (await getCampaign(panelData, panel.id, id))!, 100, Date.now())).toBe(2);
    const ada = (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("id"))!;

    // Rendered, addressed and handed to the outbox; erased as its copy is about to be stored.
    const { state, erase } = eraseOnce(panel, address);
    const files = hookedFiles({ put: async (key) => (key === `outbox/${panel.id}/${id}.${ada}.eml` ? erase() : undefined) });
    const sending = withBindings(env, { FILES: files });
    await sendCampaignBatch(sending, emailProvider(sending), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 });
    expect(state.erased).toBe(true);
    await nothingNames(address);
    expect((await outbox(panel)).map((m) => m.to)).toEqual(["bob.race@example.com"]);
  });

  it("on a partition's shard (decision 0038), the copy recorded on the home is taken back once the message row is found gone", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    // An address of SHARD_0's partition: the contact and its message there, the outbox on the home (SHARD_1).
    const onShard0 = TWO.find((p) => p.shard === 0)!;
    let n = 0;
    while (contactBucket(panel.id, `ada.partition.race${n}@example.com`) > onShard0.lastBucket) n++;
    const address = `ada.partition.race${n}@example.com`;
    await apiFor(panel)("contact", "add", { data: { EMAIL: address, NAME: "Ada" } });
    await startJourney(panel, DUE_EMAIL);
    expect((await postActivity(panel.clientId, { activityid: cart, identity: address })).status).toBe(200);
    await settledOnBoth(panel.id);
    expect(await instancesOn(shard0, panel.id)).toEqual([`${address}: active`]);

    await timersErasingAtTheCopy(panel, address);
    await nothingNames(address);
  });

  it("a copy stored whole after the erasure read the outbox, before its batch, goes with the messages the batch deleted", async () => {
    const address = "ada.stored.race@example.com";
    const panel = await emailDueTo(address);

    // The erasure has deleted the copies the outbox listed and turns to the broadcast files; the
    // timer sends the due email then, its copy and row stored while her message row is still there.
    let sent = false;
    const files = hookedFiles({
      list: async (options) => {
        if (sent || !options?.prefix?.startsWith(`broadcasts/${panel.id}/`)) return;
        sent = true;
        await journeyTimers.run(env, TWO_HOURS_ON());
        expect((await outbox(panel)).map((m) => m.to)).toEqual([address]);
      },
    });
    const erasure = await eraseContact(withBindings(env, { FILES: files }), { db: panelData, home: panelData, others: [] }, panel.id, address, Date.now());
    expect(erasure).not.toBeNull();
    expect(sent).toBe(true);
    await nothingNames(address);
  });

  it("a journey step that read its contact before the erasure records and sends nothing after it: a message is recorded only while its contact is there", async () => {
    const address = "ada.step.race@example.com";
    const panel = await createPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: address, NAME: "Ada", MOBILE: "+14155550199" } });
    const contactId = (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("id"))!;
    const step = DUE_EMAIL.steps[1] as unknown as EmailStep;
    const message = (msgid: string, channel: "email" | "sms", recipient: string) => ({
      msgid,
      panelId: panel.id,
      journeyId: "jrn_race",
      instanceId: msgid.split(".")[0]!,
      stepId: "send",
      channel,
      contactId,
      recipient,
      content: { body: "Hi Ada" },
      status: "sending" as const,
      createdAt: Date.now(),
    });
    // The step has read the contact (its address and number are in the messages); the erasure lands now.
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(address)}`)).status).toBe(200);
    await sendJourneyEmail(env, message("jin_steprace.send", "email", address), step, { NAME: "Ada" }, Date.now());
    await insertMessageStatement(panelData, message("jin_steprace.sms", "sms", "14155550199")).run();
    expect(await outbox(panel)).toEqual([]);
    expect(await panelData.prepare("SELECT COUNT(*) AS n FROM journey_messages WHERE panel_id = ?").bind(panel.id).first<number>("n")).toBe(0);
    await nothingNames(address);
  });
});
