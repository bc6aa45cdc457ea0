const encoder = new TextEncoder();

/** The length of `text` in UTF-8, which size limits on stored text are stated in. */
export function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

/** Lets the isolate's other requests run: a long read loop of CPU-bound chunks would otherwise hold it. */
export function yieldToOthers(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

export interface ReadOptions {
  /** Yield to other requests each time this many bytes were read (chunks that cost CPU, such as inflating). */
  yieldEvery?: number;
}

/**
 * Reads a whole stream, stopping (and cancelling it) as soon as it grows past `limit` bytes:
 * null then. Used for request bodies, files fetched from callers' URLs, and inflated zip entries.
 */
export async function readAtMost(stream: ReadableStream<Uint8Array> | null, limit: number, options: ReadOptions = {}): Promise<Uint8Array | null> {
  if (!stream) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let sinceYield = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
    sinceYield += value.byteLength;
    if (options.yieldEvery !== undefined && sinceYield >= options.yieldEvery) {
      sinceYield = 0;
      await yieldToOthers();
    }
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** `a` then `b` in one new array (`b` itself when `a` is empty). */
export function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
