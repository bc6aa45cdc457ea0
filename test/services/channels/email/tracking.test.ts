import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TrackingSigner } from "../../../../src/services/channels/email/tracking";

const encoder = new TextEncoder();

function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * A campaign token exactly as campaign mail has carried it since the first release (the wire
 * format written out by hand here, not by the signer): lines `code, panel, campaign, contact[,
 * url]`, HMAC-SHA256 with an HKDF-derived key, cut to 16 bytes. Mail already delivered holds
 * such tokens, so they must keep verifying.
 */
async function campaignTokenOfFirstRelease(fields: string[]): Promise<string> {
  const raw = Uint8Array.from(atob(env.SECRETS_KEY), (c) => c.charCodeAt(0));
  const base = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey"]);
  const key = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: encoder.encode("apiv2 email tracking v1") },
    base,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign"],
  );
  const payload = encoder.encode(fields.join("\n"));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, payload)).subarray(0, 16);
  return `${base64Url(payload)}.${base64Url(mac)}`;
}

describe("tracking tokens", () => {
  const signer = new TrackingSigner(env.SECRETS_KEY);

  it("campaign tokens of the first release (readable payload) still verify", async () => {
    const open = await campaignTokenOfFirstRelease(["o", "pnl_1", "cmp_9", "42"]);
    expect(await signer.verify(open, "open")).toEqual({ kind: "open", panelId: "pnl_1", campaignId: "cmp_9", contactId: 42 });
    const click = await campaignTokenOfFirstRelease(["c", "pnl_1", "cmp_9", "42", "https://shop.example.com/a?b=1"]);
    expect(await signer.verify(click, "click")).toEqual({ kind: "click", panelId: "pnl_1", campaignId: "cmp_9", contactId: 42, url: "https://shop.example.com/a?b=1" });
    const unsubscribe = await campaignTokenOfFirstRelease(["u", "pnl_1", "cmp_9", "42"]);
    expect(await signer.verify(unsubscribe, "unsubscribe")).toEqual({ kind: "unsubscribe", panelId: "pnl_1", campaignId: "cmp_9", contactId: 42 });
    // A token of the first release altered by one character is refused.
    expect(await signer.verify(open.replace(/.$/, (c) => (c === "A" ? "B" : "A")), "open")).toBeNull();
  });

  it("new tokens are opaque: decoded, they show neither the panel, the campaign, the contact nor the link", async () => {
    const claim = { kind: "click" as const, panelId: "pnl_visible", campaignId: "cmp_visible", contactId: 4242, url: "https://shop.example.com/visible" };
    const token = await signer.sign(claim);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    const decoded = atob(token.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(token.length / 4) * 4, "="));
    for (const secret of ["pnl_visible", "cmp_visible", "4242", "visible", "shop.example"]) expect(decoded).not.toContain(secret);
    expect(await signer.verify(token, "click")).toEqual(claim);
    // Deterministic: the same message always carries the same links.
    expect(await signer.sign(claim)).toBe(token);
    // Neighbouring contacts get unrelated tokens (nothing sequential to read or guess).
    const next = await signer.sign({ ...claim, contactId: 4243 });
    expect(next.slice(0, 8)).not.toBe(token.slice(0, 8));
    // One flipped bit anywhere, or a token cut short, is refused.
    const bytes = Uint8Array.from(decoded, (c) => c.charCodeAt(0));
    for (const at of [0, 15, 16, bytes.length - 1]) {
      const changed = bytes.slice();
      changed[at]! ^= 1;
      expect(await signer.verify(base64Url(changed), "click")).toBeNull();
    }
    expect(await signer.verify(base64Url(bytes.subarray(0, 16)), "click")).toBeNull();
    expect(await signer.verify("", "click")).toBeNull();
  });

  it("journey tokens name the message by its msgid, for each kind, and are never read as another kind", async () => {
    const message = { panelId: "pnl_1", msgid: "ins_abc.mail" };
    const open = await signer.sign({ kind: "open", ...message });
    const click = await signer.sign({ kind: "click", ...message, url: "https://shop.example.com/x" });
    const unsubscribe = await signer.sign({ kind: "unsubscribe", ...message });
    expect(await signer.verify(open, "open")).toEqual({ kind: "open", ...message });
    expect(await signer.verify(click, "click")).toEqual({ kind: "click", ...message, url: "https://shop.example.com/x" });
    expect(await signer.verify(unsubscribe, "unsubscribe")).toEqual({ kind: "unsubscribe", ...message });
    expect(await signer.verify(open, "click")).toBeNull();
    expect(await signer.verify(open, "unsubscribe")).toBeNull();
    expect(await signer.verify(click, "open")).toBeNull();
    // Same panel and message, another secret: not ours.
    expect(await new TrackingSigner(btoa("another secret key of 32 bytes!!")).verify(open, "open")).toBeNull();
  });
});
