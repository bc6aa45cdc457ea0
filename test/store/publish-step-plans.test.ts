import { describe, expect, it } from "vitest";
import { compileAudience } from "../../src/services/broadcasts/audience";
import { getCampaign, publishStep, startPublish } from "../../src/store/campaigns";
import { admin, apiFor, createPanel, panelData } from "../support/helpers";
import { planOf as planOnShard, recording, type Caught } from "../support/plans";

// Issue 42: an audience campaign's publish step reads the panel's own contacts through
// contacts_by_bucket (panel_id, bucket, id), from its cursor, never a range of the shard's
// contact ids (every panel's rows). The statements are the store's own, caught as a real step
// runs them on the shard, and planned there.

const planOf = (caught: Caught) => planOnShard(panelData, caught);

describe("an audience campaign's publish step", () => {
  it("finds its end and inserts its recipients through contacts_by_bucket, from its (bucket, id) cursor", async () => {
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
    const step = await publishStep(db, started, 10, 2, Date.now(), audience);
    expect(step).toMatchObject({ done: false, recipients: 2 });
    const end = caught.find((c) => c.sql.includes("OFFSET"))!;
    const insert = caught.find((c) => c.sql.includes("INSERT OR IGNORE INTO campaign_messages"))!;
    for (const statement of [end, insert]) {
      const plan = await planOf(statement);
      // The panel's entries from the cursor's bucket on, up to the range's last: an equality on
      // panel_id, a range on bucket (SQLite seeks by the row value's first column and checks the
      // id in the cursor's bucket as it reads, a bucket's worth of the panel's entries at most).
      expect(plan, statement.sql).toMatch(/SEARCH c(ontacts)? USING (COVERING )?INDEX contacts_by_bucket \(panel_id=\? AND (bucket>\? AND bucket<\?|\(bucket,id\)>\(\?,\?\))/);
      expect(plan, statement.sql).not.toMatch(/SCAN c(ontacts)?\b|TEMP B-TREE/);
    }
    // The insert walks the index alone (covering), then reads each contact by its id, in id order
    // (no sort): the rows in table order, the recipients' keys written in order.
    const insertPlan = await planOf(insert);
    expect(insertPlan, insert.sql).toMatch(/SEARCH contacts USING COVERING INDEX contacts_by_bucket/);
    expect(insertPlan, insert.sql).toMatch(/SEARCH c USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    // Read that way, the row values still bound the step exactly: the contact at its end is in it, the one at its start is not.
    const first = (await panelData.prepare("SELECT bucket, id FROM contacts WHERE panel_id = ? ORDER BY bucket, id LIMIT 1").bind(panel.id).first<{ bucket: number; id: number }>())!;
    const within = (after: readonly [number, number], to: readonly [number, number]) =>
      panelData
        .prepare("SELECT COUNT(*) AS n FROM contacts INDEXED BY contacts_by_bucket WHERE panel_id = ?1 AND (bucket, id) > (?2, ?3) AND (bucket, id) <= (?4, ?5)")
        .bind(panel.id, ...after, ...to)
        .first<number>("n");
    expect(await within([first.bucket, first.id - 1], [first.bucket, first.id])).toBe(1);
    expect(await within([first.bucket, first.id], [first.bucket, first.id])).toBe(0);
  });
});
