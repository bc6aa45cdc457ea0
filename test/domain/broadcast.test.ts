import { describe, expect, it } from "vitest";
import { broadcastRequestSchema, checkCsvHeaders, decodeBase64Utf8, rowcountInFileName } from "../../src/domain/broadcast";
import { splitAddresses } from "../../src/domain/email";
import { fieldErrorsFromZod } from "../../src/lib/http/errors";

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const base = {
  contacts_upload_source: "https://files.example.com/c.csv",
  list_name: "L",
  campaign_name: "C",
  subject_line: "S",
  sender_name: "N",
  sender_email_id: "shop@example.com",
  schedule_date: "2026-06-01 14:00:00",
  source_code: btoa("<p>x</p>"),
  notify_me: "ops@example.com",
};
const check = (data: Record<string, unknown>, timezone = "UTC") => {
  const parsed = broadcastRequestSchema({ timezone, now: NOW, leadMinutes: 90, allowPrivateFetch: false }).safeParse(data);
  return parsed.success ? { ok: true as const, request: parsed.data } : { ok: false as const, problems: fieldErrorsFromZod(parsed.error, "data") };
};

describe("broadcast request rules", () => {
  it("accepts a valid request and reads schedule_date in the panel's zone", () => {
    const utc = check(base);
    expect(utc.ok && utc.request.sendAt).toBe(Date.UTC(2026, 5, 1, 14, 0, 0));
    const kolkata = check({ ...base, schedule_date: "2026-06-01 19:30:00" }, "Asia/Kolkata");
    expect(kolkata.ok && kolkata.request.sendAt).toBe(Date.UTC(2026, 5, 1, 14, 0, 0));
  });

  it("holds the lead time exactly at its edge", () => {
    expect(check({ ...base, schedule_date: "2026-06-01 13:30:00" }).ok).toBe(true);
    const early = check({ ...base, schedule_date: "2026-06-01 13:29:59" });
    expect(!early.ok && early.problems[0]!.message).toMatch(/at least 90 minutes ahead .* the earliest allowed is 2026-06-01 13:30:00/);
  });

  it("reports every problem at once", () => {
    const result = check({ ...base, tags: "1,2,3,4,5,6", check_rowcount: "1", contacts_upload_source_file_md5: "a".repeat(32), source_file: "https://x.example/b.html" });
    expect(!result.ok && result.problems.map((p) => p.field)).toEqual(["data.check_rowcount", "data.tags", "data.source_code"]);
  });

  it("refuses what the hand-written check once took as absent: a boolean check_rowcount or MD5", () => {
    const result = check({ ...base, check_rowcount: true, contacts_upload_source_file_md5: false });
    expect(!result.ok && result.problems).toEqual([
      { field: "data.contacts_upload_source_file_md5", message: "must be an MD5 digest: 32 hex characters" },
      { field: "data.check_rowcount", message: 'must be "1" (row count in the file name) or absent' },
    ]);
  });

  it("checks the URLs it will fetch with the outbound rule", () => {
    const result = check({ ...base, contacts_upload_source: "http://127.0.0.1/c.csv", source_code: undefined, source_file: "file:///etc/passwd" });
    expect(!result.ok && result.problems.map((p) => p.field)).toEqual(["data.contacts_upload_source", "data.source_file"]);
    const local = broadcastRequestSchema({ timezone: "UTC", now: NOW, leadMinutes: 90, allowPrivateFetch: true }).safeParse({ ...base, contacts_upload_source: "http://127.0.0.1/c.csv" });
    expect(local.success && local.data.contactsSource).toBe("http://127.0.0.1/c.csv");
  });

  it("takes tags as text or an array", () => {
    const text = check({ ...base, tags: " a, b ,," });
    expect(text.ok && text.request.tags).toEqual(["a", "b"]);
    const array = check({ ...base, tags: ["a", "b", "c", "d", "e", "f"] });
    expect(array.ok).toBe(false);
  });
});

describe("helpers", () => {
  it("reads the row count of <name>_<rows>.csv", () => {
    expect(rowcountInFileName("contacts_120.csv")).toBe(120);
    expect(rowcountInFileName("my_list_2024_7.CSV")).toBe(7);
    expect(rowcountInFileName("contacts.csv")).toBeNull();
  });

  it("decodes base64 (standard, URL-safe, wrapped) as UTF-8 and refuses the rest", () => {
    expect(decodeBase64Utf8(btoa("<p>Hi</p>"))).toBe("<p>Hi</p>");
    expect(decodeBase64Utf8("PHA+\nSGk8L3A+")).toBe("<p>Hi</p>");
    expect(decodeBase64Utf8("<p>Hi</p>")).toBeNull();
    expect(decodeBase64Utf8(btoa("\xff\xfe"))).toBeNull();
  });

  it("splits address lists", () => {
    expect(splitAddresses(" A@x.com; b@y.com ,, ")).toEqual(["a@x.com", "b@y.com"]);
  });

  it("compares CSV headers case-insensitively, in order", () => {
    const known = (name: string) => ["EMAIL", "NAME", "CITY"].includes(name);
    expect(checkCsvHeaders([{ name: "a.csv", header: ["email", "Name"] }, { name: "b.csv", header: ["EMAIL", "NAME"] }], known, "EMAIL")).toEqual({ ok: true, header: ["EMAIL", "NAME"] });
    expect(checkCsvHeaders([{ name: "a.csv", header: ["EMAIL", "NAME"] }, { name: "b.csv", header: ["NAME", "EMAIL"] }], known, "EMAIL").ok).toBe(false);
    expect(checkCsvHeaders([{ name: "a.csv", header: ["EMAIL", "EMAIL"] }], known, "EMAIL")).toMatchObject({ ok: false, message: expect.stringContaining("more than once") });
  });
});
