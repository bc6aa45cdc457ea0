import { describe, expect, it } from "vitest";
import { admin, apiFor, call, createPanel, panelSnapshot } from "../support/helpers";

const CONTROLS = ["\u0000", "\u0007", "\u001b", "\u007f", "\u0085", "\n"];
const controlError = (field: string) => ({ field, message: "must not contain control characters" });

describe("names refuse control characters (NUL, escapes, line breaks), naming the field", () => {
  it.each(CONTROLS.map((c) => [`U+${c.charCodeAt(0).toString(16).padStart(4, "0")}`, c]))("%s in list, attribute, activity, panel, user and webhook names", async (_label, control) => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const before = await panelSnapshot(panel.id);
    const list = await api("lists", "add", { listname: `Ne${control}ws` }, "json");
    expect(list.status).toBe(400);
    expect(list.body.errors).toEqual([controlError("listname")]);
    const renamed = await api("lists", "add", { listname: "Fine", desc: `a${control === "\n" ? "\u0000" : control}b` }, "json");
    expect(renamed.status).toBe(400);
    expect(renamed.body.errors).toEqual([controlError("desc")]);
    const attribute = await call(`/admin/v1/panels/${panel.id}/attributes/${encodeURIComponent(`SHOE${control}SIZE`)}`, {
      method: "PUT",
      headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
      body: JSON.stringify({ type: "string" }),
    });
    expect(attribute.status).toBe(400);
    expect(await panelSnapshot(panel.id)).toBe(before);

    const activity = await admin("POST", `/panels/${panel.id}/activities`, { name: `view${control}ed` });
    expect(activity.status).toBe(400);
    expect(activity.body.errors).toEqual([controlError("name")]);
    const param = await admin("POST", `/panels/${panel.id}/activities`, { name: "viewed", params: { [`na${control}me`]: "string" } });
    expect(param.status).toBe(400);
    expect((await admin("GET", `/panels/${panel.id}/activities`)).body.activities).toEqual([]);

    const panelName = await admin("PATCH", `/panels/${panel.id}`, { name: `Sh${control}op` });
    expect(panelName.status).toBe(400);
    expect(panelName.body.errors).toEqual([controlError("name")]);
    const newPanel = await admin("POST", "/panels", { name: `Sh${control}op` });
    expect(newPanel.status).toBe(400);
    const user = await admin("POST", `/panels/${panel.id}/users`, { email: "x@example.com", name: `A${control}da` });
    expect(user.status).toBe(400);
    expect(user.body.errors).toEqual([controlError("name")]);
    const webhook = await admin("POST", `/panels/${panel.id}/webhooks`, { label: `C${control}RM`, url: "https://hooks.example.com/x" });
    expect(webhook.status).toBe(400);
    expect(webhook.body.errors).toEqual([controlError("label")]);
  });

  it("free text keeps tabs and line breaks", async () => {
    const panel = await createPanel();
    const added = await apiFor(panel)("lists", "add", { listname: "Notes", desc: "line one\nline two\tand a tab" }, "json");
    expect(added.status).toBe(200);
  });
});
