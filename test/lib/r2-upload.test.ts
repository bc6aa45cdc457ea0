import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { R2Upload } from "../../src/lib/r2-upload";

const MiB = 1024 * 1024;

function pattern(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed) & 255;
  return bytes;
}

async function sha(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("R2Upload", () => {
  it("stores a small object with one put", async () => {
    const key = `test/${crypto.randomUUID()}`;
    const upload = new R2Upload(env.FILES, key, { httpMetadata: { contentType: "text/csv" } });
    await upload.write(new TextEncoder().encode("a,b\n"));
    await upload.write(new TextEncoder().encode("1,2\n"));
    await upload.close();
    const object = await env.FILES.get(key);
    expect(await object!.text()).toBe("a,b\n1,2\n");
    expect(object!.httpMetadata?.contentType).toBe("text/csv");
  });

  it("stores a large object as a multipart upload of equal parts, byte for byte", async () => {
    const key = `test/${crypto.randomUUID()}`;
    const upload = new R2Upload(env.FILES, key, {}, 5 * MiB);
    const pieces = [pattern(3 * MiB + 17, 1), pattern(4 * MiB, 2), pattern(4 * MiB - 5, 3)];
    for (const piece of pieces) await upload.write(piece);
    await upload.close();
    const whole = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const piece of pieces) whole.set(piece, (at += piece.length) - piece.length);
    const stored = await env.FILES.get(key);
    expect(stored!.size).toBe(whole.length);
    expect(await sha(await stored!.arrayBuffer())).toBe(await sha(whole));
    expect(upload.size).toBe(whole.length);
  });

  it("leaves nothing behind when aborted", async () => {
    const key = `test/${crypto.randomUUID()}`;
    const upload = new R2Upload(env.FILES, key, {}, 5 * MiB);
    await upload.write(pattern(6 * MiB, 4));
    await upload.abort();
    expect(await env.FILES.head(key)).toBeNull();
  });
});
