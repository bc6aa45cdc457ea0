import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactsOf, createPanel, panelData, receiver } from "../../support/helpers";
import { chunkAt, deliver, job, quietEnv, runToEnd, storeImportJob } from "../../support/imports";
import { commitImportStatements, importChunkStatements } from "../../../src/store/imports";
import { withoutJsonbEach } from "../../support/json-each";

// An import chunk's rows and report lines are read with jsonb_each (decision 0036); a database
// without it must import the very same contacts and report with json_each. This file has its
// own isolate: the fallback it triggers stays in it.

const CSV = [
  "EMAIL,NAME,AGE",
  '"a@example.com","Ann, ✓ the ""first"" \\ \u0001",30',
  "b@example.com,Bob 😀,31",
  "bad-address,Nope,1",
  'c@example.com,"Cy ""C""\nSmith",32',
  "a@example.com,,33",
  "d@example.com,Dee,old",
].join("\r\n");

async function importWith(db: typeof panelData) {
  const panel = await createPanel();
  const ref = await storeImportJob(panel.id, { sources: [{ url: await receiver.putFile(`json-each-${crypto.randomUUID()}.csv`, CSV) }] });
  const done = await runToEnd(ref, quietEnv({ SHARD_1: db }).env);
  const contacts = (await contactsOf(panel.id)).map((contact) => [contact.key, contact.attributes]).sort();
  // The attributes' JSON text as stored, not only what it parses to.
  const { results: stored } = await panelData.prepare("SELECT pk_value, attrs FROM contacts WHERE panel_id = ? ORDER BY pk_value").bind(panel.id).all();
  const report = await (await env.FILES.get(done.errorReportKey!))!.text();
  return { counts: { total: done.total, created: done.created, updated: done.updated, failed: done.failed }, contacts, stored, report };
}

describe("importing through a database without jsonb_each", () => {
  it("imports the same contacts and reports the same rows with json_each, and keeps to json_each after", async () => {
    const expected = await importWith(panelData);
    expect(expected.counts).toEqual({ total: 6, created: 3, updated: 1, failed: 2 });
    expect(Object.fromEntries(expected.contacts)).toEqual({
      "a@example.com": { EMAIL: "a@example.com", NAME: 'Ann, ✓ the "first" \\ \u0001', AGE: 33 },
      "b@example.com": { EMAIL: "b@example.com", NAME: "Bob 😀", AGE: 31 },
      "c@example.com": { EMAIL: "c@example.com", NAME: 'Cy "C"\nSmith', AGE: 32 },
    });

    const old = withoutJsonbEach(panelData);
    // The first refusal meets a chunk another consumer committed first: still "stale", and
    // the isolate has learnt to use json_each all the same.
    const panel = await createPanel();
    const ref = await storeImportJob(panel.id, { sources: [{ url: await receiver.putFile(`stale-${crypto.randomUUID()}.csv`, CSV) }] });
    while ((await job(ref)).phase !== "rows") await deliver(ref, quietEnv().env);
    const at = await job(ref);
    const chunk = chunkAt(at, [["late@example.com", { EMAIL: "late@example.com" }]], at.seq + 1);
    expect(await commitImportStatements(old.db, importChunkStatements(old.db, at, chunk))).toBe("stale");
    expect(old.refused()).toBe(1);

    const first = await importWith(old.db);
    expect(first.counts).toEqual(expected.counts);
    expect(first.contacts).toEqual(expected.contacts);
    expect(first.stored.map((row) => row.attrs)).toEqual(expected.stored.map((row) => row.attrs));
    expect(first.report).toBe(expected.report);
    // Refused once; every chunk after went to json_each at once.
    expect(old.refused()).toBe(1);
    expect(await importWith(old.db)).toMatchObject({ counts: expected.counts, contacts: expected.contacts });
    expect(old.refused()).toBe(1);
  });
});
