/**
 * Many rows as one bound value: a statement reads a JSON array with json_each instead of
 * binding a hundred parameters (D1's cap), so a write of thousands of rows is one statement,
 * and neither side pays D1's per-parameter conversion.
 *
 * A bound value may be up to 2,000,000 bytes in D1 (the 100 KB statement limit does not apply
 * to it); arrays are cut below that even when every character takes three UTF-8 bytes.
 */
export const MAX_JSON_ARRAY_CHARS = 640 * 1024;

/** One array's text and the items it holds, `from` inclusive, `to` exclusive. */
export interface JsonArrayPart {
  json: string;
  from: number;
  to: number;
}

/**
 * `items` as JSON arrays of at most `maxChars` characters, in order (an item longer than that
 * alone goes in an array of its own). Slices are stringified whole, one native call instead of
 * one per item and a join (a tenth of the batch endpoint's CPU, bench:profile): all the items
 * first, and after a slice too long, slices shorter by as much as it was over (all the rest
 * again after an item that was too long alone).
 */
export function jsonArrays(items: readonly unknown[], maxChars = MAX_JSON_ARRAY_CHARS): JsonArrayPart[] {
  const arrays: JsonArrayPart[] = [];
  let from = 0;
  let size = items.length;
  while (from < items.length) {
    const to = Math.min(items.length, from + size);
    const json = JSON.stringify(from === 0 && to === items.length ? items : items.slice(from, to));
    if (json.length > maxChars && to - from > 1) {
      size = Math.max(1, Math.floor(((to - from) * maxChars * 0.9) / json.length));
      continue;
    }
    arrays.push({ json, from, to });
    from = to;
    if (json.length > maxChars) size = items.length;
  }
  return arrays;
}
