import { sha256Hex } from "../lib/crypto";

/**
 * How a suppression names the address or number of an erased contact: a hash salted with the
 * panel, so the stop holds if the address comes back while nothing readable of it is kept.
 */
export const ERASED_PREFIX = "erased:";

export async function erasedIdentifier(panelId: string, value: string): Promise<string> {
  return ERASED_PREFIX + (await sha256Hex(`${panelId}\n${value}`));
}

/** A statement's bounds for the erased identifiers of a panel (a range of the suppression key). */
export const ERASED_RANGE = { from: ERASED_PREFIX, to: "erased;" } as const;

/** Each of `values` and its erased identifier, to the value: a read of many stops by both keys maps its rows back. */
export async function erasedKeysOf(panelId: string, values: Iterable<string>): Promise<Map<string, string>> {
  const unique = [...new Set(values)];
  // Hashed all at once: one after another, a page of addresses waits on each digest in turn.
  const hashed = await Promise.all(unique.map((value) => erasedIdentifier(panelId, value)));
  const keys = new Map<string, string>();
  unique.forEach((value, i) => {
    keys.set(value, value);
    keys.set(hashed[i]!, value);
  });
  return keys;
}
