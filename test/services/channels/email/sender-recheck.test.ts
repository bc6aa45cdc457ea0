import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { runCron } from "../../../support/cron";
import { emailSetupWarningTask } from "../../../../src/services/channels/email/providers";
import { RECHECK_OTHERS_MS, RECHECK_VERIFIED_MS, recheckSenderDomainsTask, senderStanding } from "../../../../src/services/channels/email/sender-domains";
import { admin, createPanel, panelData, PUBLIC_HTTPS, type TestPanel } from "../../../support/helpers";
import { publishTxt, uniqueDomain } from "../../../support/dns";

// The cron looks sender domains up again: verified ones daily, the others hourly. Records
// removed since un-verify a domain (and real email from it is refused again); records published
// since verify it; a resolver that fails does not un-verify anything.

type Published = { purpose: string; name: string; value: string | null };

async function addDomain(panel: TestPanel, domain: string) {
  const added = await admin("POST", `/panels/${panel.id}/sender-domains`, { domain });
  expect(added.status).toBe(201);
  const records = Object.fromEntries((added.body.records as Published[]).map((r) => [r.purpose, r]));
  const all = { [domain]: ["v=spf1 include:amazonses.com ~all"], [records.dkim!.name]: [records.dkim!.value!], [records.dmarc!.name]: [records.dmarc!.value!] };
  return { records, all };
}

const stateOf = async (panel: TestPanel, domain: string) => (await admin("GET", `/panels/${panel.id}/sender-domains/${domain}`)).body;
const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS } as unknown as Env;

describe("the scheduled re-check of sender domains", () => {
  it("un-verifies a domain whose records went away, keeps it through a resolver failure, and verifies it again once they are back", async () => {
    const panel = await createPanel();
    const domain = uniqueDomain();
    const { records, all } = await addDomain(panel, domain);
    await publishTxt(all);
    expect((await admin("POST", `/panels/${panel.id}/sender-domains/${domain}/verify`)).body.state).toBe("verified");
    const checkedAt = (await stateOf(panel, domain)).checked_at as string;
    const t0 = Date.parse(checkedAt);

    // Not due yet: a verified domain waits a day.
    await recheckSenderDomainsTask.run(env, t0 + RECHECK_VERIFIED_MS - 60_000);
    expect((await stateOf(panel, domain)).checked_at).toBe(checkedAt);

    // The resolver fails: looked up, still verified, the check says why.
    await publishTxt({ [domain]: "SERVFAIL" });
    await recheckSenderDomainsTask.run(env, t0 + RECHECK_VERIFIED_MS);
    let now = await stateOf(panel, domain);
    expect(now.checked_at).not.toBe(checkedAt);
    expect(now.state).toBe("verified");
    expect(now.checks.spf).toMatchObject({ status: "fail", reason: `the DNS lookup of ${domain} failed (status 2)` });

    // The DMARC record was removed: no longer verified, and real email from it is refused again.
    await publishTxt({ [domain]: all[domain]!, [records.dmarc!.name]: [] });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    await runCron(t0 + 2 * RECHECK_VERIFIED_MS, [recheckSenderDomainsTask]);
    now = await stateOf(panel, domain);
    expect(now.state).toBe("failed");
    expect(now.checks.dmarc).toMatchObject({ status: "fail", reason: "no DMARC record (v=DMARC1) is published" });
    expect(warn).toHaveBeenCalledWith(`sender domain ${domain} of panel ${panel.id} is no longer verified: dmarc: no DMARC record (v=DMARC1) is published`);
    warn.mockRestore();
    expect((await senderStanding(sesEnv, panelData, panel.id, `news@${domain}`)).refusal).toMatch(/^the sender domain .* is not verified in this panel/);

    // Published again: a failing domain is looked up hourly, and verified without anyone pressing Verify.
    await publishTxt(all);
    await recheckSenderDomainsTask.run(env, t0 + 2 * RECHECK_VERIFIED_MS + RECHECK_OTHERS_MS - 60_000);
    expect((await stateOf(panel, domain)).state).toBe("failed");
    await recheckSenderDomainsTask.run(env, t0 + 2 * RECHECK_VERIFIED_MS + RECHECK_OTHERS_MS);
    expect((await stateOf(panel, domain)).state).toBe("verified");
    expect((await senderStanding(sesEnv, panelData, panel.id, `news@${domain}`)).refusal).toBeNull();
  });

  it("verifies a domain never checked once its records are published, an hour after it was added", async () => {
    const panel = await createPanel();
    const domain = uniqueDomain("fresh");
    const { all } = await addDomain(panel, domain);
    await publishTxt(all);
    const created = Date.parse((await stateOf(panel, domain)).created_at);
    await recheckSenderDomainsTask.run(env, created + RECHECK_OTHERS_MS - 60_000);
    expect((await stateOf(panel, domain)).state).toBe("pending");
    await recheckSenderDomainsTask.run(env, created + RECHECK_OTHERS_MS);
    expect((await stateOf(panel, domain)).state).toBe("verified");
  });
});

describe("a deployment configured for real email with an unusable PUBLIC_BASE_URL", () => {
  it("logs why real email is refused, once per isolate; the outbox logs nothing", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    await emailSetupWarningTask.run(env, Date.now());
    expect(warn).not.toHaveBeenCalled();
    const http = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: "http://127.0.0.1:8787" } as unknown as Env;
    await emailSetupWarningTask.run(http, Date.now());
    await emailSetupWarningTask.run(http, Date.now());
    expect(warn.mock.calls).toEqual([
      ["EMAIL_PROVIDER is ses, but real email is refused: PUBLIC_BASE_URL is http://127.0.0.1:8787: links in real email must use https: no campaign or journey email is sent until it is fixed"],
    ]);
    warn.mockRestore();
  });
});
