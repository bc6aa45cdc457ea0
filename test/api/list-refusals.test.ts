import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_PANEL_UPLOAD_BYTES } from "../../src/domain/panel-screens";
import { problemError } from "../../src/lib/http/errors";
import { uploadIntoList } from "../../src/services/lists/import";
import { admin, apiFor, BASE, call, createPanel, panelData } from "../support/helpers";

// The lists services refuse in their own words; the envelope and the admin API each word the
// same refusal as CONTRACT has it (api/lists.ts, admin/lists.ts). These pin both wordings.

describe("a list refusal in the envelope's words", () => {
  it("names a missing list by id when the operation has one, else by listname; a taken name by listname", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("lists", "add", { listname: "Customers" });
    const taken = await api("lists", "add", { listname: "customers" });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ result: "Failed", message: 'listname: a list named "customers" already exists in this panel', errors: [{ field: "listname", message: "a list with this name already exists" }] });

    const edited = await api("lists", "edit", { id: 999999, listname: "Other" });
    expect(edited.status).toBe(404);
    expect(edited.body).toMatchObject({ result: "Failed", message: "id: no list with id 999999 in this panel", errors: [{ field: "id", message: "no such list" }] });

    for (const operation of ["delete", "emptylist"]) {
      const missing = await api("lists", operation, { listname: "Nobody" });
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ result: "Failed", message: 'listname: no list named "Nobody" in this panel', errors: [{ field: "listname", message: "no such list" }] });
    }
  });
});

describe("a list refusal in the admin API's words", () => {
  it("names a missing list by the path's id, with no field; a taken name by name", async () => {
    const panel = await createPanel();
    await admin("POST", `/panels/${panel.id}/lists`, { name: "Customers" });
    const taken = await admin("POST", `/panels/${panel.id}/lists`, { name: "customers" });
    expect(taken).toEqual({ status: 409, body: expect.objectContaining({ error: 'name: a list named "customers" already exists in this panel', errors: [{ field: "name", message: "a list with this name already exists" }] }) });

    const missing = [
      await admin("PATCH", `/panels/${panel.id}/lists/0999999`, { name: "Other" }),
      await admin("DELETE", `/panels/${panel.id}/lists/0999999`),
      await admin("GET", `/panels/${panel.id}/lists/0999999/members`),
      await admin("POST", `/panels/${panel.id}/lists/0999999/empty`),
      await admin("POST", `/panels/${panel.id}/lists/0999999/imports`, { url: "https://files.example.com/people.csv" }),
    ];
    for (const answer of missing) {
      expect(answer.status).toBe(404);
      expect(answer.body.error).toBe("No list with id 0999999 in this panel");
      expect(answer.body.errors ?? []).toEqual([]);
    }
  });

  it("refuses an upload without a file, an empty one and one too large", async () => {
    const panel = await createPanel();
    const list = await admin("POST", `/panels/${panel.id}/lists`, { name: "L" });
    const upload = (body: string) =>
      call(`/admin/v1/panels/${panel.id}/lists/${list.body.id}/uploads`, { method: "POST", headers: { origin: BASE, authorization: "Bearer test-admin-token" }, body });
    const empty = await upload("");
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: "file: is empty", errors: [{ field: "file", message: "is empty" }] });

    const file = (text: string) => new Blob([text]).stream();
    const tooLarge = await uploadIntoList(env, panelData, panel.id, list.body.id, { declaredBytes: Number.NaN, body: file("EMAIL\na@example.com\n"), name: "big.csv", maxBytes: 4 }, BASE);
    expect(tooLarge.ok).toBe(false);
    const answer = problemError(!tooLarge.ok ? tooLarge.problem : (undefined as never));
    expect({ status: answer.status, message: answer.message, errors: answer.errors }).toEqual({ status: 413, message: "file: larger than 4 bytes", errors: [{ field: "file", message: "too large" }] });
    expect((await env.FILES.list({ prefix: `panel-uploads/${panel.id}/` })).objects).toEqual([]);

    const declared = await uploadIntoList(env, panelData, panel.id, list.body.id, { declaredBytes: MAX_PANEL_UPLOAD_BYTES + 1, body: null, name: "big.csv", maxBytes: MAX_PANEL_UPLOAD_BYTES }, BASE);
    expect(!declared.ok && problemError(declared.problem).status).toBe(413);
    const noFile = await uploadIntoList(env, panelData, panel.id, list.body.id, { declaredBytes: Number.NaN, body: null, name: "x.csv", maxBytes: 4 }, BASE);
    expect(!noFile.ok && problemError(noFile.problem).message).toBe("file: is required: send the CSV file as the request body");
  });
});
