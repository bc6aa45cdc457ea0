import { env } from "cloudflare:workers";
import { zipSync, strToU8 } from "fflate";
import { MAX_UNZIPPED_BYTES } from "../../src/services/broadcasts/contacts-source";
import { describe, expect, it } from "vitest";
import { md5Hex } from "../../src/services/broadcasts/contacts-source";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { admin, apiFor, call, countRows, createPanel, envelope, panelSnapshot, receiver, type TestPanel, panelData, utf16le } from "../support/helpers";
import { broadcastData, campaign, host, notificationsOf, publish, scheduleIn, waitForImport } from "../support/broadcasts";

/** The zip with every entry's uncompressed size (local header and central directory) rewritten to `size`. */
function claimSize(zip: Uint8Array, size: number): Uint8Array {
  const out = zip.slice();
  const view = new DataView(out.buffer);
  for (let i = 0; i + 4 <= out.length; i++) {
    const signature = view.getUint32(i, true);
    if (signature === 0x04034b50) view.setUint32(i + 22, size, true);
    if (signature === 0x02014b50) view.setUint32(i + 24, size, true);
  }
  return out;
}

const BODY_KEYS = ["CampaignID", "RequestID", "message", "payload", "success"];

async function campaignCount(panel: TestPanel): Promise<number> {
  return countRows("SELECT COUNT(*) AS n FROM campaigns WHERE panel_id = ?", panel.id);
}

/** Asserts a 4.10 failure: the 2.6 body, success false, empty CampaignID, the rule named, nothing written. */
async function expectRefused(panel: TestPanel, data: Record<string, unknown>, pattern: RegExp, status = 400) {
  const before = await panelSnapshot(panel.id);
  const response = await publish(panel, data);
  expect(Object.keys(response.body).sort()).toEqual(BODY_KEYS);
  expect(response.body).toMatchObject({ success: false, CampaignID: "" });
  expect(response.body.message).toMatch(pattern);
  expect(response.status).toBe(status);
  expect(await panelSnapshot(panel.id)).toBe(before);
  expect(await campaignCount(panel)).toBe(0);
  return response.body;
}

describe("4.10 upload_contact_and_publish: success", () => {
  it("creates the list, imports the contacts, schedules the campaign and answers the 2.6 body", async () => {
    const panel = await createPanel();
    const data = await broadcastData();
    const response = await publish(panel, data);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(BODY_KEYS);
    expect(response.body).toMatchObject({ success: true, payload: data });
    expect(response.body.RequestID).toMatch(/^[0-9a-f]{32}$/);
    expect(response.body.CampaignID).toMatch(/^cmp_/);
    expect(await waitForImport(panel, response.body.CampaignID)).toMatchObject({ status: "completed", total: 2 });

    const lists = (await apiFor(panel)("lists", "getall")).body.lists;
    expect(lists).toEqual([expect.objectContaining({ listname: data.list_name, count: 2 })]);
    const ada = await apiFor(panel)("contact", "view", { data: "ada@example.com" });
    expect(ada.body.contact).toEqual({ EMAIL: "ada@example.com", NAME: "Ada", CITY: "Pune" });

    const created = await campaign(panel, response.body.CampaignID);
    expect(created).toMatchObject({
      status: "scheduled",
      name: "Spring sale",
      subject: "Hello {{NAME|friend}}",
      sender_email: "shop@example.com",
      tags: ["spring", "sale"],
      schedule_date: data.schedule_date,
      list_id: lists[0].id,
      counters: { queued: 0, sent: 0, opens: 0, unique_opens: 0, clicks: 0, bounces: 0, unsubscribes: 0 },
    });
  });

  it("sends the answer, without the caller's payload, to every notify_me address", async () => {
    const panel = await createPanel();
    const response = await publish(panel, await broadcastData({ notify_me: "ops@example.com, boss@example.com", campaign_name: "Click https://spam.example now" }));
    const [mail] = await notificationsOf(panel);
    expect(mail.to).toEqual(["ops@example.com", "boss@example.com"]);
    const { payload: _payload, ...answer } = response.body;
    expect(JSON.parse(mail.text)).toEqual(answer);
    expect(mail.text).not.toContain("spam.example");
  });

  it("mails nothing for a refused request (400 or 409), whatever notify_me says", async () => {
    const panel = await createPanel();
    const refused = await publish(panel, await broadcastData({ tags: "a,b,c,d,e,f", notify_me: "victim@example.com" }));
    expect(refused.body.success).toBe(false);
    const first = await publish(panel, await broadcastData({ list_name: "Taken" }));
    expect(first.body.success).toBe(true);
    const taken = await publish(panel, await broadcastData({ list_name: "Taken", notify_me: "victim@example.com" }));
    expect(taken.status).toBe(409);
    const mails = await notificationsOf(panel);
    expect(mails.map((mail: { to: string[] }) => mail.to)).toEqual([["ops@example.com"]]);
  });

  it("accepts the whole JSON body as the data object, the spaced activity and an omitted type", async () => {
    const panel = await createPanel();
    const data = await broadcastData();
    const direct = await call(`/apiv2?activity=${encodeURIComponent("upload_ contact_and_publish")}&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(data),
    });
    const body = (await direct.json()) as any;
    expect(direct.status).toBe(200);
    expect(body).toMatchObject({ success: true, payload: data });
    expect(await campaignCount(panel)).toBe(1);
  });

  it("takes the HTML body from source_file and keeps it in R2", async () => {
    const panel = await createPanel();
    const html = "<html><body><h1>From a file</h1></body></html>";
    const response = await publish(panel, await broadcastData({ source_code: undefined, source_file: await host("body.html", html, "text/html") }));
    expect(response.body.success).toBe(true);
    const stored = await getCampaign(panelData, panel.id, response.body.CampaignID);
    expect(await (await env.FILES.get(stored!.bodyKey))!.text()).toBe(html);
  });

  it("answers an unauthenticated call with the 2.6 body", async () => {
    const response = await envelope({ type: "email_broadcast", activity: "upload_contact_and_publish", apikey: "nope", data: await broadcastData() });
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ success: false, CampaignID: "", message: "The caller could not be authenticated" });
  });
});

describe("4.10 rules, each checked before anything is written", () => {
  it("refuses a list name already taken (any case)", async () => {
    const panel = await createPanel();
    await apiFor(panel)("lists", "add", { listname: "Newsletter" });
    await expectRefused(panel, await broadcastData({ list_name: "newsletter" }), /list_name.*already exists/, 409);
  });

  it("refuses each missing required member", async () => {
    const panel = await createPanel();
    for (const member of ["contacts_upload_source", "list_name", "campaign_name", "subject_line", "sender_name", "sender_email_id", "schedule_date", "notify_me"]) {
      await expectRefused(panel, await broadcastData({ [member]: undefined }), new RegExp(`data\\.${member}: is required`));
    }
  });

  it("refuses a missing or unparsable data", async () => {
    const panel = await createPanel();
    const response = await apiFor(panel)("email_broadcast", "upload_contact_and_publish", { data: "{not json" });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ success: false, CampaignID: "", payload: "{not json" });
    expect(response.body.message).toMatch(/^data:/);
  });

  it("refuses a contacts file holding a header row and no contacts (blank rows and rows of empty cells are none), before anything is written", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({}, "EMAIL,NAME,CITY\r\n,,\r\n\r\n"), /contacts_upload_source: holds a header row but no contacts/);
  });

  it("refuses a semicolon-separated contacts file, saying so", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({}, "EMAIL;NAME;CITY\r\nada@example.com;Ada;Pune\r\n"), /contacts\.csv: the header row is one column, "EMAIL;NAME;CITY": the file looks separated by semicolons/);
  });

  it("refuses a UTF-16 contacts file (Excel's Unicode Text), saying so", async () => {
    const panel = await createPanel();
    const data = await broadcastData({ contacts_upload_source: await host("contacts.csv", utf16le("EMAIL,NAME,CITY\r\nada@example.com,Ada,Pune\r\n")) });
    await expectRefused(panel, data, /contacts\.csv is not a CSV file: the file looks saved as UTF-16/);
  });

  it("refuses a Windows-1252 contacts file (Excel's CSV (Comma delimited)), saying what to save it as", async () => {
    const panel = await createPanel();
    const latin = new Uint8Array([...new TextEncoder().encode("EMAIL,NAME\r\nada@example.com,Ad"), 0xe9, 0x0d, 0x0a]);
    const data = await broadcastData({ contacts_upload_source: await host("contacts.csv", latin) });
    await expectRefused(panel, data, /contacts\.csv holds bytes that are not UTF-8 \(Excel's "CSV \(Comma delimited\)" is Windows-1252\): save the file as "CSV UTF-8"/);
  });

  it("links a refused row's report from the service's origin, as bulk upload does", async () => {
    const panel = await createPanel();
    const response = await publish(panel, await broadcastData({}, "EMAIL,NAME\nada@example.com,Ada\nnot-an-address,Bob\n"));
    expect(response.status).toBe(200);
    const job = await waitForImport(panel, response.body.CampaignID);
    expect(job).toMatchObject({ status: "completed", failed: 1 });
    expect(job.error_report).toMatch(/^https?:\/\/[^/]+\/apiv2\/jobs\/job_[a-z0-9]+\/errors\.csv$/);
  });

  it("imports a file with a badly quoted row as bulk upload does: the row skipped and reported, the others in the list", async () => {
    const panel = await createPanel();
    const response = await publish(panel, await broadcastData({}, 'EMAIL,NAME\nada@example.com,Ada\nbob@example.com,"Bo"b\ncy@example.com,Cy\n'));
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    const job = await waitForImport(panel, response.body.CampaignID);
    expect(job).toMatchObject({ status: "completed", total: 3, created: 2, failed: 1 });
    const report = await call(`${new URL(job.error_report).pathname}?apikey=${encodeURIComponent(panel.apiKey)}`);
    expect(await report.text()).toMatch(/quotes of the row are malformed/);
  });

  it("refuses a file whose quote is left open past what an import reads, and a badly quoted header, before anything is written", async () => {
    const panel = await createPanel();
    const open = `EMAIL,NAME\nada@example.com,"Ada\n${"x".repeat(1024 * 1024)}\n`;
    await expectRefused(panel, await broadcastData({}, open), /contacts\.csv is not a readable CSV file: record 2 is longer than 1048576 bytes; is a quote left open\?/);
    await expectRefused(panel, await broadcastData({}, 'EMAIL,"NA"ME\nada@example.com,Ada\n'), /contacts\.csv is not a readable CSV file: the header row has a badly quoted field/);
  });

  it("refuses more than 5 tags", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ tags: "a,b,c,d,e,f" }), /data\.tags: at most 5 tags/);
  });

  it("refuses md5 combined with check_rowcount", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ check_rowcount: "1", contacts_upload_source_file_md5: "0".repeat(32) }), /check_rowcount: must not be combined/);
  });

  it("refuses both source_file and source_code, and neither", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ source_file: await host("b.html", "<p>x</p>", "text/html") }), /source_code: must not be combined with source_file/);
    await expectRefused(panel, await broadcastData({ source_code: undefined }), /one of source_file .* and source_code .* is required/);
  });

  it("refuses source_code that is not base64 HTML", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ source_code: "<p>not base64</p>" }), /source_code: must be the HTML body encoded in base64/);
  });

  it("refuses bad notify_me and sender addresses", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ notify_me: "ops@example.com, nobody" }), /notify_me: is not an email address: nobody/);
    await expectRefused(panel, await broadcastData({ sender_email_id: "shop" }), /sender_email_id: must be an email address/);
    // The one email rule refuses a backslash, and notify_me takes at most 20 addresses (more were once taken, but no one was told).
    await expectRefused(panel, await broadcastData({ sender_email_id: "shop\\desk@example.com" }), /sender_email_id: must be an email address/);
    const many = Array.from({ length: 21 }, (_, i) => `ops${i}@example.com`).join(",");
    await expectRefused(panel, await broadcastData({ notify_me: many }), /notify_me: must hold at most 20 email addresses/);
  });

  it("refuses a contacts source that is not a .csv or .zip URL, or cannot be fetched", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("contacts.txt", "EMAIL\n") }), /\.csv file or of a \.zip/);
    await expectRefused(panel, await broadcastData({ contacts_upload_source: "ftp://example.com/a.csv" }), /contacts_upload_source: must use http or https/);
    await expectRefused(panel, await broadcastData({ contacts_upload_source: `${env.RECEIVER_URL}/files/missing.csv` }), /could not be downloaded: the server answered HTTP 404/);
  });

  it("refuses CSV headers with attributes unknown to the panel, or without the primary key", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({}, "EMAIL,SHOE_SIZE\nada@example.com,38\n"), /attributes that do not exist in the panel: SHOE_SIZE/);
    await expectRefused(panel, await broadcastData({}, "NAME\nAda\n"), /must contain the panel's primary key EMAIL/);
  });
});

describe("4.10 hostile download sources (a deadline and a minimum rate, the field named, never a 500)", () => {
  // vitest.config.ts measures the minimum rate over 1 s, so a drip fails within about a second.
  const CSV = `EMAIL\n${"x".repeat(100_000 - 6)}`;
  const HTML = `<html><body>${"x".repeat(100_000)}</body></html>`;

  const hostileUrl = async (file: string, answer: { body: string; dripMs?: number; resetAfterBytes?: number }) => (await receiver.hostile(file, answer)).url;

  it("refuses contacts_upload_source that drips a byte a second", async () => {
    const panel = await createPanel();
    const started = Date.now();
    const url = await hostileUrl("drip.csv", { body: CSV, dripMs: 1000 });
    await expectRefused(panel, await broadcastData({ contacts_upload_source: url }), /contacts_upload_source: could not be downloaded: .* sent too slowly/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("refuses contacts_upload_source whose connection resets after 18 of 100,000 bytes", async () => {
    const panel = await createPanel();
    const url = await hostileUrl("reset.csv", { body: CSV, resetAfterBytes: 18 });
    await expectRefused(panel, await broadcastData({ contacts_upload_source: url }), /contacts_upload_source: could not be downloaded: the connection to .* broke after \d+ bytes/);
  });

  it("refuses source_file that drips, or resets mid-body", async () => {
    const panel = await createPanel();
    const drip = await hostileUrl("drip.html", { body: HTML, dripMs: 1000 });
    await expectRefused(panel, await broadcastData({ source_code: undefined, source_file: drip }), /source_file: could not be downloaded: .* sent too slowly/);
    const reset = await hostileUrl("reset.html", { body: HTML, resetAfterBytes: 18 });
    await expectRefused(panel, await broadcastData({ source_code: undefined, source_file: reset }), /source_file: could not be downloaded: the connection to .* broke after/);
  });
});

describe("4.10 schedule_date", () => {
  it("refuses a time less than BROADCAST_LEAD_MINUTES ahead, and a malformed one", async () => {
    const panel = await createPanel();
    await expectRefused(panel, await broadcastData({ schedule_date: scheduleIn(89) }), /schedule_date: must be at least 90 minutes ahead/);
    await expectRefused(panel, await broadcastData({ schedule_date: "2030-02-30 10:00:00" }), /schedule_date: is not a real calendar date/);
    await expectRefused(panel, await broadcastData({ schedule_date: "2030-01-01T10:00:00" }), /schedule_date: must be YYYY-MM-DD HH:mm:SS/);
  });

  it("reads the time in the panel's time zone", async () => {
    // 100 minutes ahead on a Kolkata (UTC+5:30) clock is fine there; 100 minutes ahead on a
    // Honolulu (UTC-10) clock, read in Kolkata, is hours in the past.
    const kolkata = await createPanel({ timezone: "Asia/Kolkata" });
    const ok = await publish(kolkata, await broadcastData({ schedule_date: scheduleIn(100, "Asia/Kolkata") }));
    expect(ok.body.success).toBe(true);
    const stored = await getCampaign(panelData, kolkata.id, ok.body.CampaignID);
    expect(Math.abs(stored!.sendAt - (Date.now() + 100 * 60_000))).toBeLessThan(5 * 60_000);

    await expectRefused(await createPanel({ timezone: "Asia/Kolkata" }), await broadcastData({ schedule_date: scheduleIn(100, "Pacific/Honolulu") }), /at least 90 minutes ahead \(in the panel's time zone Asia\/Kolkata\)/);
  });
});

describe("4.10 contact files", () => {
  it("imports every CSV of a zip whose headers match", async () => {
    const panel = await createPanel();
    const zip = zipSync({
      "part1.csv": strToU8("EMAIL,NAME\na@example.com,A\nb@example.com,B\n"),
      "nested/part2.csv": strToU8("EMAIL,NAME\nc@example.com,C\n"),
    });
    const response = await publish(panel, await broadcastData({ contacts_upload_source: await host("contacts.zip", zip, "application/zip") }));
    expect(response.body.success).toBe(true);
    expect(await waitForImport(panel, response.body.CampaignID)).toMatchObject({ status: "completed" });
    const [list] = (await apiFor(panel)("lists", "getall")).body.lists;
    expect(list.count).toBe(3);
  });

  it("refuses a zip whose CSV headers differ, or that holds something else", async () => {
    const panel = await createPanel();
    const mismatch = zipSync({ "a.csv": strToU8("EMAIL,NAME\na@example.com,A\n"), "b.csv": strToU8("EMAIL,CITY\nb@example.com,Pune\n") });
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("c.zip", mismatch, "application/zip") }), /every csv file must have the same header/);
    const other = zipSync({ "a.csv": strToU8("EMAIL\na@example.com\n"), "notes.txt": strToU8("hi") });
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("d.zip", other, "application/zip") }), /only \.csv files, but it holds notes\.txt/);
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("e.zip", "not a zip", "application/zip") }), /not a readable zip file/);
  });

  it("refuses a zip whose entry inflates past the limit, whatever size the entry claims", async () => {
    // One CSV that inflates to 4 MiB more than the limit, compressed to about 50 KiB.
    const inflated = new Uint8Array(MAX_UNZIPPED_BYTES + 4 * 1024 * 1024).fill(0x61);
    inflated.set(strToU8("EMAIL\n"));
    const honest = zipSync({ "big.csv": inflated });
    const lying = claimSize(honest, 1000);
    const panel = await createPanel();
    const limit = new RegExp(`inflate to more than the ${MAX_UNZIPPED_BYTES}-byte limit`);
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("lying.zip", lying, "application/zip") }), limit);
    await expectRefused(panel, await broadcastData({ contacts_upload_source: await host("honest.zip", honest, "application/zip") }), limit);
  });

  it("checks the row count embedded in the file name (header included)", async () => {
    const panel = await createPanel();
    const csv = "EMAIL,NAME\na@example.com,A\n\"b@example.com\",\"B, with a comma\nand a newline\"\n";
    const right = await publish(panel, await broadcastData({ check_rowcount: "1", contacts_upload_source: await host("people_3.csv", csv) }));
    expect(right.body.success).toBe(true);
    await expectRefused(
      await createPanel(),
      await broadcastData({ check_rowcount: "1", contacts_upload_source: await host("people_4.csv", csv) }),
      /people_4\.csv has 3 rows \(header included\) but its name says 4/,
    );
    await expectRefused(await createPanel(), await broadcastData({ check_rowcount: "1", contacts_upload_source: await host("people.csv", csv) }), /must end in _<rows>\.csv/);
  });

  it("checks the row count of each CSV in a zip", async () => {
    const zip = zipSync({ "a_2.csv": strToU8("EMAIL\na@example.com\n"), "b_2.csv": strToU8("EMAIL\nb@example.com\nc@example.com\n") });
    await expectRefused(await createPanel(), await broadcastData({ check_rowcount: "1", contacts_upload_source: await host("all.zip", zip, "application/zip") }), /b_2\.csv has 3 rows/);
  });

  it("checks the file's MD5", async () => {
    const csv = "EMAIL\nmd5@example.com\n";
    const digest = await md5Hex(new TextEncoder().encode(csv));
    expect(digest).toBe("a36d84322f372cc061581038098d20f8"); // md5sum of the same bytes
    const panel = await createPanel();
    const right = await publish(panel, await broadcastData({ contacts_upload_source_file_md5: digest.toUpperCase() }, csv));
    expect(right.body.success).toBe(true);
    await expectRefused(await createPanel(), await broadcastData({ contacts_upload_source_file_md5: "0".repeat(32) }, csv), /contacts_upload_source_file_md5: does not match the file: its MD5 is [0-9a-f]{32}/);
  });
});

describe("4.10 cross-panel access", () => {
  it("keeps campaigns to their panel", async () => {
    const owner = await createPanel();
    const other = await createPanel();
    const response = await publish(owner, await broadcastData());
    expect((await admin("GET", `/panels/${other.id}/campaigns/${response.body.CampaignID}`)).status).toBe(404);
    expect((await admin("GET", `/panels/${owner.id}/campaigns/${response.body.CampaignID}`)).status).toBe(200);
  });

  it("checks list names only within the panel", async () => {
    const one = await createPanel();
    const two = await createPanel();
    const data = await broadcastData();
    expect((await publish(one, data)).body.success).toBe(true);
    expect((await publish(two, { ...data, contacts_upload_source: await host("again.csv", "EMAIL\nz@example.com\n") })).body.success).toBe(true);
  });
});

