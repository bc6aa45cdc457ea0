import { describe, expect, it } from "vitest";
import { applyTracking, buildMime, compileTemplate, encodeHeaderText, personalize, trackableLinks } from "../../src/domain/email-message";

const urls = { clicks: ["https://t.example/c/1", "https://t.example/c/2"], open: "https://t.example/o", unsubscribe: "https://t.example/u" };

describe("merge tags", () => {
  it("fills {{NAME}} and any attribute, case-insensitively, with a fallback when missing or empty", () => {
    const template = compileTemplate("Hi {{NAME}} / {{ firstname | there }} / {{AGE}} / {{CITY|}} / {{ COUNTRY|the world }}");
    expect(personalize(template, { NAME: "Ada", AGE: 36, FIRSTNAME: "", COUNTRY: "India" }, false)).toBe("Hi Ada / there / 36 /  / India");
  });

  it("escapes values in HTML but not in a subject", () => {
    const template = compileTemplate("<b>{{NAME}}</b>");
    expect(personalize(template, { NAME: `<script>"x"&` }, true)).toBe("<b>&lt;script&gt;&quot;x&quot;&amp;</b>");
    expect(personalize(compileTemplate("{{NAME}}"), { NAME: "A & B" }, false)).toBe("A & B");
  });

  it("leaves text that is not a merge tag alone", () => {
    expect(personalize(compileTemplate("{{ not a tag }} {NAME} {{1X}}"), { NAME: "Ada" }, true)).toBe("{{ not a tag }} {NAME} {{1X}}");
  });
});

describe("tracking", () => {
  it("rewrites http(s) anchors in order, keeps other links, adds the pixel and an unsubscribe footer", () => {
    const html = `<html><body><a class="x" href="https://a.example/?p=1&amp;q=2">A</a><a href='http://b.example'>B</a><a href="mailto:m@example.com">M</a><a href="#top">T</a></body></html>`;
    expect(trackableLinks(html)).toEqual(["https://a.example/?p=1&q=2", "http://b.example"]);
    const out = applyTracking(html, urls);
    expect(out).toContain(`<a class="x" href="https://t.example/c/1">A</a><a href="https://t.example/c/2">B</a><a href="mailto:m@example.com">M</a><a href="#top">T</a>`);
    expect(out).toMatch(/<a href="https:\/\/t\.example\/u">unsubscribe<\/a>.*<img src="https:\/\/t\.example\/o" width="1" height="1"[^>]*><\/body><\/html>$/);
  });

  it("puts the unsubscribe URL where {{UNSUBSCRIBE}} asks, without a footer", () => {
    const html = personalize(compileTemplate(`<a href="{{UNSUBSCRIBE}}">Leave</a>`), {}, true);
    expect(trackableLinks(html)).toEqual([]);
    const out = applyTracking(html, { ...urls, clicks: [] });
    expect(out.startsWith(`<a href="https://t.example/u">Leave</a><img`)).toBe(true);
  });
});

describe("MIME", () => {
  it("builds an RFC 5322 message with the unsubscribe headers and a base64 HTML body", () => {
    const raw = buildMime({
      from: { name: "Shop Ünited", address: "shop@example.com" },
      to: "ada@example.com",
      subject: "Grüße, Ada",
      html: "<p>Grüße</p>",
      messageId: "cmp_1.7",
      date: Date.UTC(2026, 0, 2, 3, 4, 5),
      unsubscribeUrl: "https://t.example/u",
    });
    const [head, body] = raw.split("\r\n\r\n");
    expect(head).toContain("From: =?UTF-8?B?");
    expect(head).toContain("Subject: =?UTF-8?B?R3LDvMOfZSwgQWRh?=");
    expect(head).toContain("Date: Fri, 02 Jan 2026 03:04:05 +0000");
    expect(head).toContain("Message-ID: <cmp_1.7@example.com>");
    expect(head).toContain("List-Unsubscribe: <https://t.example/u>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click");
    expect(head).toContain("Content-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: base64");
    expect(new TextDecoder().decode(Uint8Array.from(atob(body!.trim()), (c) => c.charCodeAt(0)))).toBe("<p>Grüße</p>");
  });

  it("keeps plain ASCII header text as it is and strips line breaks (no header injection)", () => {
    expect(encodeHeaderText("Hello")).toBe("Hello");
    expect(encodeHeaderText("Hi\r\nBcc: x@example.com")).toBe("Hi Bcc: x@example.com");
  });
});
