import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { sendCampaignBatch } from "../../src/services/broadcasts/send";
import { emailProvider } from "../../src/services/channels/email/providers";
import { eraseArchivedEvents, eraseContact } from "../../src/services/contacts/erase";
import { journeyTimers } from "../../src/services/journeys/timers";
import { sendJourneyEmail } from "../../src/services/journeys/messages";
import { insertMessageStatement } from "../../src/store/journeys/messages";
import { liftFence, raiseFence } from "../../src/store/panel-move/triggers";
import { archiveOldEvents } from "../../src/services/segments/archived-events";
import { insertOutboxRecords } from "../../src/store/outbox";
import { outboxKey } from "../../src/services/channels/email/outbox";
import type { EmailStep } from "../../src/domain/journey";
import { bucketRangesOn, contactBucket, type Partition } from "../../src/domain/partitions";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { publishCampaign } from "../../src/store/campaigns/publish";
import { postActivity } from "../support/activity";
import { outbox, scheduled } from "../support/broadcasts";
import { withBindings } from "../support/cron";
import { archivedRows, placesNaming, seedEvents } from "../support/erasure";
import { admin, apiFor, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { act, cartPanel, MINUTE, startJourney } from "../support/journeys";
import { instancesOn, keysOn, settledOnBoth, shard0, textsOn, TWO } from "../support/partitions";

// A send through the outbox reads the contact's address, then stores its copy (.eml in R2, row
// in D1). An erasure coming between must still leave nothing of the address: the outbox keeps
// no copy of a message whose row the erasure deleted, and the erasure deletes the copies of the
// messages it deleted, by id, after its batch. Each test has its own address: the search for
// what names it reads every panel's data.

/** FILES as the test's env has it, with `put`, `list` and `delete` first handing the call to the hooks. */
function hookedFiles(hooks: {
  put?: (key: string) => Promise<void>;
  list?: (options: R2ListOptions | undefined) => Promise<void>;
  delete?: (keys: string[]) => Promise<void>;
}): R2Bucket {
  return {
    get: (key: string) => env.FILES.get(key),
    head: (key: string) => env.FILES.head(key),
    async delete(keys: string | string[]) {
      await hooks.delete?.([keys].flat());
      return env.FILES.delete(keys);
    },
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

/**
 * FILES whose first listing of the panel's broadcast files (an erasure's step 2, after it read
 * the outbox, before its batch) first runs `send`; `state.sent` tells whether it has. `onDelete`
 * sees each deletion first.
 */
function sendingAtBroadcastFiles(panel: TestPanel, send: () => Promise<void>, onDelete?: (keys: string[], sent: boolean) => Promise<void>) {
  const state = { sent: false };
  const files = hookedFiles({
    list: async (options) => {
      if (state.sent || !options?.prefix?.startsWith(`broadcasts/${panel.id}/`)) return;
      state.sent = true;
      await send();
    },
    ...(onDelete ? { delete: (keys: string[]) => onDelete(keys, state.sent) } : {}),
  });
  return { state, files };
}

/** An erasure asked for with the ADMIN_TOKEN, made by its request. */
const BY_ADMIN = { requester: { actorKind: "admin_token", actorId: null, actorEmail: null }, finisher: "request" } as const;

/** The panel's `contact.erased` audit entries, newest first, as the admin API shows them. */
async function erasedEntries(panel: TestPanel): Promise<Array<{ actor: Record<string, unknown>; target: string; detail: Record<string, unknown> }>> {
  const answer = await admin("GET", `/panels/${panel.id}/audit?action=contact.erased`);
  expect(answer.status).toBe(200);
  return answer.body.entries;
}

const DUE_EMAIL = {
  trigger: { type: "activity", activity: "add_to_cart" },
  steps: [
    { id: "pause", type: "delay", for: "1h" },
    { id: "send", type: "email", after: "pause", subject: "Still there?", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" },
  ],
};

const TWO_HOURS_ON = () => Date.now() + 2 * 60 * MINUTE;

/** The journey timers two hours on: the email due to `address` sent, its copy stored. */
const dueEmailSent = (panel: TestPanel, address: string) => async () => {
  await journeyTimers.run(env, TWO_HOURS_ON());
  expect((await outbox(panel)).map((m) => m.to)).toEqual([address]);
};

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

/** Adds Ada under an address of the partition on `shard` (SHARD_0 unless told) of a panel split by TWO; the address. */
async function adaOnShard(panel: TestPanel, tag: string, shard = 0): Promise<string> {
  const partition = TWO.find((p) => p.shard === shard)!;
  let n = 0;
  while (!inPartition(panel.id, `ada.partition.${tag}${n}@example.com`, partition)) n++;
  const address = `ada.partition.${tag}${n}@example.com`;
  await apiFor(panel)("contact", "add", { data: { EMAIL: address, NAME: "Ada" } });
  return address;
}

function inPartition(panelId: string, key: string, partition: Partition): boolean {
  const bucket = contactBucket(panelId, key);
  return partition.firstBucket <= bucket && bucket <= partition.lastBucket;
}

/**
 * The place of an erasure on a panel split by TWO of a contact on `shard` (SHARD_0 unless told),
 * whose request dies at that shard's first batch once `state.sent` (sendingAtBroadcastFiles):
 * after the other shard's batch.
 */
function diesAtOwnBatch(state: { sent: boolean }, shard = 0) {
  const [own, other] = shard === 0 ? [shard0, panelData] : [panelData, shard0];
  const dying = new Proxy(own, {
    get(target, name) {
      if (name === "batch" && state.sent) return () => Promise.reject(new Error("the request died"));
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const otherShard = shard === 0 ? TEST_SHARD : 0;
  return { db: { db: dying, buckets: bucketRangesOn(TWO, shard) }, home: panelData, others: [{ db: other, buckets: bucketRangesOn(TWO, otherShard) }] };
}

/**
 * A panel split by TWO whose erasure of Ada, on the home's partition (TEST_SHARD), was recorded
 * under way at `at` and died at the home's batch, after SHARD_0's: the cron's to finish.
 */
async function diedUnderWayOnHome(tag: string, at: number): Promise<{ panel: TestPanel; address: string }> {
  const panel = await createPanel();
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const address = await adaOnShard(panel, tag, TEST_SHARD);
  const { state, files } = sendingAtBroadcastFiles(panel, async () => {});
  await expect(eraseContact(withBindings(env, { FILES: files }), diesAtOwnBatch(state, TEST_SHARD), panel.id, address, at, BY_ADMIN)).rejects.toThrow("the request died");
  expect(await erasureStates(panel)).toEqual(["pending"]);
  return { panel, address };
}

/** The test shard (one panel's only shard), through which a request dies as it prepares a statement starting with `sql`. */
function diesPreparing(sqlStart: string): typeof panelData {
  return new Proxy(panelData, {
    get(target, name) {
      if (name === "prepare")
        return (sql: string) => {
          if (sql.startsWith(sqlStart)) throw new Error("the request died");
          return target.prepare(sql);
        };
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The states of the panel's erasures on the home (TEST_SHARD). */
const erasureStates = (panel: TestPanel) => textsOn(panelData, "SELECT state FROM contact_erasures WHERE panel_id = ? ORDER BY created_at", panel.id);

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
    const address = await adaOnShard(panel, "race");
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
    const { state, files } = sendingAtBroadcastFiles(panel, dueEmailSent(panel, address));
    const erasure = await eraseContact(withBindings(env, { FILES: files }), { db: { db: panelData, buckets: null }, home: panelData, others: [] }, panel.id, address, Date.now(), BY_ADMIN);
    expect(erasure).not.toBeNull();
    expect(state.sent).toBe(true);
    await nothingNames(address);
  });

  it("an erasure that dies right after its batch still has the copy stored meanwhile deleted, by the cron, and reads done only then", async () => {
    const address = "ada.died.race@example.com";
    const panel = await emailDueTo(address);

    // As above, the due email's copy is stored after the outbox was read; then the request dies
    // (the isolate is lost) as it turns to deleting the copies of the messages its batch deleted.
    const { state, files } = sendingAtBroadcastFiles(panel, dueEmailSent(panel, address), async (keys, sent) => {
      if (sent && keys.some((k) => k.startsWith(`outbox/${panel.id}/`))) throw new Error("the request died");
    });
    await expect(eraseContact(withBindings(env, { FILES: files }), { db: { db: panelData, buckets: null }, home: panelData, others: [] }, panel.id, address, Date.now(), BY_ADMIN)).rejects.toThrow(
      "the request died",
    );
    expect(state.sent).toBe(true);
    // A retry finds no contact to erase; the erasure recorded by the batch is not done yet.
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(address)}`)).status).toBe(404);
    const erasureId = (await panelData.prepare("SELECT id FROM contact_erasures WHERE panel_id = ?").bind(panel.id).first<string>("id"))!;
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erasureId}`)).body.state).toBe("archive");

    await eraseArchivedEvents.run(env, Date.now());
    expect(await outbox(panel)).toEqual([]);
    await nothingNames(address);
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erasureId}`)).body.state).toBe("done");
  });

  it("an erasure that dies between the other shards' batches and its own: the retry still deletes the copy of a message the first attempt deleted there", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    // A contact of SHARD_0's partition; the home (SHARD_1) still holds a message of it, as a
    // split's source does until its cleaning (decision 0047).
    const address = await adaOnShard(panel, "died");
    const contactId = (await shard0.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("id"))!;
    const msgid = "jin_splitsource.send";
    await panelData
      .prepare(
        `INSERT INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, created_at, bucket)
         VALUES (?1, ?2, 'jrn_split', 'jin_splitsource', 'send', 'email', ?3, ?4, '{}', 'sending', ?5, ?6)`,
      )
      .bind(msgid, panel.id, contactId, address, Date.now(), contactBucket(panel.id, address))
      .run();

    // Its send stores the copy after the erasure read the outbox; the request dies at its own
    // shard's batch, after the home's deleted that message (and the outbox row by address).
    const { state, files } = sendingAtBroadcastFiles(panel, async () => {
      const raw = `To: ${address}\r\nSubject: Hi\r\n\r\nHi Ada`;
      await env.FILES.put(outboxKey(panel.id, msgid), raw);
      const record = { id: msgid, panelId: panel.id, channel: "email", recipient: address, sender: "shop@example.com", subject: "Hi", campaignId: null };
      await insertOutboxRecords(panelData, [{ ...record, r2Key: outboxKey(panel.id, msgid), size: raw.length, createdAt: Date.now(), note: null, contactId }]);
    });
    await expect(eraseContact(withBindings(env, { FILES: files }), diesAtOwnBatch(state), panel.id, address, Date.now(), BY_ADMIN)).rejects.toThrow("the request died");
    expect(await panelData.prepare("SELECT COUNT(*) AS n FROM journey_messages WHERE msgid = ?").bind(msgid).first<number>("n")).toBe(0);

    // The erasure was recorded under way before the home's batch; the retry finishes that one.
    const underWay = await shard0.prepare("SELECT id FROM contact_erasures WHERE panel_id = ? AND state = 'pending'").bind(panel.id).first<string>("id");
    const retried = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(address)}`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ state: "done", erasure_id: underWay });
    await nothingNames(address);
  });

  it("an erasure that dies after the other shards' batches and is never retried is finished by the cron a few minutes on", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const address = await adaOnShard(panel, "unretried");
    // The request has deleted what the home held of her and dies at her own shard's batch.
    const { state, files } = sendingAtBroadcastFiles(panel, async () => {});
    await expect(eraseContact(withBindings(env, { FILES: files }), diesAtOwnBatch(state), panel.id, address, Date.now(), BY_ADMIN)).rejects.toThrow("the request died");
    const ada = () => shard0.prepare("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("n");
    expect(await ada()).toBe(1);

    // A request may still be under way: the cron leaves it alone for a few minutes.
    await eraseArchivedEvents.run(env, Date.now());
    expect(await ada()).toBe(1);
    await eraseArchivedEvents.run(env, Date.now() + 10 * MINUTE);
    expect(await ada()).toBe(0);
    const erasures = await shard0.prepare("SELECT id, state FROM contact_erasures WHERE panel_id = ?").bind(panel.id).all<{ id: string; state: string }>();
    expect(erasures.results.map((e) => e.state)).toEqual(["done"]);
    expect((await admin("GET", `/panels/${panel.id}/erasures/${erasures.results[0]!.id}`)).body.state).toBe("done");
    await nothingNames(address);
  });

  /** A contact on SHARD_0 of a panel on two shards whose erasure, requested by operator opr_dpo, died at its own shard's batch. */
  async function erasureByDpoDied(tag: string): Promise<{ panel: TestPanel; address: string; contactId: number }> {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const address = await adaOnShard(panel, tag);
    const contactId = (await shard0.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("id"))!;
    const operator = { actorKind: "operator", actorId: "opr_dpo", actorEmail: "dpo@example.com" } as const;
    const { state, files } = sendingAtBroadcastFiles(panel, async () => {});
    const by = { requester: operator, finisher: "request" } as const;
    await expect(eraseContact(withBindings(env, { FILES: files }), diesAtOwnBatch(state), panel.id, address, Date.now(), by)).rejects.toThrow("the request died");
    return { panel, address, contactId };
  }

  it("an erasure its request left after the other shards' batches is in the audit log once the cron finishes it, as its requester", async () => {
    const { panel, contactId } = await erasureByDpoDied("audited");
    expect(await erasedEntries(panel)).toEqual([]);

    await eraseArchivedEvents.run(env, Date.now() + 10 * MINUTE);
    await eraseArchivedEvents.run(env, Date.now() + 20 * MINUTE);
    const erasureId = (await shard0.prepare("SELECT id FROM contact_erasures WHERE panel_id = ?").bind(panel.id).first<string>("id"))!;
    expect(await erasedEntries(panel)).toEqual([
      expect.objectContaining({ actor: { kind: "operator", id: "opr_dpo", email: "dpo@example.com" }, target: String(contactId), detail: { erasure_id: erasureId, finished_by: "cron" } }),
    ]);
  });

  it("an erasure one operator's request left under way and another's retry finished: the entry names the requester and who finished it", async () => {
    const { panel, address, contactId } = await erasureByDpoDied("retried");
    // The deployment's admin token retries it.
    const retried = await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(address)}`);
    expect(retried.status).toBe(200);
    expect(await erasedEntries(panel)).toEqual([
      expect.objectContaining({
        actor: { kind: "operator", id: "opr_dpo", email: "dpo@example.com" },
        target: String(contactId),
        detail: { erasure_id: retried.body.erasure_id, finished_by: { kind: "admin_token" } },
      }),
    ]);
  });

  it.each([
    ["before its audit entry", "INSERT INTO audit_log", { written_by: "cron" }],
    ["after its audit entry, before marking its record audited", "UPDATE contact_erasures SET audited_at", {}],
  ])("an erasure whose request dies after its own batch, %s: the retry (404) writes nothing, one entry in the end", async (_, dyingAt, detail) => {
    const address = `ada.unaudited.${dyingAt.split(" ")[0]!.toLowerCase()}@example.com`;
    const panel = await createPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: address } });
    const contactId = (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, address).first<number>("id"))!;
    // The panel's one shard, whose statement `dyingAt` is the request's last.
    const dying = diesPreparing(dyingAt);
    const erased = await eraseContact(env, { db: { db: dying, buckets: null }, home: dying, others: [] }, panel.id, address, Date.now(), BY_ADMIN).catch((error: Error) => error.message);
    expect(await keysOn(panelData, panel.id)).toEqual([]);

    expect((await admin("DELETE", `/panels/${panel.id}/contacts/${encodeURIComponent(address)}`)).status).toBe(404);
    await eraseArchivedEvents.run(env, Date.now() + 10 * MINUTE);
    await eraseArchivedEvents.run(env, Date.now() + 20 * MINUTE);
    const erasureId = (await panelData.prepare("SELECT id FROM contact_erasures WHERE panel_id = ?").bind(panel.id).first<string>("id"))!;
    expect(await erasedEntries(panel)).toEqual([expect.objectContaining({ actor: { kind: "admin_token" }, target: String(contactId), detail: { erasure_id: erasureId, ...detail } })]);
    expect(erased).toBe("the request died");
  });

  it("an erasure whose request dies withdrawing segment exports: the cron withdraws those requested before its contact was gone, then writes the entry", async () => {
    const address = "ada.exported@example.com";
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const email of [address, "bob.exported@example.com"]) expect((await api("contact", "add", { data: { EMAIL: email } })).body.result).toBe("Success");
    const segment = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Everyone", match: { all: [{ attribute: "EMAIL", op: "contains", value: "@example.com" }] } })).body;
    const exported = await admin("POST", `/panels/${panel.id}/segments/${segment.id}/export`);
    const job = async () => (await admin("GET", `/panels/${panel.id}/jobs/${exported.body.jobid}`)).body;
    for (let i = 0; i < 100 && (await job()).status !== "completed"; i++) await new Promise((r) => setTimeout(r, 100));
    const parts = JSON.parse((await textsOn(panelData, "SELECT parts FROM segment_exports WHERE id = ?", exported.body.jobid))[0]!) as Array<{ key: string }>;
    expect(parts.length).toBeGreaterThan(0);
    expect((await Promise.all(parts.map(async (p) => (await env.FILES.get(p.key))!.text()))).join("")).toContain(address);

    const erasedAt = Date.now();
    const erased = await eraseContact(env, { db: { db: panelData, buckets: null }, home: diesPreparing("SELECT parts FROM segment_exports"), others: [] }, panel.id, address, erasedAt, BY_ADMIN).catch((error: Error) => error.message);
    expect(erased).toBe("the request died");
    expect(await keysOn(panelData, panel.id)).toEqual(["bob.exported@example.com"]);
    // An export requested once the request was long over (its contact gone) lists bob only: it stays.
    const later = { id: "sxp_after_the_erasure", key: `exports/${panel.id}/after-the-erasure.csv` };
    await env.FILES.put(later.key, "EMAIL\nbob.exported@example.com\n");
    await panelData
      .prepare("INSERT INTO segment_exports (id, panel_id, segment_id, columns, status, parts, created_at, updated_at) VALUES (?, ?, ?, '[\"EMAIL\"]', 'completed', ?, ?, ?)")
      .bind(later.id, panel.id, segment.id, JSON.stringify([{ key: later.key, size: 31 }]), erasedAt + 6 * MINUTE, erasedAt + 6 * MINUTE)
      .run();

    await eraseArchivedEvents.run(env, erasedAt + 10 * MINUTE);
    expect((await job()).status).toBe("failed");
    for (const part of parts) expect(await env.FILES.head(part.key)).toBeNull();
    await nothingNames(address);
    expect(await textsOn(panelData, "SELECT status FROM segment_exports WHERE id = ?", later.id)).toEqual(["completed"]);
    expect(await env.FILES.head(later.key)).not.toBeNull();
    const erasureId = (await panelData.prepare("SELECT id FROM contact_erasures WHERE panel_id = ?").bind(panel.id).first<string>("id"))!;
    expect(await erasedEntries(panel)).toEqual([expect.objectContaining({ actor: { kind: "admin_token" }, detail: { erasure_id: erasureId, written_by: "cron" } })]);
  });

  it("an unfinished erasure whose rerun fails (its panel fenced by a move's pause) is tried again next run; the shard's other erasures and archive rewrites go on", async () => {
    const { panel: fenced, address: fencedAddress } = await diedUnderWayOnHome("fenced", Date.now() - 20 * MINUTE);
    const { panel: other, address: otherAddress } = await diedUnderWayOnHome("unfenced", Date.now() - 15 * MINUTE);
    // On the same shard, an erasure of another panel whose request died rewriting its archived days.
    const archived = await createPanel();
    expect((await admin("PATCH", `/panels/${archived.id}`, { event_retention_days: 30 })).status).toBe(200);
    const archivedAddress = "ada.archived.race@example.com";
    await apiFor(archived)("contact", "add", { data: { EMAIL: archivedAddress } });
    await seedEvents(archived, archivedAddress, 2, 0);
    for (let i = 0; i < 2; i++) await archiveOldEvents.run(env, Date.now());
    expect(await archivedRows(archived.id)).toHaveLength(2);
    const dying = hookedFiles({ put: async (key) => (key.startsWith(`events/${archived.id}/`) ? Promise.reject(new Error("the request died")) : undefined) });
    const plain = { db: { db: panelData, buckets: null }, home: panelData, others: [] };
    await expect(eraseContact(withBindings(env, { FILES: dying }), plain, archived.id, archivedAddress, Date.now(), BY_ADMIN)).rejects.toThrow("the request died");

    // The fenced panel's move is in its pause: the rerun's batch on the home is refused.
    await raiseFence(panelData, fenced.id);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await eraseArchivedEvents.run(env, Date.now());
      expect(logged.mock.calls.map((call) => String(call[0]))).toContainEqual(expect.stringMatching(new RegExp(`^erasure era_\\S+ of panel ${fenced.id}: not finished`)));
    } finally {
      logged.mockRestore();
      await liftFence(panelData, fenced.id);
    }
    expect(await erasureStates(fenced)).toEqual(["pending"]);
    expect(await keysOn(panelData, fenced.id)).toEqual([fencedAddress]);
    expect(await erasureStates(other)).toEqual(["done"]);
    expect(await keysOn(panelData, other.id)).toEqual([]);
    expect(await erasureStates(archived)).toEqual(["done"]);
    expect(await archivedRows(archived.id)).toEqual([]);

    // The fence lifted, the next run finishes it.
    await eraseArchivedEvents.run(env, Date.now());
    expect(await erasureStates(fenced)).toEqual(["done"]);
    await nothingNames(fencedAddress);
    await nothingNames(otherAddress);
    await nothingNames(archivedAddress);
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
