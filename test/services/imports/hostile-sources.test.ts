import { beforeEach, describe, expect, it } from "vitest";
import { importNudge, MAX_IMPORT_ATTEMPTS, PANEL_IMPORT_SLOTS, type ImportRef } from "../../../src/services/imports";
import { leaseImportJob, releaseImportLease } from "../../../src/store/imports";
import { contactsOf, createPanel, panelData, receiver, type TestPanel } from "../../support/helpers";
import { deliver, hostFile, job, quietEnv, runToEnd, storeImportJob, TIGHT_DOWNLOADS as TIGHT, TINY } from "../../support/imports";

// Import downloads from hostile sources (issue 41): each attempt is bounded by the download
// limits (small here through the tuning), the job fails after MAX_IMPORT_ATTEMPTS with the
// reason, and one panel's jobs never take every consumer slot.

const tuning = { ...TINY, download: TIGHT };
const CSV = `EMAIL,NAME\n${Array.from({ length: 50 }, (_, i) => `u${i}@example.com,U${i}`).join("\n")}\n`;

let panel: TestPanel;

beforeEach(async () => {
  panel = await createPanel();
});

const buckets = new Map<string, string>();

async function hostile(answer: { delayMs?: number; dripMs?: number; resetAfterBytes?: number }): Promise<string> {
  const { url, bucket } = await receiver.hostile("contacts.csv", { body: CSV, ...answer });
  buckets.set(url, bucket);
  return url;
}

/** How many times the job's source was asked for: once per attempt. */
async function fetchesOf(url: string): Promise<number> {
  return (await receiver.requests(buckets.get(url)!)).length;
}

/** Delivers the job's messages (retries included, without their delays) until it is done; returns it and the time taken. */
async function failAllAttempts(ref: ImportRef): Promise<{ done: Awaited<ReturnType<typeof job>>; ms: number }> {
  const started = Date.now();
  const done = await runToEnd(ref, quietEnv().env, tuning);
  return { done, ms: Date.now() - started };
}

describe("import downloads from hostile sources", () => {
  it("fails a source that never sends its headers after the attempts, each bounded, with the reason", async () => {
    const url = await hostile({ delayMs: 5_000 });
    const ref = await storeImportJob(panel.id, { sources: [{ url }] });
    const { done, ms } = await failAllAttempts(ref);
    expect(await fetchesOf(url)).toBe(MAX_IMPORT_ATTEMPTS);
    expect(done).toMatchObject({ status: "failed" });
    expect(done.reason).toMatch(/^The file could not be downloaded: no answer from 127\.0\.0\.1:\d+ within 300 ms$/);
    // Five attempts of 300 ms each, not five of ten minutes.
    expect(ms).toBeLessThan(MAX_IMPORT_ATTEMPTS * 300 + 8_000);
  });

  it("fails a source that drips a byte a second, with the reason", async () => {
    const url = await hostile({ dripMs: 1000 });
    const ref = await storeImportJob(panel.id, { sources: [{ url }] });
    const { done, ms } = await failAllAttempts(ref);
    expect(await fetchesOf(url)).toBe(MAX_IMPORT_ATTEMPTS);
    expect(done).toMatchObject({ status: "failed" });
    expect(done.reason).toMatch(/could not be downloaded completely: 127\.0\.0\.1:\d+ sent too slowly: \d bytes in 300 ms, below the minimum of 1024 bytes per second$/);
    expect(ms).toBeLessThan(MAX_IMPORT_ATTEMPTS * 1_000 + 8_000);
    expect(await contactsOf(panel.id)).toEqual([]);
  });

  it("fails a source whose connection resets mid-body, with the reason", async () => {
    const ref = await storeImportJob(panel.id, { sources: [{ url: await hostile({ resetAfterBytes: 18 }) }] });
    const { done } = await failAllAttempts(ref);
    expect(done).toMatchObject({ status: "failed" });
    expect(done.reason).toMatch(/could not be downloaded completely: the connection to 127\.0\.0\.1:\d+ broke after \d+ bytes$/);
  });

  it("ends an attempt at the deadline even when the source keeps the minimum rate", async () => {
    // 5 bytes a second passes a minimum of 1 byte a second; the 1.5 s deadline still ends it.
    const slowButSteady = { ...tuning, download: { ...TIGHT, minBytesPerSecond: 1, windowMs: 1_000, deadlineMs: 1_500 } };
    const ref = await storeImportJob(panel.id, { sources: [{ url: await hostile({ dripMs: 200 }) }] });
    const started = Date.now();
    const result = await deliver(ref, quietEnv().env, slowButSteady);
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(result.retryMessages).toHaveLength(1);
    expect((await job(ref)).lastError).toMatch(/did not finish sending within 1500 ms/);
  });

  it("completes another panel's import while a hostile download runs", async () => {
    const other = await createPanel();
    const steady = { ...tuning, download: { ...TIGHT, minBytesPerSecond: 1, windowMs: 1_000, deadlineMs: 4_000 } };
    const hostileRef = await storeImportJob(panel.id, { sources: [{ url: await hostile({ dripMs: 200 }) }] });
    let hostileEnded = false;
    const hostileStep = deliver(hostileRef, quietEnv().env, steady).then((result) => ((hostileEnded = true), result));
    const ordinary = await storeImportJob(other.id, { sources: [{ url: await hostFile(CSV) }] });
    const done = await runToEnd(ordinary, quietEnv().env, tuning);
    expect(done).toMatchObject({ status: "completed", created: 50 });
    expect(hostileEnded).toBe(false);
    expect((await hostileStep).retryMessages).toHaveLength(1);
  });

  it("lets one panel's jobs hold at most PANEL_IMPORT_SLOTS consumer slots; its next job waits, other panels' run", async () => {
    // Two jobs of the panel held by consumers (as two hostile downloads in progress would be).
    const held = await Promise.all(
      Array.from({ length: PANEL_IMPORT_SLOTS }, async () => storeImportJob(panel.id, { sources: [{ url: await hostile({ delayMs: 5_000 }) }] })),
    );
    for (const ref of held) expect(await leaseImportJob(panelData, ref, `held-${ref.jobId}`, Date.now(), Date.now() + 60_000)).not.toBe("held");

    const waiting = await storeImportJob(panel.id, { sources: [{ url: await hostFile(CSV) }] });
    const quiet = quietEnv();
    const deferred = await deliver(waiting, quiet.env, tuning);
    expect(deferred.explicitAcks).toHaveLength(1);
    expect(deferred.retryMessages).toHaveLength(0);
    expect(quiet.sent).toEqual([importNudge(waiting)]);
    expect(await job(waiting)).toMatchObject({ status: "queued", phase: "fetch", attempts: 0 });

    const other = await createPanel();
    const ordinary = await storeImportJob(other.id, { sources: [{ url: await hostFile(CSV) }] });
    expect(await runToEnd(ordinary, quietEnv().env, tuning)).toMatchObject({ status: "completed", created: 50 });

    // Once a slot frees, the waiting job runs.
    await releaseImportLease(panelData, held[0]!, `held-${held[0]!.jobId}`, Date.now());
    expect(await runToEnd(waiting, quietEnv().env, tuning)).toMatchObject({ status: "completed", created: 50 });
  });
});
