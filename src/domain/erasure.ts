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
