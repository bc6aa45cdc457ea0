import { describe, expect, it } from "vitest";
import { panelSegments } from "../../../src/services/segments/panel-segments";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, panelData } from "../../support/helpers";

// The per-isolate answer to "which saved segments has this panel" (panel-segments.ts).
describe("saved segments of a panel, as an isolate keeps them", () => {
  it("are read again at once after a save or a delete in this isolate, so the next contact write joins", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "early@example.com", CITY: "Delhi" } });
    expect(await panelSegments(panelData, panel.id)).toEqual([]);

    const created = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(created.status).toBe(201);
    expect((await panelSegments(panelData, panel.id)).map((s) => s.id)).toEqual([created.body.id]);
    await api("contact", "add", { data: { EMAIL: "later@example.com", CITY: "Pune" } });
    const membersOf = async () =>
      (await panelData.prepare("SELECT COUNT(*) AS n FROM segment_members WHERE segment_id = ?").bind(created.body.id).first<{ n: number }>())!.n;
    // The membership is written after the answer (waitUntil); well inside the cache's 10 s.
    const deadline = Date.now() + 3_000;
    while ((await membersOf()) < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await membersOf()).toBe(1);

    const deleted = await call(`/admin/v1/panels/${panel.id}/segments/${created.body.id}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(deleted.status).toBe(204);
    expect(await panelSegments(panelData, panel.id)).toEqual([]);
  });
});
