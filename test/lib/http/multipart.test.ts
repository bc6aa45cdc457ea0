import { describe, expect, it } from "vitest";
import { csvRecordGroups } from "../../../src/domain/csv";
import { multipartBoundary, MultipartError, multipartFields, multipartFileBytes } from "../../../src/lib/http/multipart";

/** `text` as a stream delivering `size` bytes at a time, so boundaries and records fall across pieces. */
function streamOf(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function fileText(body: string, size: number, names = ["data", "file"]): Promise<string> {
  const decoder = new TextDecoder();
  let out = "";
  for await (const piece of multipartFileBytes(streamOf(body, size), "XyZ", names)) out += decoder.decode(piece, { stream: true });
  return out + decoder.decode();
}

const BODY =
  "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello --XyZ not a delimiter\r\n" +
  "--XyZ\r\nContent-Disposition: form-data; name=\"data\"; filename=\"e.csv\"\r\nContent-Type: text/csv\r\n\r\n" +
  "activity_name,identity\r\nview,\"a@example.com\"\r\n\r\n--XyZ--\r\n";

describe("multipart file field, read as a stream", () => {
  it("finds the boundary of a content type, quoted or not", () => {
    expect(multipartBoundary("multipart/form-data; boundary=XyZ")).toBe("XyZ");
    expect(multipartBoundary('multipart/form-data; charset=utf-8; boundary="a b"')).toBe("a b");
    expect(multipartBoundary("application/json")).toBeNull();
  });

  it("yields the named part's bytes whatever the piece size, skipping other parts", async () => {
    for (const size of [1, 2, 3, 5, 7, 64, 4096]) {
      expect(await fileText(BODY, size)).toBe('activity_name,identity\r\nview,"a@example.com"\r\n');
    }
  });

  it("finds a part named without quotes, as .NET writes it", async () => {
    const dotnet = BODY.replace('name="data"; filename="e.csv"', "name=data; filename=e.csv; filename*=utf-8''e.csv");
    expect(await fileText(dotnet, 7)).toBe('activity_name,identity\r\nview,"a@example.com"\r\n');
  });

  it("refuses a body without the field, or one that ends inside a part", async () => {
    await expect(fileText(BODY, 5, ["upload"])).rejects.toBeInstanceOf(MultipartError);
    await expect(fileText(BODY.slice(0, 150), 5)).rejects.toBeInstanceOf(MultipartError);
  });

  it("csvRecordGroups reads the records across pieces, the BOM skipped, in groups", async () => {
    const csv = "\uFEFFa,b\r\n1,\"x\r\ny\"\r\n2,z\n3,w";
    async function* pieces() {
      const bytes = new TextEncoder().encode(csv);
      for (let i = 0; i < bytes.length; i += 3) yield bytes.slice(i, i + 3);
    }
    const groups: string[][][] = [];
    for await (const group of csvRecordGroups(pieces(), 2, 1024)) groups.push(group.map((r) => r.fields));
    expect(groups.flat()).toEqual([["a", "b"], ["1", "x\r\ny"], ["2", "z"], ["3", "w"]]);
    expect(Math.max(...groups.map((g) => g.length))).toBeLessThanOrEqual(2);
  });
});

describe("multipart fields of a body held whole", () => {
  const text = (fields: Array<[string, Uint8Array]>) => fields.map(([name, value]) => [name, new TextDecoder().decode(value)]);

  it("every part in order, quoted names or not, the preamble and a file part's headers skipped", () => {
    const body = BODY.replace('name="note"', "name=note");
    expect(text(multipartFields(new TextEncoder().encode(body), "XyZ"))).toEqual([
      ["note", "hello --XyZ not a delimiter"],
      ["data", 'activity_name,identity\r\nview,"a@example.com"\r\n'],
    ]);
  });

  it("a body that opens with its first delimiter (no preamble, as clients send it), an empty part and a part holding a CRLF", () => {
    const body = '--XyZ\r\nContent-Disposition: form-data; name="type"\r\n\r\ncontact\r\n--XyZ\r\nContent-Disposition: form-data; name="listid"\r\n\r\n\r\n' +
      '--XyZ\r\nContent-Disposition: form-data; name="data"\r\n\r\n{"EMAIL":\r\n"a@example.com"}\r\n--XyZ--\r\n';
    expect(text(multipartFields(new TextEncoder().encode(body), "XyZ"))).toEqual([
      ["type", "contact"],
      ["listid", ""],
      ["data", '{"EMAIL":\r\n"a@example.com"}'],
    ]);
    expect(() => multipartFields(new TextEncoder().encode("--Xy"), "XyZ")).toThrow(MultipartError);
  });

  it("refuses a body without its boundary, one that ends inside a part, and a part without a name", () => {
    const bytes = (body: string) => new TextEncoder().encode(body);
    expect(() => multipartFields(bytes(BODY), "other")).toThrow(MultipartError);
    expect(() => multipartFields(bytes(BODY.slice(0, 150)), "XyZ")).toThrow(MultipartError);
    expect(() => multipartFields(bytes("--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--\r\n"), "XyZ")).toThrow(MultipartError);
  });
});
