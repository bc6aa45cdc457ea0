/**
 * Many rows as one bound value: a statement reads a JSON array with json_each or jsonb_each instead of
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

/** Items stringified first, spread over the list, to tell whether all of them can fit one array and else how many can. */
const PROBE_ITEMS = 32;
/** Arrays are aimed a tenth below the bound: items vary in length. */
const FILL = 0.9;

/**
 * `items` as JSON arrays of at most `maxChars` characters, in order (an item longer than that
 * alone goes in an array of its own). Slices are stringified whole, one native call instead of
 * one per item and a join (a tenth of the batch endpoint's CPU, bench:profile). A few items
 * spread over a long list tell whether it fits one array; when it does not, slices start at
 * what fits, so the whole list is not stringified for nothing (an import chunk's rows were
 * stringified twice), and each next slice is sized by the characters per item of the array
 * before it. A slice too long anyway is tried again shorter by as much as it was over.
 */
export function jsonArrays(items: readonly unknown[], maxChars = MAX_JSON_ARRAY_CHARS): JsonArrayPart[] {
  const arrays: JsonArrayPart[] = [];
  let from = 0;
  let size = firstSliceSize(items, maxChars);
  while (from < items.length) {
    const to = Math.min(items.length, from + size);
    const json = JSON.stringify(from === 0 && to === items.length ? items : items.slice(from, to));
    if (json.length > maxChars && to - from > 1) {
      size = slotsFor(json.length / (to - from), maxChars);
      continue;
    }
    arrays.push({ json, from, to });
    // After an item too long alone, the rest is tried whole again.
    size = json.length > maxChars ? items.length : slotsFor(json.length / (to - from), maxChars);
    from = to;
  }
  return arrays;
}

/** How many items of `charsPerItem` fit an array, aiming below the bound. */
function slotsFor(charsPerItem: number, maxChars: number): number {
  return Math.max(1, Math.floor((maxChars * FILL) / charsPerItem));
}

/** All the items, unless a probe of a few says they would not fit one array: then as many as it says would. */
function firstSliceSize(items: readonly unknown[], maxChars: number): number {
  if (items.length <= PROBE_ITEMS * 4) return items.length;
  const step = items.length / PROBE_ITEMS;
  const probe = Array.from({ length: PROBE_ITEMS }, (_, i) => items[Math.floor(i * step)]);
  const charsPerItem = JSON.stringify(probe).length / PROBE_ITEMS;
  return charsPerItem * items.length <= maxChars ? items.length : slotsFor(charsPerItem, maxChars);
}
