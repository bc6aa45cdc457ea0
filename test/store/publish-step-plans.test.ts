import { describe, expect, it } from "vitest";
import { compileAudience } from "../../src/services/broadcasts/audience";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { publishStep, startPublish } from "../../src/store/campaigns/publish";
import { admin, apiFor, createPanel, panelData } from "../support/helpers";
import { planOf as planOnShard, recording, type Caught } from "../support/plans";

// Issue 42: an audience campaign's publish step reads the panel's own contacts through
// contacts_by_panel (panel_id, id), from its cursor, never a range of the shard's contact ids
// (every panel's rows), and never sorts. The statements are the store's own, caught as a real
// step runs them on the shard, and planned there.

const planOf = (caught: Caught) => planOnShard(panelData, caught);

describe("an audience campaign's publish step", () => {
  it("finds its end and inserts its recipients through contacts_by_panel, from its cursor, in id order", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const readers = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    for (let i = 0; i < 3; i++) await api("contact", "add", { data: { EMAIL: `p${i}@example.com` }, listid: readers });
    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Plan",
      subject: "Hi",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hi</p>",
      audience: { lists: [readers], exclude_segments: [] },
      draft: true,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    await panelData.prepare("UPDATE campaigns SET status = 'scheduled' WHERE id = ?").bind(id).run();
    const started = (await startPublish(panelData, (await getCampaign(panelData, panel.id, id))!, Date.now()))!;
    const audience = await compileAudience(panelData, panel.id, started.audience!, Date.now(), "probe");

    const { db, caught } = recording(panelData);
    const step = await publishStep(db, started, 10, 2, Date.now(), audience, { buckets: [[0, 4095]], part: false });
    expect(step).toMatchObject({ done: false, recipients: 2 });
    const end = caught.find((c) => c.sql.includes("OFFSET"))!;
    const insert = caught.find((c) => c.sql.includes("INSERT OR IGNORE INTO campaign_messages"))!;
    for (const statement of [end, insert]) {
      const plan = await planOf(statement);
      // The panel's entries from the cursor on, up to the step's (or the publish's) last id.
      expect(plan, statement.sql).toMatch(/SEARCH c(ontacts)? USING (COVERING )?INDEX contacts_by_panel \(panel_id=\? AND (id|rowid)>\? AND (id|rowid)<\?\)/);
      expect(plan, statement.sql).not.toMatch(/SCAN c(ontacts)?\b|TEMP B-TREE/);
    }
    // The step's end is found in the index alone.
    expect(await planOf(end), end.sql).toMatch(/COVERING INDEX contacts_by_panel/);
  });
});
