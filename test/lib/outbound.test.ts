import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fetchOutbound, judgeResolvedHost, OutboundError } from "../../src/lib/outbound";
import { checkOutboundUrl } from "../../src/lib/outbound-address";
import { publishTxt } from "../support/dns";

describe("checkOutboundUrl", () => {
  it.each([
    "https://example.com/a.csv",
    "http://files.example.org:8080/x?y=1",
    "https://8.8.8.8/x",
    "https://example.com./a.csv",
    "https://[2606:4700:4700::1111]/x",
    "https://198.20.0.1/x",
    "https://[2001:4860:4860::8888]/x",
  ])("accepts %s", (url) => {
    expect(checkOutboundUrl(url, false)).toMatchObject({ ok: true });
  });

  it.each([
    ["ftp://example.com/a.csv", "http or https"],
    ["https://user:pw@example.com/a.csv", "credentials"],
    ["not a url", "absolute"],
    ["http://127.0.0.1:8080/x", "private"],
    ["http://127.1/x", "private"],
    ["http://0x7f000001/x", "private"],
    ["http://2130706433/x", "private"],
    ["http://0/x", "private"],
    ["http://localhost/x", "private"],
    ["http://localhost./x", "private"],
    ["http://LOCALHOST../x", "private"],
    ["http://app.localhost./x", "private"],
    ["http://printer.local/x", "private"],
    ["http://db.internal./x", "private"],
    ["http://nas.home.arpa/x", "private"],
    ["http://10.1.2.3/x", "private"],
    ["http://100.64.0.1/x", "private"],
    ["http://172.20.0.1/x", "private"],
    ["http://192.168.1.1/x", "private"],
    ["http://169.254.169.254/latest/meta-data", "private"],
    ["http://192.0.0.8/x", "private"],
    ["http://192.0.2.1/x", "private"],
    ["http://198.18.0.1/x", "private"],
    ["http://198.19.255.254/x", "private"],
    ["http://198.51.100.7/x", "private"],
    ["http://203.0.113.9/x", "private"],
    ["http://224.0.0.1/x", "private"],
    ["http://255.255.255.255/x", "private"],
    ["http://[::]/x", "private"],
    ["http://[::1]/x", "private"],
    ["http://[fd00::1]/x", "private"],
    ["http://[fe80::1]/x", "private"],
    ["http://[fec0::1]/x", "private"],
    ["http://[feff::1]/x", "private"],
    ["http://[ff02::1]/x", "private"],
    ["http://[2001:db8::1]/x", "private"],
    ["http://[100::1]/x", "private"],
    ["http://[64:ff9b:1::a00:1]/x", "private"],
    ["http://[::ffff:127.0.0.1]/x", "private"],
    ["http://[::ffff:10.0.0.1]/x", "private"],
    ["http://[::127.0.0.1]/x", "private"],
    ["http://[::ffff:0:127.0.0.1]/x", "private"],
    ["http://[64:ff9b::7f00:1]/x", "private"],
    ["http://[64:ff9b::169.254.169.254]/x", "private"],
    ["http://[2002:7f00:1::]/x", "private"],
    ["http://[2002:c0a8:101::1]/x", "private"],
    ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", "private"],
    ["http://[::ffff:8.8.8.8]/x", "embeds an IPv4"],
    ["http://[64:ff9b::808:808]/x", "embeds an IPv4"],
    ["http://intranet/x", "single-label"],
    ["http://metadata./x", "single-label"],
    ["http://printer:8080/x", "single-label"],
  ])("refuses %s", (url, reason) => {
    const check = checkOutboundUrl(url, false);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain(reason);
  });

  it("allows loopback and single-label names when private fetches are allowed", () => {
    expect(checkOutboundUrl("http://127.0.0.1:8080/x", true).ok).toBe(true);
    expect(checkOutboundUrl("http://localhost:8080/x", true).ok).toBe(true);
    expect(checkOutboundUrl("https://user:pw@127.0.0.1/x", true).ok).toBe(false);
  });
});

describe("with private fetches off, a host given by name is resolved before any connection", () => {
  // A whole env (config(env) reads every var), with private fetches off.
  const strict = { ...env, ALLOW_PRIVATE_FETCH: "false" };
  const port = new URL(env.RECEIVER_URL).port;
  const bucket = `dns-guard-${crypto.randomUUID()}`;
  const fresh = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}.example.com`;

  async function attempt(host: string): Promise<OutboundError> {
    try {
      await fetchOutbound(strict, `http://${host}:${port}/hooks/${bucket}`, {}, { timeoutMs: 1_000 });
    } catch (error) {
      if (error instanceof OutboundError) return error;
      throw error;
    }
    throw new Error(`${host} was fetched`);
  }

  it("refuses names whose A or AAAA answer is loopback, private or special-use, and a name that does not resolve", async () => {
    const loopback = fresh("loop");
    const mixed = fresh("mixed");
    const privateV4 = fresh("lan");
    const mapped = fresh("mapped");
    const broken = fresh("broken");
    await publishTxt({
      [`${loopback} A`]: ["127.0.0.1"],
      [`${mixed} A`]: ["93.184.216.34"],
      [`${mixed} AAAA`]: ["::1"],
      [`${privateV4} A`]: ["10.1.2.3"],
      [`${mapped} AAAA`]: ["::ffff:127.0.0.1"],
      [`${broken} A`]: "SERVFAIL",
    });
    for (const host of [loopback, mixed, privateV4, mapped]) {
      const refused = await attempt(host);
      expect(refused.code, host).toBe("blocked");
      expect(refused.message, host).toContain("resolves to a private, loopback or special-use address");
    }
    expect((await attempt(fresh("nowhere"))).message).toContain("does not resolve to any address");
    expect((await attempt(broken)).message).toContain("could not be resolved");
    // Nothing reached the listener the names point at.
    const received = await fetch(`${env.RECEIVER_URL}/__requests/${bucket}`);
    expect(await received.json()).toEqual([]);
  });

  it("lets a name with only public addresses through to the connection", async () => {
    const host = fresh("public");
    await publishTxt({ [`${host} A`]: ["93.184.216.34"] });
    expect(await judgeResolvedHost(env.DOH_URL, host)).toEqual({ ok: true });
  });

  it("keeps a verdict for the records' TTL, then looks again", async () => {
    const host = fresh("rebind");
    await publishTxt({ [`${host} A`]: ["1.1.1.1"] });
    const now = Date.now();
    expect(await judgeResolvedHost(env.DOH_URL, host, now)).toEqual({ ok: true });
    await publishTxt({ [`${host} A`]: ["127.0.0.1"] });
    expect(await judgeResolvedHost(env.DOH_URL, host, now + 1_000)).toEqual({ ok: true });
    expect((await judgeResolvedHost(env.DOH_URL, host, now + 301_000)).ok).toBe(false);
  });
});
