import { describe, expect, it } from "vitest";
import { checkOutboundUrl } from "../../src/lib/outbound";

describe("checkOutboundUrl", () => {
  it.each(["https://example.com/a.csv", "http://files.example.org:8080/x?y=1", "https://8.8.8.8/x"])("accepts %s", (url) => {
    expect(checkOutboundUrl(url, false).ok).toBe(true);
  });

  it.each([
    ["ftp://example.com/a.csv", "http or https"],
    ["https://user:pw@example.com/a.csv", "credentials"],
    ["not a url", "absolute"],
    ["http://127.0.0.1:8080/x", "private"],
    ["http://localhost/x", "private"],
    ["http://10.1.2.3/x", "private"],
    ["http://172.20.0.1/x", "private"],
    ["http://192.168.1.1/x", "private"],
    ["http://169.254.169.254/latest/meta-data", "private"],
    ["http://[::1]/x", "private"],
    ["http://[fd00::1]/x", "private"],
    ["http://[::ffff:127.0.0.1]/x", "private"],
  ])("refuses %s", (url, reason) => {
    const check = checkOutboundUrl(url, false);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain(reason);
  });

  it("allows loopback when private fetches are allowed", () => {
    expect(checkOutboundUrl("http://127.0.0.1:8080/x", true).ok).toBe(true);
    expect(checkOutboundUrl("https://user:pw@127.0.0.1/x", true).ok).toBe(false);
  });
});
