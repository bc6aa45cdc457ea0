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

/** Items stringified first, to tell whether all of them can fit one array and else how many can. */
const PROBE_ITEMS = 32;
/** Arrays are aimed a tenth below the bound: items vary in length. */
const FILL = 0.9;

/**
 * `items` as JSON arrays of at most `maxChars` characters, in order (an item longer than that
 * alone goes in an array of its own). Slices are stringified whole, one native call instead of
 * one per item and a join (a tenth of the batch endpoint's CPU, bench:profile). The first few
 * items tell how many fit an array, so a list longer than one array is not stringified whole
 * for nothing (an import chunk's rows were stringified twice); after a slice too long anyway,
 * slices shorter by as much as it was over (all the rest again after an item too long alone).
 */
export function jsonArrays(items: readonly unknown[], maxChars = MAX_JSON_ARRAY_CHARS): JsonArrayPart[] {
  const arrays: JsonArrayPart[] = [];
  let from = 0;
  let size = firstSliceSize(items, maxChars);
  while (from < items.length) {
    const to = Math.min(items.length, from + size);
    const json = JSON.stringify(from === 0 && to === items.length ? items : items.slice(from, to));
    if (json.length > maxChars && to - from > 1) {
      size = Math.max(1, Math.floor(((to - from) * maxChars * FILL) / json.length));
      continue;
    }
    arrays.push({ json, from, to });
    from = to;
    if (json.length > maxChars) size = items.length;
  }
  return arrays;
}

/** All the items, unless the first few say they would not fit one array: then as many as they say would. */
function firstSliceSize(items: readonly unknown[], maxChars: number): number {
  if (items.length <= PROBE_ITEMS * 4) return items.length;
  const probe = JSON.stringify(items.slice(0, PROBE_ITEMS)).length;
  const fitting = Math.floor((PROBE_ITEMS * maxChars * FILL) / probe);
  return Math.max(1, Math.min(items.length, fitting));
}
