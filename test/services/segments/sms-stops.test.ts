import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../../src/services/access/partitions";
import { segmentsCron } from "../../../src/services/segments/membership";
import { admin, apiFor, createPanel, TEST_SHARD } from "../../support/helpers";
import { keyOn, TWO } from "../../support/partitions";

// A saved segment's `reachable: sms` reads the number's stop on the contact's shard; a stop or a
// lift changes no contact, so shard migration 0121 marks such segments for a build on each shard
// whose stops changed, and the segments cron brings their stored members up to date.

describe("a saved segment reading SMS reachability", () => {
  it("loses a member whose number is stopped, and takes it back when the stop is lifted, on either shard of a partitioned panel", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const keys = [keyOn(panel.id, 0), keyOn(panel.id, TEST_SHARD), keyOn(panel.id, 0, 1)];
    const phones = ["919800000701", "919800000702", "919800000703"];
    for (const [i, EMAIL] of keys.entries()) expect((await apiFor(panel)("contact", "add", { data: { EMAIL, MOBILE: `+${phones[i]}` } })).status).toBe(200);
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Textable", match: { all: [{ reachable: "sms" }] } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const members = async () => {
      await segmentsCron.run(env, Date.now());
      const page = await admin("GET", `/panels/${panel.id}/segments/${saved.body.id}/contacts?limit=10`);
      expect(page.status).toBe(200);
      return page.body.contacts.map((c: { EMAIL: string }) => c.EMAIL).sort();
    };
    expect(await members()).toEqual([...keys].sort());

    // An operator stops two numbers, one of a contact on each shard.
    for (const phone of phones.slice(0, 2)) expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/${phone}`)).status).toBe(200);
    expect(await members()).toEqual([keys[2]]);
    // A lift sends to the number again: its contact is a member again.
    expect((await admin("DELETE", `/panels/${panel.id}/sms/suppressions/${phones[0]}`)).status).toBe(200);
    expect(await members()).toEqual([keys[0], keys[2]].sort());
  });
});
