import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { admin, apiFor, createPanel, TEST_SHARD } from "../support/helpers";
import { keyOn, TWO } from "../support/partitions";
import { broadcastData, campaign, publish, rawMessage, toBase64, waitForImport } from "../support/broadcasts";

const ADA_ADDRESS = "ada@example.com";
import { asOperator, operatorWithRole } from "../support/operators";

describe("a campaign's test send", () => {
  it("sends one copy through the campaign's templates, personalised when the address is a contact, untracked, and moves no counter", async () => {
    const panel = await createPanel();
    const published = await publish(panel, await broadcastData());
    expect(published.body.success).toBe(true);
    const id: string = published.body.CampaignID;
    await waitForImport(panel, id);
    const before = (await campaign(panel, id)).counters;

    const marketer = await operatorWithRole(panel.id, "marketer");
    const sent = await asOperator(marketer, "POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: " Ada@Example.com " });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.message_id).toMatch(new RegExp(`^${id}\\.test\\.[0-9a-f]+$`));
    // An address that is no contact gets each merge tag's fallback.
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: "stranger@example.com" })).status).toBe(200);

    const copies = (await admin("GET", `/panels/${panel.id}/outbox?campaign=${id}`)).body.messages;
    expect(copies.map((m: any) => [m.to, m.subject])).toEqual([
      ["stranger@example.com", "[Test] Hello friend"],
      ["ada@example.com", "[Test] Hello Ada"],
    ]);
    const copy = (await admin("GET", `/panels/${panel.id}/outbox/${encodeURIComponent(sent.body.message_id)}`)).body;
    expect(copy.html).toContain("<p>Hello Ada, from Pune.</p>");
    // Links as written, no open pixel, no unsubscribe header: the reader is not a recipient.
    expect(copy.html).toContain('href="https://shop.example.com/sale?x=1&amp;y=2"');
    expect(copy.html).not.toContain("/t/o/");
    const raw = await rawMessage(panel, sent.body.message_id);
    expect(raw).toContain("X-Test-Send: 1");
    expect(raw).not.toContain("List-Unsubscribe");
    expect((await campaign(panel, id)).counters).toEqual(before);

    const log = (await admin("GET", `/panels/${panel.id}/audit?action=campaign.test_sent`)).body.entries;
    expect(log.map((e: any) => [e.target, e.actor.kind])).toEqual([
      [id, "admin_token"],
      [id, "operator"],
    ]);
    expect(log[1].actor.email).toBe(marketer.email);
    // A body that places {{UNSUBSCRIBE}} itself gets a dead link in a test copy, never the internal mark.
    const placed = await publish(panel, await broadcastData({ source_code: toBase64(`<p>Hi</p><a href="{{UNSUBSCRIBE}}">Leave</a> <a href="{{PREFERENCES}}">Choose</a>`) }));
    await waitForImport(panel, placed.body.CampaignID);
    const copyId = (await admin("POST", `/panels/${panel.id}/campaigns/${placed.body.CampaignID}/test`, { email: ADA_ADDRESS })).body.message_id;
    const placedCopy = (await admin("GET", `/panels/${panel.id}/outbox/${encodeURIComponent(copyId)}`)).body;
    expect(placedCopy.html).toContain(`<a href="#">Leave</a> <a href="#">Choose</a>`);
    expect(placedCopy.raw).not.toMatch(/\uE000|=EE=80=80/);
  });

  it("lists the outbox's copies to a viewer but opens one as sent (its unsubscribe links live) only to a marketer or owner", async () => {
    const panel = await createPanel();
    const published = await publish(panel, await broadcastData());
    const id: string = published.body.CampaignID;
    await waitForImport(panel, id);
    const messageId = (await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: ADA_ADDRESS })).body.message_id;
    const viewer = await operatorWithRole(panel.id, "viewer");
    const listed = await asOperator(viewer, "GET", `/panels/${panel.id}/outbox?campaign=${id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.messages.map((m: any) => m.id)).toEqual([messageId]);
    expect(listed.body.messages[0]).not.toHaveProperty("raw");
    const opened = await asOperator(viewer, "GET", `/panels/${panel.id}/outbox/${encodeURIComponent(messageId)}`);
    expect(opened.status).toBe(403);
    expect(opened.body).not.toHaveProperty("raw");
    expect(JSON.stringify(opened.body)).toContain("marketer");
    const marketer = await operatorWithRole(panel.id, "marketer");
    const read = await asOperator(marketer, "GET", `/panels/${panel.id}/outbox/${encodeURIComponent(messageId)}`);
    expect(read.status).toBe(200);
    expect(read.body.raw).toContain("Subject:");
  });

  it("refuses a bad address, an unknown campaign and a viewer, sending nothing", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const published = await publish(panel, await broadcastData());
    const id: string = published.body.CampaignID;
    await waitForImport(panel, id);

    const bad = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: "not an address" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("email");
    const missing = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, {});
    expect([missing.status, missing.body.errors[0].field]).toEqual([400, "email"]);
    const extra = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: "a@example.com", cc: "b@example.com" });
    expect(extra.status).toBe(400);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/nope/test`, { email: "a@example.com" })).status).toBe(404);
    expect((await admin("POST", `/panels/${other.id}/campaigns/${id}/test`, { email: "a@example.com" })).status).toBe(404);
    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "POST", `/panels/${panel.id}/campaigns/${id}/test`, { email: "a@example.com" })).status).toBe(403);

    expect((await admin("GET", `/panels/${panel.id}/outbox?campaign=${id}`)).body.messages).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/audit?action=campaign.test_sent`)).body.entries).toEqual([]);
  });

  it("fills a copy with the attributes of the contact on its key's partition, on the home's shard or another", async () => {
    const panel = await createPanel();
    expect((await admin("PUT", `/panels/${panel.id}/attributes/NAME`, { type: "string" })).status).toBe(200);
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    // SHARD_0 holds a partition only; TEST_SHARD is the panel's home.
    const [elsewhere, home] = [keyOn(panel.id, 0), keyOn(panel.id, TEST_SHARD)];
    for (const [key, name] of [[elsewhere, "Ada"], [home, "Bob"]]) expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key, NAME: name } })).status).toBe(200);
    const made = await admin("POST", `/panels/${panel.id}/campaigns`, { name: "Wave", subject: "Hello {{NAME|friend}}", html: "<p>Hi {{NAME|there}}</p>", sender_name: "Shop", sender_email: "shop@example.com", audience: { lists: [list] } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const id: string = made.body.id;

    const sent = await admin("POST", `/panels/${panel.id}/campaigns/${id}/test`, { emails: [elsewhere, home, "stranger@example.com"] });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const copies = (await admin("GET", `/panels/${panel.id}/outbox?campaign=${id}`)).body.messages;
    expect(copies.map((m: any) => [m.to, m.subject]).sort()).toEqual(
      [
        [elsewhere, "[Test] Hello Ada"],
        [home, "[Test] Hello Bob"],
        ["stranger@example.com", "[Test] Hello friend"],
      ].sort(),
    );
  });
});
