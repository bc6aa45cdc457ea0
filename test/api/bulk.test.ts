import { beforeEach, describe, expect, it } from "vitest";
import { admin, apiFor, call, contactsOf, countRows, createPanel, panelSnapshot, receiver, type TestPanel, utf16le } from "../support/helpers";
import { downloadErrorReport, hostFile, importCsv as importCsvInto, importFinished } from "../support/imports";

let panel: TestPanel;
let api: ReturnType<typeof apiFor>;

beforeEach(async () => {
  panel = await createPanel();
  api = apiFor(panel);
});

function finished(jobid: string): Promise<any> {
  return importFinished(panel, jobid);
}

const host = hostFile;

function importCsv(csv: string | Uint8Array, params: Record<string, unknown> = {}): Promise<any> {
  return importCsvInto(panel, csv, params);
}

async function contact(key: string): Promise<Record<string, unknown> | undefined> {
  const viewed = await api("contact", "view", { data: key });
  return viewed.status === 200 ? viewed.body.contact : undefined;
}

function downloadReport(url: string, apiKey = panel.apiKey) {
  return downloadErrorReport(url, apiKey);
}

describe("contact/bulkupload (4.5)", () => {
  it("files as Excel and pandas save them: rows of empty cells skipped, Windows-1252 bytes and phone numbers in scientific notation refused per row, saying why", async () => {
    // "CSV (Comma delimited)" from Excel on Windows: é and ü as single bytes, not UTF-8.
    const latin1 = Uint8Array.from([..."EMAIL,NAME,CITY,MOBILE\r\nann@example.com,Ann,Pune,+919876500001\r\nrene@example.com,Ren"].map((c) => c.charCodeAt(0)).concat([0xe9], [...",Z"].map((c) => c.charCodeAt(0)), [0xfc], [..."rich,\r\n,,,\r\n  ,, ,\r\nexp@example.com,Exp,Goa,9.1987E+11\r\n"].map((c) => c.charCodeAt(0))));
    const started = await api("contact", "bulkupload", { path: await host(latin1) });
    const job = await finished(started.body.jobid);
    // The two blank rows are not rows: three counted, one imported.
    expect(job).toMatchObject({ status: "completed", total: 3, created: 1, failed: 2 });
    expect(await contact("rene@example.com")).toBeUndefined();
    expect(await contact("exp@example.com")).toBeUndefined();
    const report = await downloadReport(job.error_report);
    const lines = report.text.trim().split("\r\n");
    expect(lines[1]).toContain('NAME holds bytes that are not UTF-8 (Excel\'s ""CSV (Comma delimited)"" is Windows-1252): save the file as ""CSV UTF-8""');
    expect(lines[2]).toContain("MOBILE is a number Excel wrote in scientific notation");
    expect(lines[2]?.startsWith("6,")).toBe(true);
  });

  it("imports a CSV with a BOM, quoted fields, embedded commas, quotes and newlines, CRLF", async () => {
    const csv =
      "\uFEFFEmail,NAME,AGE,CITY\r\n" +
      '"Ada@Example.com","Lovelace, Ada",36,"Pune"\r\n' +
      'bo@example.com,"Bo ""The Bold""",41,"Goa\r\nNorth"\r\n' +
      "cy@example.com,Cy,,Delhi\r\n";
    const job = await importCsv(csv);
    expect(job).toMatchObject({ status: "completed", reason: null, total: 3, created: 3, updated: 0, failed: 0, error_report: null });
    expect(await contact("ada@example.com")).toEqual({ EMAIL: "ada@example.com", NAME: "Lovelace, Ada", AGE: 36, CITY: "Pune" });
    expect(await contact("bo@example.com")).toEqual({ EMAIL: "bo@example.com", NAME: 'Bo "The Bold"', AGE: 41, CITY: "Goa\r\nNorth" });
    expect(await contact("cy@example.com")).toEqual({ EMAIL: "cy@example.com", NAME: "Cy", CITY: "Delhi" });
  });

  it("merges into existing contacts and counts created and updated; a later duplicate row wins", async () => {
    await api("contact", "add", { data: { EMAIL: "old@example.com", NAME: "Old", CITY: "Pune" } });
    const job = await importCsv(
      "EMAIL,NAME,CITY\nold@example.com,Older,\nnew@example.com,First,Goa\nNEW@example.com,Second,\nnew@example.com,,Delhi\n",
    );
    expect(job).toMatchObject({ status: "completed", total: 4, created: 1, updated: 3, failed: 0 });
    // Empty cells change nothing; for each attribute the last row that gives it wins.
    expect(await contact("old@example.com")).toEqual({ EMAIL: "old@example.com", NAME: "Older", CITY: "Pune" });
    expect(await contact("new@example.com")).toEqual({ EMAIL: "new@example.com", NAME: "Second", CITY: "Delhi" });
    expect(await contactsOf(panel.id)).toHaveLength(2);
  });

  it("refuses a row whose EMAIL, not the primary key, needs SMTPUTF8; other EMAIL text is kept as before", async () => {
    const mobile = await createPanel({ primary_key: "MOBILE" });
    const job = await importCsvInto(mobile, "MOBILE,EMAIL,NAME\n+15550001,Chloé@example.com,Chloé\n+15550002,ada@bücher.example,Ada\n+15550003,n/a,Bo\n");
    expect(job).toMatchObject({ status: "completed", total: 3, created: 2, failed: 1 });
    const report = await downloadReport(job.error_report, mobile.apiKey);
    expect(report.text.trimEnd().split("\r\n")[1]).toBe(
      '2,EMAIL,"EMAIL has a non-ASCII local part (""chloé""): that needs SMTPUTF8, which the email provider does not support",+15550001,Chloé@example.com,Chloé',
    );
    const view = apiFor(mobile);
    expect((await view("contact", "view", { data: "+15550001" })).status).toBe(404);
    expect((await view("contact", "view", { data: "+15550002" })).body.contact.EMAIL).toBe("ada@bücher.example");
    expect((await view("contact", "view", { data: "+15550003" })).body.contact.EMAIL).toBe("n/a");
  });

  it("adds every imported contact to listid", async () => {
    const listid = (await api("lists", "add", { listname: "Imported" })).body.listid;
    await api("contact", "add", { data: { EMAIL: "already@example.com" } });
    const job = await importCsv("EMAIL\nalready@example.com\nfresh@example.com\nbad-address\n", { listid: String(listid) });
    expect(job).toMatchObject({ status: "completed", total: 3, created: 1, updated: 1, failed: 1, listid });
    const lists = (await api("lists", "getall")).body.lists;
    expect(lists.find((l: { id: number }) => l.id === listid).count).toBe(2);
    expect((await api("contact", "view", { data: "fresh@example.com" })).body.lists).toEqual([{ id: listid, listname: "Imported" }]);
  });

  it("skips bad rows of every kind, imports the rest and reports each refused row", async () => {
    await admin("PUT", `/panels/${panel.id}/attributes/SIGNUP`, { type: "date" });
    const csv = [
      "EMAIL,NAME,AGE,SIGNUP",
      "good@example.com,Good,30,2024-01-31",
      "not-an-email,Bad Key,30,",
      ",No Key,30,",
      "age@example.com,Age,thirty,",
      "date@example.com,Date,,2023-02-30",
      "short@example.com,Short",
      "long@example.com,Long,1,,extra",
      "",
      '"quote@example.com"x,Q,1,',
      "two@example.com,Two,2.5,31/01/2024",
      "also-good@example.com,,,",
      '=1+1,"=HYPERLINK(""http://evil.example/"",""click"")",@SUM(1),',
    ].join("\n");
    const job = await importCsv(`${csv}\n`);
    expect(job).toMatchObject({ status: "completed", total: 11, created: 2, updated: 0, failed: 9 });
    expect(job.error_report).toBe(`https://api.test/apiv2/jobs/${job.jobid}/errors.csv`);

    const report = await downloadReport(job.error_report);
    expect(report.status).toBe(200);
    expect(report.type).toMatch(/^text\/csv/);
    const lines = report.text.trimEnd().split("\r\n");
    expect(lines[0]).toBe("row,column,reason,EMAIL,NAME,AGE,SIGNUP");
    expect(lines.slice(1).map((line) => line.split(",").slice(0, 2))).toEqual([
      ["3", "EMAIL"],
      ["4", "EMAIL"],
      ["5", "AGE"],
      ["6", "SIGNUP"],
      ["7", ""],
      ["8", ""],
      ["10", ""],
      ["11", "AGE; SIGNUP"],
      ["13", "EMAIL; AGE"],
    ]);
    // Cells that start like a formula are echoed with a leading quote, so a spreadsheet shows them as text.
    expect(lines[9]).toMatch(/,'=1\+1,"'=HYPERLINK\(""http:\/\/evil\.example\/"",""click""\)",'@SUM\(1\),$/);
    expect(lines[1]).toBe('3,EMAIL,"EMAIL is not a valid email address: ""not-an-email""",not-an-email,Bad Key,30,');
    expect(lines[3]).toBe('5,AGE,"AGE must be an integer, not ""thirty""",age@example.com,Age,thirty,');
    expect(lines[5]).toBe("7,,the row has 2 fields; the header has 4,short@example.com,Short");
    expect(await contact("good@example.com")).toMatchObject({ AGE: 30, SIGNUP: "2024-01-31" });
    expect(await contact("also-good@example.com")).toEqual({ EMAIL: "also-good@example.com" });
    expect(await contact("age@example.com")).toBeUndefined();

    // The operator downloads the same report through the admin API.
    const viaAdmin = await call(`/admin/v1/panels/${panel.id}/jobs/${job.jobid}/errors.csv`, { headers: { authorization: "Bearer test-admin-token" } });
    expect(viaAdmin.status).toBe(200);
    expect(await viaAdmin.text()).toBe(report.text);
  });

  it("downloads a file served without Content-Length (chunked)", async () => {
    const bucket = receiver.bucket("chunked");
    const rows = Array.from({ length: 300 }, (_, i) => `c${i}@example.com,Name ${i}`).join("\n");
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "text/csv; charset=utf-8", "transfer-encoding": "chunked" }, body: `EMAIL,NAME\n${rows}\n` }]);
    const started = await api("contact", "bulkupload", { path: receiver.hookUrl(bucket) });
    const job = await finished(started.body.jobid);
    expect(job).toMatchObject({ status: "completed", total: 300, created: 300 });
    expect(await contact("c299@example.com")).toEqual({ EMAIL: "c299@example.com", NAME: "Name 299" });
  });

  it("sends the summary email and the callback once, with the contract's members", async () => {
    const bucket = receiver.bucket("callback");
    const job = await importCsv("EMAIL,AGE\nx@example.com,1\ny@example.com,old\n", {
      notifyemail: "Ops@Example.com, crm@example.com",
      callback: receiver.hookUrl(bucket),
    });
    expect(job).toMatchObject({ status: "completed", total: 2, created: 1, failed: 1 });
    expect(job.callback).toMatchObject({ url: receiver.hookUrl(bucket), state: "sent", http_status: 200, error: null });

    const received = await receiver.requests(bucket);
    expect(received).toHaveLength(1);
    expect(received[0]!.method).toBe("POST");
    expect(received[0]!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(received[0]!.body)).toEqual({
      jobid: job.jobid,
      status: "completed",
      total: 2,
      created: 1,
      updated: 0,
      failed: 1,
      error_report: job.error_report,
    });

    const mails = (await admin("GET", `/panels/${panel.id}/notifications?kind=import_summary`)).body.notifications;
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: ["ops@example.com", "crm@example.com"], status: "sent" });
    expect(mails[0].subject).toContain(`Contact import ${job.jobid} completed`);
    expect(mails[0].text).toContain("Created: 1");
    expect(mails[0].text).toContain(job.error_report);
  });

  it("logs a failing callback on the job without failing the job", async () => {
    const bucket = receiver.bucket("callback-500");
    await receiver.script(bucket, [{ status: 500, body: "down" }]);
    const job = await importCsv("EMAIL\nz@example.com\n", { callback: receiver.hookUrl(bucket) });
    expect(job).toMatchObject({ status: "completed", created: 1 });
    expect(job.callback).toMatchObject({ state: "failed", http_status: 500, error: "the callback answered HTTP 500" });
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("reports a callback that cannot be reached", async () => {
    const job = await importCsv("EMAIL\nw@example.com\n", { callback: "http://127.0.0.1:1/hook" });
    expect(job.status).toBe("completed");
    expect(job.callback.state).toBe("failed");
    expect(job.callback.error).toMatch(/could not connect/);
  });

  it.each([
    ["an unknown column", "EMAIL,NAME,SHOE_SIZE\na@example.com,A,42\n", /unknown column "SHOE_SIZE"/],
    ["no primary-key column", "NAME,CITY\nA,Pune\n", /primary-key column EMAIL is missing/],
    ["an empty file", "", /is empty/],
    ["only blank lines", "\uFEFF\r\n\r\n", /is empty/],
    ["only a header row", "EMAIL,NAME\r\n", /header row but no data rows/],
    ["only a header row and blank lines", "EMAIL,NAME\n\n\n", /header row but no data rows/],
    ["a semicolon-separated file (European Excel)", "EMAIL;NAME;CITY\r\na@example.com;Ann;Pune\r\n", /the header row is one column, "EMAIL;NAME;CITY": the file looks separated by semicolons/],
    ["a tab-separated file", "EMAIL\tNAME\na@example.com\tAnn\n", /looks separated by tabs/],
    ["a UTF-16 file (Excel's Unicode Text)", utf16le("EMAIL\tNAME\r\na@example.com\tAnn\r\n"), /^The file is not a CSV file: the file looks saved as UTF-16 \(Excel's "Unicode Text"\), and a CSV file is read as UTF-8: save it as "CSV UTF-8"$/],
    ["a comma-separated UTF-16 file", utf16le("EMAIL,NAME\r\na@example.com,Ann\r\n"), /the file looks saved as UTF-16/],
  ])("fails the whole job for %s, writing nothing", async (_what, csv, reason) => {
    const before = await panelSnapshot(panel.id);
    const bucket = receiver.bucket("failed");
    const job = await importCsv(csv, { callback: receiver.hookUrl(bucket) });
    expect(job).toMatchObject({ status: "failed", total: 0, created: 0, updated: 0, failed: 0, error_report: null });
    expect(job.reason).toMatch(reason);
    expect(await panelSnapshot(panel.id)).toBe(before);
    const [posted] = await receiver.requests(bucket);
    expect(JSON.parse(posted!.body)).toMatchObject({ jobid: job.jobid, status: "failed" });
  });

  it("fails the job when the file is missing (404)", async () => {
    const started = await api("contact", "bulkupload", { path: receiver.url(`/files/missing-${crypto.randomUUID()}.csv`) });
    const job = await finished(started.body.jobid);
    expect(job.status).toBe("failed");
    expect(job.reason).toMatch(/could not be downloaded: 127\.0\.0\.1:\d+ answered HTTP 404/);
  });

  it("fails the job when the host cannot be reached", async () => {
    const started = await api("contact", "bulkupload", { path: "http://127.0.0.1:1/contacts.csv" });
    const job = await finished(started.body.jobid);
    expect(job.status).toBe("failed");
    expect(job.reason).toMatch(/could not be downloaded: could not connect to 127\.0\.0\.1:1/);
  });

  it("fails the job for content that is not text", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const asImage = await finished((await api("contact", "bulkupload", { path: await host(png, "image/png") })).body.jobid);
    expect(asImage).toMatchObject({ status: "failed", reason: "The file is not a CSV file: it is served as image/png" });
    const asOctets = await finished((await api("contact", "bulkupload", { path: await host(png, "application/octet-stream") })).body.jobid);
    expect(asOctets).toMatchObject({ status: "failed", reason: "The file is not a CSV file: it holds binary data" });
    const page = await finished((await api("contact", "bulkupload", { path: await host("<!doctype html><p>Sign in</p>", "text/html; charset=utf-8") })).body.jobid);
    expect(page.reason).toBe("The file is not a CSV file: it is served as text/html");
    const zip = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 20, 0, 8, 0]);
    const asZip = await finished((await api("contact", "bulkupload", { path: await host(zip, "text/csv") })).body.jobid);
    expect(asZip.reason).toBe("The file is not a CSV file: it holds binary data");
  });

  it("refuses bad parameters at once, creating no job", async () => {
    const jobs = () => countRows("SELECT COUNT(*) AS n FROM import_jobs WHERE panel_id = ?", panel.id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, "path"],
      [{ path: "ftp://example.com/a.csv" }, "path"],
      [{ path: "not a url" }, "path"],
      [{ path: "https://user:pw@example.com/a.csv" }, "path"],
      [{ path: "https://example.com/a.csv", callback: "javascript:alert(1)" }, "callback"],
      [{ path: "https://example.com/a.csv", notifyemail: "nobody" }, "notifyemail"],
      [{ path: "https://example.com/a.csv", listid: "abc" }, "listid"],
    ];
    for (const [params, field] of cases) {
      const answer = await api("contact", "bulkupload", params);
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.body.result).toBe("Failed");
      expect(answer.body.errors[0].field).toBe(field);
    }
    const missingList = await api("contact", "bulkupload", { path: "https://example.com/a.csv", listid: "999999" });
    expect(missingList.status).toBe(404);
    expect(missingList.body.errors[0].field).toBe("listid");
    expect(await jobs()).toBe(0);
  });

  it("answers the job through bulkstatus and the admin route alike", async () => {
    const job = await importCsv("EMAIL\nv@example.com\n");
    const viaAdmin = await admin("GET", `/panels/${panel.id}/jobs/${job.jobid}`);
    expect(viaAdmin.status).toBe(200);
    expect(viaAdmin.body).toEqual(job);
    expect(job).toMatchObject({ progress: { bytes_done: 20, bytes_total: 20 }, sources: [{ bytes: 20 }] });
    expect(job.finished_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect((await api("contact", "bulkstatus", { data: "job_doesnotexist" })).status).toBe(404);
  });

  it("is described in /openapi.json", async () => {
    const doc = (await (await call("/openapi.json")).json()) as any;
    const titles = doc.paths["/apiv2"].post.requestBody.content["application/json"].schema.oneOf.map((a: { title: string }) => a.title);
    expect(titles).toEqual(expect.arrayContaining(["contact/bulkupload", "contact/bulkstatus"]));
    expect(doc.paths["/apiv2/jobs/{job}/errors.csv"].get).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/jobs/{job}"].get).toBeDefined();
  });

  it("keeps each panel's jobs and reports to itself", async () => {
    const job = await importCsv("EMAIL,AGE\nmine@example.com,1\nbad,2\n");
    const other = await createPanel();
    const otherApi = apiFor(other);

    const status = await otherApi("contact", "bulkstatus", { data: job.jobid });
    expect(status.status).toBe(404);
    expect(status.body.message).toBe(`No import job "${job.jobid}" in this panel`);
    expect((await admin("GET", `/panels/${other.id}/jobs/${job.jobid}`)).status).toBe(404);
    expect((await call(`/admin/v1/panels/${other.id}/jobs/${job.jobid}/errors.csv`, { headers: { authorization: "Bearer test-admin-token" } })).status).toBe(404);

    const report = await downloadReport(job.error_report, other.apiKey);
    expect(report.status).toBe(404);
    // The refused row of the other panel's report, not a random request id that may hold "bad".
    expect(report.text).not.toContain("bad,2");
    expect((await downloadReport(job.error_report, "mk_wrong")).status).toBe(401);
    const noKey = await call(new URL(job.error_report).pathname);
    expect(noKey.status).toBe(401);
    const bearer = await call(new URL(job.error_report).pathname, { headers: { authorization: `Bearer ${panel.apiKey}` } });
    expect(bearer.status).toBe(200);
  });
});
