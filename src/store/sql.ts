/** D1 reports constraint failures only in the error text. */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed/i.test(error.message);
}

/** `?, ?, ?` for an IN list or a VALUES row of `count` parameters. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ");
}

/** D1 binds at most 100 parameters per statement; bulk writes are cut to fit. */
export const D1_MAX_PARAMS = 100;

/** Whether the bucket `expr` is in one of the ranges bound as `param`, a JSON array of [first, last] (domain/partitions.ts BucketRanges). */
export function inBucketRanges(expr: string, param: string): string {
  return `EXISTS (SELECT 1 FROM json_each(${param}) r WHERE ${expr} BETWEEN r.value ->> 0 AND r.value ->> 1)`;
}

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Text in the order SQLite's ORDER BY gives it (BINARY: UTF-8 bytes, which is code point
 * order), not JavaScript's (UTF-16 units, which puts U+E000-U+FFFF after the astral planes):
 * pages of several shards merged in the Worker keep each shard's order.
 */
export function compareStoredText(a: string, b: string): number {
  for (let i = 0; i < a.length && i < b.length; ) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
  }
  return Math.sign(a.length - b.length);
}

export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** Fixed words of the code (never input) as an SQL list: `('a', 'b')`. */
export function sqlWords(words: readonly string[]): string {
  return `(${words.map((word) => `'${word.replace(/'/g, "''")}'`).join(", ")})`;
}
