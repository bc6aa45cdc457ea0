import { describe, expect, it } from "vitest";
import { estimateAudience } from "../../../src/services/broadcasts/audience-estimate";
import { wholeShards } from "../../../src/services/access/partitions";
import { suppressAddress } from "../../../src/store/suppressions";
import { admin, apiFor, createPanel, panelData } from "../../support/helpers";
import { asOperator, operatorWithRole } from "../../support/operators";

async function audiencePanel() {
  const panel = await createPanel();
  const api = apiFor(panel);
  const vip = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
  const staff = (await api("lists", "add", { listname: "Staff" })).body.listid as number;
  const add = (data: Record<string, unknown>, listid?: number) => api("contact", "add", { data, ...(listid ? { listid } : {}) });
  await add({ EMAIL: "ada@example.com", CITY: "Pune" });
  await add({ EMAIL: "bob@example.com", CITY: "Pune" }, staff);
  await add({ EMAIL: "cy@example.com", CITY: "Pune" });
  await add({ EMAIL: "dee@example.com", CITY: "Delhi" }, vip);
  await add({ EMAIL: "eve@example.com", CITY: "Delhi" });
  await add({ MOBILE: "+15550001", CITY: "Goa" }, staff);
  await suppressAddress(panelData, panel.id, "cy@example.com", "unsubscribe", null, 0);
  const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
  expect(segment.status).toBe(201);
  return { panel, vip, staff, pune: segment.body.id as string };
}

const audience = (a: Partial<Record<"lists" | "exclude_lists", number[]> & Record<"segments" | "exclude_segments", string[]>>) => ({
  lists: [],
  segments: [],
  exclude_lists: [],
  exclude_segments: [],
  ...a,
});

describe("the audience estimate", () => {
  it("counts exactly who publishing would reach: lists and segments, less exclusions, suppressed addresses and contacts without email", async () => {
    const { panel, vip, staff, pune } = await audiencePanel();
    const viewer = await operatorWithRole(panel.id, "viewer");
    const estimate = await asOperator(viewer, "POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: { segments: [pune], lists: [vip, staff], exclude_lists: [staff] } });
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    // Pune (ada, bob, cy) + VIP (dee) + Staff (bob, the contact without email), less Staff, less cy (suppressed).
    expect(estimate.body).toMatchObject({ count: 2, exact: true, exact_up_to: 100_000 });
    expect(Math.abs(Date.parse(estimate.body.counted_at) - Date.now())).toBeLessThan(60_000);
    const all = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: { segments: [pune], lists: [vip, staff] } });
    expect(all.body).toMatchObject({ count: 3, exact: true });
  });

  it("refuses an audience naming nothing or what the panel does not have, naming the field", async () => {
    const { panel } = await audiencePanel();
    const empty = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].field).toBe("audience");
    const foreign = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, { audience: { lists: [9999], segments: ["seg_nope"] } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors.map((e: any) => e.field)).toEqual(["audience.lists.0", "audience.segments.0"]);
    const missing = await admin("POST", `/panels/${panel.id}/campaigns/audience-estimate`, {});
    expect([missing.status, missing.body.errors[0].field]).toEqual([400, "audience"]);
  });

  it("past the exact cap estimates from the stored list counters and segment counts, less exclusions and suppressions, never below the cap", async () => {
    const { panel, vip, staff, pune } = await audiencePanel();
    const now = Date.now();
    // Reading only the members of what is included, or the panel's contacts in order: the same answers.
    for (const readMembersUpTo of [1000, 0]) {
      const tuning = { exactUpTo: 2, readMembersUpTo, suppressionsUpTo: 1000, suppressionsComparedUpTo: 1000 };
      // Exactly 3 (ada, bob, dee) would be reached; the count stops at 2 and estimates 1 (VIP) + 3 (Pune) - 1 suppressed.
      const over = await estimateAudience(wholeShards([panelData]), panel.id, audience({ lists: [vip], segments: [pune] }), now, tuning);
      expect(over).toEqual({ ok: true, value: { count: 3, exact: false, countedAt: now, exactUpTo: 2 } });
      // Exclusions are subtracted whole (their overlap is unknown), but the count already reached the cap.
      const floored = await estimateAudience(wholeShards([panelData]), panel.id, audience({ lists: [vip], segments: [pune], exclude_lists: [staff] }), now, tuning);
      expect(floored).toMatchObject({ ok: true, value: { count: 2, exact: false } });
      // Below the cap it is exact.
      const wide = { ...tuning, exactUpTo: 4 };
      expect(await estimateAudience(wholeShards([panelData]), panel.id, audience({ lists: [vip], segments: [pune] }), now, wide)).toMatchObject({ ok: true, value: { count: 3, exact: true } });
      const excluded = audience({ lists: [vip, staff], segments: [pune], exclude_lists: [staff] });
      expect(await estimateAudience(wholeShards([panelData]), panel.id, excluded, now, wide)).toMatchObject({ ok: true, value: { count: 2, exact: true } });
    }
  });
});
