import { describe, expect, it } from "vitest";
import { DEFAULT_ATTRIBUTES } from "../../src/domain/attributes";
import type { KeyedSchema } from "../../src/domain/contacts";
import { errorReportHeader, errorReportRow, planColumns, prepareRow, sameColumns, type ColumnPlan } from "../../src/domain/imports";

const schema: KeyedSchema = { primaryKey: "EMAIL", attributes: new Map([...DEFAULT_ATTRIBUTES, ["SIGNUP", "date"], ["VIP", "boolean"], ["SCORE", "float"]]) };

function plan(header: string[]): ColumnPlan {
  const checked = planColumns(schema, header);
  if (!checked.ok) throw new Error(checked.reason);
  return checked.plan;
}

describe("header row", () => {
  it("maps names case-insensitively and keeps the file's spelling for the report", () => {
    const p = plan(["email", " Name ", "AGE", "mobile"]);
    expect(p.columns).toEqual([
      { name: "EMAIL", type: "string", phone: false },
      { name: "NAME", type: "string", phone: false },
      { name: "AGE", type: "integer", phone: false },
      { name: "MOBILE", type: "string", phone: true },
    ]);
    expect(errorReportHeader(p, false)).toEqual(["row", "column", "reason", "email", " Name ", "AGE", "mobile"]);
    expect(errorReportHeader(p, true)[0]).toBe("file");
  });

  it("names every unknown column, a missing primary key and duplicates in one reason", () => {
    const checked = planColumns(schema, ["NAME", "SHOE_SIZE", "Colour", "name", ""]);
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    expect(checked.reason).toContain('unknown columns "SHOE_SIZE", "Colour"');
    expect(checked.reason).toContain("column NAME appears more than once");
    expect(checked.reason).toContain("column 5 has no name");
    expect(checked.reason).toContain("the primary-key column EMAIL is missing");
  });

  it("compares headers of several files by canonical name", () => {
    expect(sameColumns(["email", "NAME"], ["EMAIL", " name"])).toBe(true);
    expect(sameColumns(["EMAIL", "NAME"], ["NAME", "EMAIL"])).toBe(false);
    expect(sameColumns(["EMAIL"], ["EMAIL", "NAME"])).toBe(false);
  });
});

describe("data rows", () => {
  const p = plan(["EMAIL", "NAME", "AGE", "SIGNUP", "VIP", "SCORE"]);

  it("types the cells and normalises the key", () => {
    expect(prepareRow(p, [" Ada@Example.COM ", "Ada", "36", "2024-02-29", "yes", "4.5"])).toEqual({
      ok: true,
      key: "ada@example.com",
      attrs: { EMAIL: "ada@example.com", NAME: "Ada", AGE: 36, SIGNUP: "2024-02-29", VIP: true, SCORE: 4.5 },
    });
  });

  it("leaves empty cells out, so they change nothing", () => {
    expect(prepareRow(p, ["a@b.co", "", " ", "", "", ""])).toEqual({ ok: true, key: "a@b.co", attrs: { EMAIL: "a@b.co" } });
  });

  it("refuses each kind of bad row with its reasons", () => {
    const refused = (fields: string[], malformed = false) => {
      const row = prepareRow(p, fields, malformed);
      if (row.ok) throw new Error("accepted");
      return row;
    };
    expect(refused(["", "Ada", "", "", "", ""]).columns).toEqual(["EMAIL"]);
    expect(refused(["not-an-email", "", "", "", "", ""]).reasons[0]).toMatch(/^EMAIL is not a valid email address/);
    expect(refused(["a@b.co", "", "36.5", "", "", ""]).reasons).toEqual(['AGE must be an integer, not "36.5"']);
    expect(refused(["a@b.co", "", "", "2023-02-30", "", ""]).columns).toEqual(["SIGNUP"]);
    expect(refused(["a@b.co", "", "", "", "maybe", ""]).columns).toEqual(["VIP"]);
    expect(refused(["a@b.co", "", "", "", "", "x1"]).columns).toEqual(["SCORE"]);
    expect(refused(["a@b.co", "x".repeat(2049), "", "", "", ""]).columns).toEqual(["NAME"]);
    expect(refused(["a@b.co", "Ada"]).reasons).toEqual(["the row has 2 fields; the header has 6"]);
    expect(refused(["a@b.co", "Ada", "1", "", "", "", "extra"]).reasons).toEqual(["the row has 7 fields; the header has 6"]);
    expect(refused(["a@b.co", "Ada", "1", "", "", ""], true).reasons[0]).toMatch(/quotes of the row are malformed/);
    const several = refused(["bad", "", "old", "", "", ""]);
    expect(several.columns).toEqual(["EMAIL", "AGE"]);
    expect(errorReportRow(null, 7, several.columns, several.reasons, ["bad", "", "old", "", "", ""]).slice(0, 3)).toEqual([
      "7",
      "EMAIL; AGE",
      several.reasons.join("; "),
    ]);
  });

  it("normalises a MOBILE primary key", () => {
    const mobile = planColumns({ ...schema, primaryKey: "MOBILE" }, ["MOBILE", "NAME"]);
    if (!mobile.ok) throw new Error(mobile.reason);
    expect(prepareRow(mobile.plan, ["+91 98765-43210", "Ravi"])).toMatchObject({ ok: true, key: "+919876543210" });
  });
});
