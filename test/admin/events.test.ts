import { describe, expect, it } from "vitest";
import { contactEvents, defineActivity, postBatch, profileEvents } from "../support/activity";
import { createPanel } from "../support/helpers";

describe("admin: a contact's events", () => {
  it("pages newest first with a cursor, without gaps or repeats", async () => {
    const panel = await createPanel();
    const id = await defineActivity(panel, "visit");
    // Two events share a time, so the cursor must also order by id.
    const times = ["240105000000", "240101000000", "240103000000", "240103000000", "240102000000"];
    const posted = await postBatch(panel.clientId, times.map((cts, i) => ({ activityid: id, identity: "pager@example.com", cts, guid: `p${i}` })));
    expect(posted.status).toBe(200);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await contactEvents(panel, "Pager@Example.com", `?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.contact).toBe("pager@example.com");
      seen.push(...page.body.events.map((e: any) => e.guid));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(["p0", "p3", "p2", "p4", "p1"]);
  });

  it("an unknown contact is 404, a malformed key or cursor 400", async () => {
    const panel = await createPanel();
    expect((await contactEvents(panel, "nobody@example.com")).status).toBe(404);
    expect((await contactEvents(panel, "not an email")).status).toBe(400);
    const id = await defineActivity(panel, "visit");
    await postBatch(panel.clientId, [{ activityid: id, identity: "c@example.com" }]);
    const bad = await contactEvents(panel, "c@example.com", "?cursor=zzz");
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("cursor");
    expect((await contactEvents(panel, "c@example.com", "?limit=0")).status).toBe(400);
  });

  it("an anonymous profile without events is an empty list", async () => {
    const panel = await createPanel();
    const result = await profileEvents(panel, "never-seen");
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ uniqueid: "never-seen", events: [], next_cursor: null });
  });
});
