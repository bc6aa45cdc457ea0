import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, admin, apiFor, call, createPanel, jobFinished, panelSnapshot } from "../support/helpers";
import { hostFile, importCsv } from "../support/imports";

/** The panel's upload of `csv` into a list, with the mapping as its query carries it. */
async function upload(panelId: string, listId: number, csv: string, mapping?: unknown) {
  const query = new URLSearchParams({ name: "people.csv", ...(mapping === undefined ? {} : { mapping: JSON.stringify(mapping) }) });
  const response = await call(`/admin/v1/panels/${panelId}/lists/${listId}/uploads?${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "text/csv" },
    body: csv,
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe("panel imports with column mapping", () => {
  it("maps headers to attributes, creates a new attribute, skips a column, and keeps unmapped headers matched by name", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Mapped" })).body.id as number;
    const csv = "E-mail,Full name,Shoe size,Notes,CITY\nada@example.com,Ada L.,38,ignore me,Pune\nbob@example.com,Bob,big,,Delhi\n";
    const started = await upload(panel.id, list, csv, { "E-mail": "email", "full name": "NAME", "Shoe size": { new: "shoe_size", type: "integer" }, Notes: null });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const job = await jobFinished(panel, started.body.jobid);
    expect(job).toMatchObject({ status: "completed", total: 2, created: 1, failed: 1, listid: list });

    const attributes = (await admin("GET", `/panels/${panel.id}/attributes`)).body.attributes;
    expect(attributes).toContainEqual({ name: "SHOE_SIZE", type: "integer" });
    expect(attributes.map((a: any) => a.name)).not.toContain("NOTES");
    const ada = await apiFor(panel)("contact", "view", { data: "ada@example.com" });
    expect(ada.body.contact).toEqual({ EMAIL: "ada@example.com", NAME: "Ada L.", SHOE_SIZE: 38, CITY: "Pune" });
    // The refused row is reported under the attribute the column went to.
    const report = await call(`/admin/v1/panels/${panel.id}/jobs/${job.jobid}/errors.csv`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(await report.text()).toContain('3,SHOE_SIZE,"SHOE_SIZE must be an integer');
  });

  it("refuses a mapping to an unknown attribute (400 naming the column) and changes nothing", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Mapped" })).body.id as number;
    const before = await panelSnapshot(panel.id);
    const unknown = await upload(panel.id, list, "E-mail,Shoe\nada@example.com,38\n", { "E-mail": "EMAIL", Shoe: "SHOE" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([{ field: "mapping.Shoe", message: expect.stringMatching(/column "Shoe": no attribute named SHOE/) }]);
    const retyped = await upload(panel.id, list, "EMAIL,AGE\nada@example.com,38\n", { AGE: { new: "AGE", type: "string" } });
    expect(retyped.body.errors[0]).toMatchObject({ field: "mapping.AGE", message: expect.stringMatching(/exists already with type integer/) });
    const twice = await upload(panel.id, list, "a,b\n1,2\n", { a: "EMAIL", b: "email" });
    expect(twice.body.errors[0]).toMatchObject({ field: "mapping.b", message: expect.stringMatching(/both go to EMAIL/) });
    const shape = await upload(panel.id, list, "a\n1\n", { a: 12 });
    expect(shape.status).toBe(400);
    expect(shape.body.errors[0].field).toBe("mapping.a");
    const notJson = await call(`/admin/v1/panels/${panel.id}/lists/${list}/uploads?mapping=%7Bnope`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: "a\n1\n" });
    expect(((await notJson.json()) as any).errors[0].field).toBe("mapping");
    // The URL import takes the same mapping in its body.
    const byUrl = await admin("POST", `/panels/${panel.id}/lists/${list}/imports`, { url: await hostFile("x\n1\n"), mapping: { x: "NOPE" } });
    expect(byUrl.body.errors).toEqual([{ field: "mapping.x", message: expect.stringMatching(/no attribute named NOPE/) }]);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("fails the job, creating no attribute, when the mapping names a column the file lacks or the key is not mapped", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Mapped" })).body.id as number;
    const absent = await upload(panel.id, list, "EMAIL,NAME\nada@example.com,Ada\n", { Mail: "EMAIL", Extra: { new: "EXTRA", type: "string" } });
    const failed = await jobFinished(panel, absent.body.jobid);
    expect(failed).toMatchObject({ status: "failed", reason: expect.stringMatching(/the mapping names "Mail", "Extra", which the header row does not have/) });
    const keyless = await upload(panel.id, list, "E-mail,NAME\nada@example.com,Ada\n", { "E-mail": null });
    expect(await jobFinished(panel, keyless.body.jobid)).toMatchObject({ status: "failed", reason: expect.stringMatching(/primary-key column EMAIL is missing/) });
    expect((await admin("GET", `/panels/${panel.id}/attributes`)).body.attributes.map((a: any) => a.name)).not.toContain("EXTRA");
  });

  it("leaves the API's bulk upload as it was: headers name attributes", async () => {
    const panel = await createPanel();
    const job = await importCsv(panel, "E-mail,NAME\nada@example.com,Ada\n");
    expect(job).toMatchObject({ status: "failed", reason: expect.stringMatching(/unknown column "E-mail"/) });
  });
});

describe("import history", () => {
  it("lists a panel's imports newest first, API and panel alike, with counts and error report links, per panel and per list", async () => {
    const panel = await createPanel();
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "History" })).body.id as number;
    const fromApi = await importCsv(panel, "EMAIL,NAME\napi@example.com,Api\nbad,Row\n");
    const panelUpload = await upload(panel.id, list, "Mail\npanel@example.com\n", { Mail: "EMAIL" });
    await jobFinished(panel, panelUpload.body.jobid);

    const history = await admin("GET", `/panels/${panel.id}/imports`);
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    expect(history.body.imports).toEqual([
      expect.objectContaining({ jobid: panelUpload.body.jobid, via: "panel", status: "completed", list: { id: list, name: "History" }, files: ["people.csv"], mapped: true, created: 1, failed: 0, error_report: null }),
      expect.objectContaining({ jobid: fromApi.jobid, via: "api", status: "completed", list: null, mapped: false, total: 2, created: 1, failed: 1, error_report: `/admin/v1/panels/${panel.id}/jobs/${fromApi.jobid}/errors.csv` }),
    ]);
    const report = await call(history.body.imports[1].error_report, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(report.status).toBe(200);
    expect(await report.text()).toContain("bad");

    const ofList = await admin("GET", `/panels/${panel.id}/imports?list=${list}`);
    expect(ofList.body.imports.map((i: any) => i.jobid)).toEqual([panelUpload.body.jobid]);
    const first = await admin("GET", `/panels/${panel.id}/imports?limit=1`);
    expect(first.body.imports.map((i: any) => i.jobid)).toEqual([panelUpload.body.jobid]);
    const second = await admin("GET", `/panels/${panel.id}/imports?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.body).toEqual({ imports: [expect.objectContaining({ jobid: fromApi.jobid })], next_cursor: null });
    expect((await admin("GET", `/panels/${panel.id}/imports?cursor=nope`)).body.errors[0].field).toBe("cursor");
    // Another panel sees none of them.
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/imports`)).body.imports).toEqual([]);
  });
});
