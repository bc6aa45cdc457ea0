import { describe, expect, it } from "vitest";
import { ANY_PANEL, countFormAttemptsStatement, formLimitRefusal } from "../../src/store/form-attempts";
import { shard0 } from "../support/partitions";

// The signup form limits' count on a shard (decision 0049): a count past its limit fails the
// batch it leads, which writes nothing, and the failure names the limit; any other failure of
// the batch names none.

const WINDOW_MS = 600_000;
const now = Date.now();

/** The failure of `batch`, or null when it succeeded. */
async function failureOf(batch: Promise<unknown>): Promise<unknown> {
  try {
    await batch;
    return null;
  } catch (error) {
    return error;
  }
}

describe("form_attempts", () => {
  it("refuses a batch past a limit as a whole, naming the limit; another failure names none", async () => {
    const panelId = `pnl_attempts_${crypto.randomUUID().slice(0, 8)}`;
    const ip = { panelId: ANY_PANEL, subject: `ip-${panelId}`, limit: 3 };
    const key = { panelId, subject: `key-${panelId}`, limit: 2 };
    const count = () => countFormAttemptsStatement(shard0, [ip, key], now, now - WINDOW_MS);
    // A statement after the count stands for the submission's write.
    const write = (n: number) => shard0.prepare("INSERT INTO panel_counts (panel_id, subject, n, counted_at) VALUES (?, ?, ?, ?)").bind(panelId, `write-${n}`, n, now);
    const writes = () => shard0.prepare("SELECT COUNT(*) AS n FROM panel_counts WHERE panel_id = ?").bind(panelId).first<number>("n");
    const attempts = () =>
      shard0.prepare("SELECT subject, attempts FROM form_attempts WHERE subject IN (?, ?) ORDER BY subject").bind(ip.subject, key.subject).all().then((r) => r.results);

    expect(await failureOf(shard0.batch([count(), write(1)]))).toBeNull();
    expect(await failureOf(shard0.batch([count(), write(2)]))).toBeNull();
    const third = await failureOf(shard0.batch([count(), write(3)]));
    expect(formLimitRefusal(third)).toBe("address");
    expect(await writes()).toBe(2);
    expect(await attempts()).toEqual([{ subject: ip.subject, attempts: 2 }, { subject: key.subject, attempts: 2 }]);

    // The IP's limit, counted first, is the one named when both are past.
    const other = { ...key, subject: `other-${panelId}` };
    expect(await failureOf(shard0.batch([countFormAttemptsStatement(shard0, [ip, other], now, now - WINDOW_MS), write(4)]))).toBeNull();
    expect(formLimitRefusal(await failureOf(shard0.batch([count(), write(5)])))).toBe("ip");
    expect(await writes()).toBe(3);

    // A failure of the write itself (a repeated key) is no refusal, and rolls the count back.
    const failed = await failureOf(shard0.batch([countFormAttemptsStatement(shard0, [{ ...key, subject: `third-${panelId}` }], now, now - WINDOW_MS), write(1)]));
    expect(failed).not.toBeNull();
    expect(formLimitRefusal(failed)).toBeNull();
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM form_attempts WHERE subject = ?").bind(`third-${panelId}`).first<number>("n")).toBe(0);

    // A window that ended starts over.
    const later = now + WINDOW_MS + 1;
    expect(await failureOf(shard0.batch([countFormAttemptsStatement(shard0, [ip, key], later, later - WINDOW_MS), write(6)]))).toBeNull();
    expect(await attempts()).toEqual([{ subject: ip.subject, attempts: 1 }, { subject: key.subject, attempts: 1 }]);
  });
});
