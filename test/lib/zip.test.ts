import { strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { unzipAtMost } from "../../src/lib/zip";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** A byte in the archive rewritten: the first header with `signature` gets `value` (16 bits) at `offset`. */
function patch16(zip: Uint8Array, signature: number, offset: number, value: number): Uint8Array {
  const out = zip.slice();
  const view = new DataView(out.buffer);
  for (let i = 0; i + 4 <= out.length; i++) {
    if (view.getUint32(i, true) === signature) {
      view.setUint16(i + offset, value, true);
      return out;
    }
  }
  throw new Error("no such header");
}

describe("unzipAtMost", () => {
  it("reads stored and deflated entries, skipping what it is told to", async () => {
    const zip = zipSync({
      "a.csv": [strToU8("EMAIL\na@example.com\n"), { level: 0 }],
      "dir/b.csv": strToU8("EMAIL\nb@example.com\n".repeat(50)),
      "__MACOSX/._a.csv": strToU8("junk"),
    }, { comment: "made by a test" });
    const result = await unzipAtMost(zip, { limit: 10_000, skip: (path) => path.startsWith("__MACOSX/") });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.entries.map((e) => [e.path, text(e.bytes).length])).toEqual([["a.csv", 20], ["dir/b.csv", 1000]]);
  });

  it("counts the bytes actually inflated across entries, not the sizes the archive states", async () => {
    const zip = zipSync({ "a.csv": new Uint8Array(6000).fill(97), "b.csv": new Uint8Array(6000).fill(98) });
    expect((await unzipAtMost(zip, { limit: 12_000 })).ok).toBe(true);
    expect(await unzipAtMost(zip, { limit: 11_999 })).toEqual({ ok: false, kind: "too_large", message: "inflates to more than the 11999-byte limit" });
    const stored = zipSync({ "a.csv": [new Uint8Array(6000), { level: 0 }] });
    expect(await unzipAtMost(stored, { limit: 5999 })).toMatchObject({ ok: false, kind: "too_large" });
  });

  it("refuses entries before inflating anything", async () => {
    const zip = zipSync({ "a.csv": strToU8("x"), "notes.txt": strToU8("y") });
    const result = await unzipAtMost(zip, { limit: 100, refuse: (path) => (path.endsWith(".csv") ? null : `no ${path}`) });
    expect(result).toEqual({ ok: false, kind: "refused", message: "no notes.txt" });
  });

  it("answers unreadable archives as such", async () => {
    const zip = zipSync({ "a.csv": strToU8("EMAIL\na@example.com\n".repeat(20)) });
    const cases: Array<[Uint8Array, RegExp]> = [
      [strToU8("not a zip at all"), /no central directory/],
      [zip.subarray(0, zip.length - 30), /no central directory|damaged/],
      [patch16(zip, 0x02014b50, 8, 1), /encrypted/],
      [patch16(zip, 0x02014b50, 10, 12), /compression method 12/],
      [patch16(zip, 0x02014b50, 42, 7), /damaged/],
    ];
    for (const [bytes, reason] of cases) {
      const result = await unzipAtMost(bytes, { limit: 10_000 });
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.kind).toBe("unreadable");
        expect(result.message).toMatch(reason);
      }
    }
    // Deflate data that is not deflate: the stream fails, and so does the read.
    const garbage = zip.slice();
    const dataStart = 30 + "a.csv".length;
    garbage.fill(0xff, dataStart, dataStart + 8);
    expect(await unzipAtMost(garbage, { limit: 10_000 })).toMatchObject({ ok: false, kind: "unreadable", message: expect.stringMatching(/a\.csv does not inflate/) });
  });

  it("lets other work of the isolate run while it inflates", async () => {
    const zip = zipSync({ "big.csv": new Uint8Array(32 * 1024 * 1024).fill(97) });
    let ticks = 0;
    let done = false;
    const ticker = (async () => {
      while (!done) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        ticks++;
      }
    })();
    const result = await unzipAtMost(zip, { limit: 64 * 1024 * 1024 });
    done = true;
    await ticker;
    expect(result.ok).toBe(true);
    // One yield per inflated megabyte: the timer ran about as often.
    expect(ticks).toBeGreaterThanOrEqual(16);
  });
});
