import { describe, expect, it } from "vitest";
import { bomLength, cutRecords, formatCsvRecord, isBlankRecord, notCsvReason, pagedCsv, parseRecords, type CsvRecord } from "../../src/domain/csv";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** Parses a whole file the way the import does: cut whole records on the bytes, then read them. */
function parseAll(text: string): CsvRecord[] {
  const bytes = encoder.encode(text);
  const records: CsvRecord[] = [];
  const cut = cutRecords(bytes, 0, Infinity, Infinity, true);
  parseRecords(decoder.decode(bytes.subarray(0, cut.end)), (r) => records.push(r));
  expect(cut.end).toBe(bytes.length);
  expect(cut.records).toBe(records.length);
  return records;
}

/**
 * Parses a file fed `step` bytes at a time, taking whole records whenever they are complete,
 * as the import does across R2 reads and chunks: the records must not depend on where the
 * reads end.
 */
function parseInPieces(bytes: Uint8Array, step: number, maxRecords = Infinity): CsvRecord[] {
  const records: CsvRecord[] = [];
  let buffer = new Uint8Array(0);
  let read = 0;
  for (;;) {
    const atEnd = read >= bytes.length;
    const cut = cutRecords(buffer, 0, maxRecords, Infinity, atEnd);
    if (cut.records > 0) {
      parseRecords(decoder.decode(buffer.subarray(0, cut.end)), (r) => records.push(r));
      buffer = buffer.slice(cut.end);
      continue;
    }
    if (atEnd) break;
    const next = bytes.subarray(read, Math.min(bytes.length, read + step));
    read += next.length;
    const joined = new Uint8Array(buffer.length + next.length);
    joined.set(buffer);
    joined.set(next, buffer.length);
    buffer = joined;
  }
  expect(buffer.length).toBe(0);
  return records;
}

const fields = (records: CsvRecord[]) => records.map((r) => r.fields);

describe("RFC 4180 parsing", () => {
  it("reads plain records with LF, CRLF and lone CR line ends", () => {
    expect(fields(parseAll("a,b\n1,2\n"))).toEqual([["a", "b"], ["1", "2"]]);
    expect(fields(parseAll("a,b\r\n1,2\r\n"))).toEqual([["a", "b"], ["1", "2"]]);
    expect(fields(parseAll("a,b\r1,2\r"))).toEqual([["a", "b"], ["1", "2"]]);
    expect(fields(parseAll("a,b\n1,2"))).toEqual([["a", "b"], ["1", "2"]]);
  });

  it("reads quoted fields with commas, escaped quotes, CRLF and LF inside", () => {
    const records = parseAll('NAME,NOTE\r\n"Doe, Jane","She said ""hi""\r\nthen left"\r\n"x","line1\nline2"\r\n');
    expect(fields(records)).toEqual([
      ["NAME", "NOTE"],
      ["Doe, Jane", 'She said "hi"\r\nthen left'],
      ["x", "line1\nline2"],
    ]);
    expect(records.every((r) => !r.malformed)).toBe(true);
  });

  it("keeps empty fields, trailing commas and empty quoted fields", () => {
    expect(fields(parseAll('a,,c\n,\n"",x\n1,2,\n'))).toEqual([["a", "", "c"], ["", ""], ["", "x"], ["1", "2", ""]]);
    expect(fields(parseAll("a,b,"))).toEqual([["a", "b", ""]]);
  });

  it("reports blank lines as blank records", () => {
    const records = parseAll("a\n\n\r\nb\n");
    expect(records.map(isBlankRecord)).toEqual([false, true, true, false]);
  });

  it("keeps non-ASCII text", () => {
    expect(fields(parseAll('NAME,CITY\n"Zoë, née Ångström",Köln\n名前,東京\n'))).toEqual([
      ["NAME", "CITY"],
      ["Zoë, née Ångström", "Köln"],
      ["名前", "東京"],
    ]);
  });

  it("treats a quote inside an unquoted field as data", () => {
    const records = parseAll('a,5" screen,c\n');
    expect(fields(records)).toEqual([["a", '5" screen', "c"]]);
    expect(records[0]!.malformed).toBe(false);
  });

  it("marks text after a closing quote and a quote left open at the end of the file", () => {
    const after = parseAll('"ab"cd,e\nok,1\n');
    expect(after.map((r) => [r.fields, r.malformed])).toEqual([
      [["abcd", "e"], true],
      [["ok", "1"], false],
    ]);
    const open = parseAll('x,1\n"never closed,2\n3,4\n');
    expect(open.map((r) => [r.fields, r.malformed])).toEqual([
      [["x", "1"], false],
      [["never closed,2\n3,4\n"], true],
    ]);
  });

  it("finds the same records whatever the size of the reads", () => {
    const text = '\uFEFFNAME,NOTE,CITY\r\n"Doe, Jane","a ""quoted""\r\nline",Zürich\r\nBo,,Goa\n\n"x""",y,"z"\r"\r"\n"tail",1,2';
    const bytes = encoder.encode(text);
    const expected = fields(parseAll(text));
    for (let step = 1; step <= bytes.length; step++) {
      expect(fields(parseInPieces(bytes, step)), `reads of ${step} bytes`).toEqual(expected);
      expect(fields(parseInPieces(bytes, step, 1)), `reads of ${step} bytes, one record at a time`).toEqual(expected);
    }
  });

  it("waits for more bytes when a quote or CR ends the bytes read so far", () => {
    expect(cutRecords(encoder.encode('a,"b"'), 0, Infinity, Infinity, false)).toEqual({ end: 0, records: 0 });
    expect(cutRecords(encoder.encode("a,b\r"), 0, Infinity, Infinity, false)).toEqual({ end: 0, records: 0 });
    expect(cutRecords(encoder.encode("a,b\r\nc"), 0, Infinity, Infinity, false)).toEqual({ end: 5, records: 1 });
  });

  it("finds quotes and lone CRs far past the first record, beyond what one search looks at", () => {
    // More than 64 KiB of plain records before each record that needs the byte-wise rules.
    const plain = Array.from({ length: 5000 }, (_, i) => `row ${i},plain\n`).join("");
    const text = `${plain}"quoted\nline",x\n${plain}lone,cr\r${plain}"open`;
    const records = parseAll(text);
    expect(records).toHaveLength(15_003);
    expect(records[5000]!.fields).toEqual(["quoted\nline", "x"]);
    expect(records[10_001]!.fields).toEqual(["lone", "cr"]);
    expect(records.at(-1)).toEqual({ fields: ["open"], malformed: true });
    const bytes = encoder.encode(text);
    expect(fields(parseInPieces(bytes, 100_000, 2000))).toEqual(fields(records));
  });

  it("cuts random text where the byte-wise rules do, reads of any size and far-apart quotes alike", () => {
    // The record ends by the rules alone, one byte at a time, as the oracle.
    const ends = (bytes: Uint8Array): number[] => {
      const found: number[] = [];
      let inQuotes = false;
      let fieldStart = true;
      for (let i = 0; i < bytes.length; i++) {
        const byte = bytes[i]!;
        if (inQuotes) {
          if (byte === 0x22) {
            if (bytes[i + 1] === 0x22) i++;
            else inQuotes = false;
          }
          continue;
        }
        if (byte === 0x22 && fieldStart) inQuotes = true;
        if (byte === 0x0a || byte === 0x0d) {
          if (byte === 0x0d && bytes[i + 1] === 0x0a) i++;
          found.push(i + 1);
          fieldStart = true;
          continue;
        }
        fieldStart = byte === 0x2c;
      }
      if (found.at(-1) !== bytes.length && bytes.length > 0) found.push(bytes.length);
      return found;
    };
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 20; round++) {
      // Long plain stretches (past one search block) between rare quotes and CRs.
      const parts: string[] = [];
      while (parts.length < 60_000) {
        const roll = random();
        parts.push(roll < 0.002 ? '"' : roll < 0.004 ? "\r" : roll < 0.06 ? "\n" : roll < 0.15 ? "," : "abcdef"[Math.floor(random() * 6)]!);
      }
      const bytes = encoder.encode(parts.join(""));
      const expected = ends(bytes);
      const cut: number[] = [];
      for (let pos = 0; pos < bytes.length; ) {
        const next = cutRecords(bytes, pos, 1 + Math.floor(random() * 50), Infinity, true);
        for (let taken = pos; taken < next.end; ) {
          taken = cutRecords(bytes, taken, 1, Infinity, true).end;
          cut.push(taken);
        }
        pos = next.end;
      }
      expect(cut, `round ${round}`).toEqual(expected);
      expect(cutRecords(bytes, 0, Infinity, Infinity, true)).toEqual({ end: bytes.length, records: expected.length });
    }
  });

  it("stops at the record and byte limits", () => {
    const bytes = encoder.encode("1\n2\n3\n4\n");
    expect(cutRecords(bytes, 0, 2, Infinity, true)).toEqual({ end: 4, records: 2 });
    expect(cutRecords(bytes, 2, 2, Infinity, true)).toEqual({ end: 6, records: 2 });
    expect(cutRecords(bytes, 0, Infinity, 3, true)).toEqual({ end: 4, records: 2 });
  });
});

describe("CSV helpers", () => {
  it("detects the UTF-8 BOM", () => {
    expect(bomLength(encoder.encode("\uFEFFa,b"))).toBe(3);
    expect(bomLength(encoder.encode("a,b"))).toBe(0);
  });

  it("formats fields, quoting those that need it", () => {
    expect(formatCsvRecord(["a", "b,c", 'say "hi"', "two\nlines", ""])).toBe('a,"b,c","say ""hi""","two\nlines",');
    const line = formatCsvRecord(["x,y", '"', "z"]);
    expect(fields(parseAll(`${line}\n`))).toEqual([["x,y", '"', "z"]]);
  });

  it("neutralises cells a spreadsheet would run as formulas, keeping plain numbers", () => {
    const cells = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)", "\tx", "\rx", "-3", "+919876543210", "12.5", "a=b", ""];
    expect(formatCsvRecord(cells)).toBe(`"'=HYPERLINK(""http://x"",""y"")",'+cmd|' /C calc'!A0,'-2+3,'@SUM(A1:A2),'\tx,"'\rx",-3,+919876543210,12.5,a=b,`);
  });

  it("neutralises formulas behind leading spaces, in full-width signs and after a `;` separator", () => {
    expect(formatCsvRecord([" =1+1", "\u3000=1+1", "\uFF1D1+1", "\uFF0BA1", "\uFF20SUM(A1)", ";=1+1", "a; =1+1;-2", "a;b", " 12"])).toBe(
      "' =1+1,'\u3000=1+1,'\uFF1D1+1,'\uFF0BA1,'\uFF20SUM(A1),;'=1+1,a; '=1+1;'-2,a;b, 12",
    );
  });

  it("recognises binary files and UTF-16 text, and passes UTF-8 text", () => {
    expect(notCsvReason(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2]))).toBe("it holds binary data");
    expect(notCsvReason(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0]))).toBe("it holds binary data");
    const utf16 = /looks saved as UTF-16/;
    expect(notCsvReason(new Uint8Array([0xff, 0xfe, 0x45, 0x00, 0x4d, 0x00]))).toMatch(utf16);
    expect(notCsvReason(new Uint8Array([0xfe, 0xff, 0x00, 0x45, 0x00, 0x4d]))).toMatch(utf16);
    expect(notCsvReason(new Uint8Array([0x45, 0x00, 0x4d, 0x00, 0x41, 0x00]))).toMatch(utf16);
    expect(notCsvReason(new Uint8Array([0x00, 0x45, 0x00, 0x4d, 0x00, 0x41]))).toMatch(utf16);
    expect(notCsvReason(encoder.encode("EMAIL\na@b.co\n"))).toBeNull();
    expect(notCsvReason(encoder.encode("\uFEFFNAME,EMAIL\nÅsa,å@b.co\n"))).toBeNull();
  });
});

describe("pagedCsv", () => {
  const rows = Array.from({ length: 7 }, (_, i) => ({ id: i + 1, name: i === 2 ? "=SUM(A1)" : `row ${i + 1}` }));
  async function download(pageSize: number, source = rows) {
    const asked: Array<number | undefined> = [];
    const body = pagedCsv({
      header: ["id", "name"],
      pageSize,
      page: async (after: number | undefined, size) => {
        asked.push(after);
        return source.filter((row) => row.id > (after ?? 0)).slice(0, size);
      },
      fields: (row) => [String(row.id), row.name],
      cursor: (last) => last.id,
    });
    return { text: await new Response(body).text(), asked };
  }

  it("writes the header, then every row once, page after page, neutralising formulas", async () => {
    const { text, asked } = await download(3);
    expect(text.split("\r\n")).toEqual(["id,name", "1,row 1", "2,row 2", "3,'=SUM(A1)", "4,row 4", "5,row 5", "6,row 6", "7,row 7", ""]);
    expect(asked).toEqual([undefined, 3, 6]);
  });

  it("reads one more (empty) page when the last one is full, and writes the header alone when nothing matches", async () => {
    expect((await download(7)).asked).toEqual([undefined, 7]);
    expect(await download(5, [])).toEqual({ text: "id,name\r\n", asked: [undefined] });
  });
});
