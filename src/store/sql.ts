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

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** Fixed words of the code (never input) as an SQL list: `('a', 'b')`. */
export function sqlWords(words: readonly string[]): string {
  return `(${words.map((word) => `'${word.replace(/'/g, "''")}'`).join(", ")})`;
}
