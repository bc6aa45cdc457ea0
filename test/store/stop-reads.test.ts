import { describe, expect, it } from "vitest";
import { erasedIdentifier } from "../../src/domain/erasure";
import { MAX_JSON_ARRAY_CHARS } from "../../src/store/json-arrays";
import { stoppedPhones, suppressPhone } from "../../src/store/sms";
import { suppressAddress, suppressionsOf } from "../../src/store/suppressions";
import { createPanel, panelData } from "../support/helpers";
import { recordingBinds } from "../support/recorded-binds";

/** The shard, keeping the longest value bound to each statement that reads `table`. */
function boundLengths(table: string) {
  const { db, bound } = recordingBinds(panelData, (sql) => sql.includes(`FROM ${table}`));
  return { db, lengths: () => bound.map((values) => Math.max(...values.map((v) => String(v).length))) };
}

// A journey simulation reads the stops of 10,000 contacts at once: more addresses (and their
// erased keys) than one bound JSON array holds. Each read answers for all of them.
describe("reads of many email and SMS stops", () => {
  it("finds the suppressions of more addresses than one bound array holds, first and last", async () => {
    const panel = await createPanel();
    const addresses = Array.from({ length: 14_000 }, (_, i) => `customer.number.${String(i).padStart(6, "0")}@a-rather-long-domain.example`);
    expect(JSON.stringify(addresses).length).toBeGreaterThan(MAX_JSON_ARRAY_CHARS);
    await suppressAddress(panelData, panel.id, addresses[0]!, "hard_bounce", null, 0);
    await suppressAddress(panelData, panel.id, addresses.at(-1)!, "unsubscribe", null, 0);
    const { db, lengths } = boundLengths("email_suppressions");
    const found = await suppressionsOf(db, panel.id, addresses);
    expect([...found]).toEqual([
      [addresses[0], "hard_bounce"],
      [addresses.at(-1), "unsubscribe"],
    ]);
    // Each read's array within the bound (D1 refuses a bound value over 2,000,000 bytes).
    expect(lengths()).toHaveLength(2);
    for (const length of lengths()) expect(length).toBeLessThanOrEqual(MAX_JSON_ARRAY_CHARS);
    expect(await suppressionsOf(panelData, panel.id, [])).toEqual(new Map());
  });

  it("finds stopped numbers, an erased one's by its hash, among more than one bound array holds", async () => {
    const panel = await createPanel();
    // With its erased key each number takes over 80 characters: 10,000 of them need two arrays.
    const phones = Array.from({ length: 10_000 }, (_, i) => `1555${String(i).padStart(7, "0")}`);
    await suppressPhone(panelData, panel.id, phones[0]!, "stop", 0);
    await suppressPhone(panelData, panel.id, await erasedIdentifier(panel.id, phones.at(-1)!), "stop", 0);
    const { db, lengths } = boundLengths("sms_suppressions");
    expect([...(await stoppedPhones(db, panel.id, phones)).keys()].sort()).toEqual([phones[0], phones.at(-1)].sort());
    expect(lengths()).toHaveLength(2);
    for (const length of lengths()) expect(length).toBeLessThanOrEqual(MAX_JSON_ARRAY_CHARS);
  });
});
