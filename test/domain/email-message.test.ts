import { describe, expect, it } from "vitest";
import {
  applyTextUnsubscribe,
  applyTracking,
  buildMime,
  encodeHeaderText,
  formatMailbox,
  listUnsubscribeField,
  quotedPrintable,
  trackableLinks,
  withoutLinkMarks,
} from "../../src/domain/email-message";
import { textOfHtml } from "../../src/domain/email-text";
import { compileTemplate, personalize } from "../../src/domain/merge-tags";
import { parseMessage, unsubscribeUris } from "../support/mime";

const facts = { senderName: "Shop", senderAddress: "shop@example.com", panelName: "Shop Europe" };
const urls = { clicks: ["https://t.example/c/1", "https://t.example/c/2"], open: "https://t.example/o", unsubscribe: "https://t.example/u" };

describe("merge tags", () => {
  it("fills {{NAME}} and any attribute, case-insensitively, with a fallback when missing or empty", () => {
    const template = compileTemplate("Hi {{NAME}} / {{ firstname | there }} / {{AGE}} / {{CITY|}} / {{ COUNTRY|the world }}");
    expect(personalize(template, { NAME: "Ada", AGE: 36, FIRSTNAME: "", COUNTRY: "India" }, "plain")).toBe("Hi Ada / there / 36 /  / India");
  });

  it("escapes values in HTML but not in a subject", () => {
    const template = compileTemplate("<b>{{NAME}}</b>");
    expect(personalize(template, { NAME: `<script>"x"&` }, "html")).toBe("<b>&lt;script&gt;&quot;x&quot;&amp;</b>");
    expect(personalize(compileTemplate("{{NAME}}"), { NAME: "A & B" }, "plain")).toBe("A & B");
  });

  it("leaves text that is not a merge tag alone", () => {
    expect(personalize(compileTemplate("{{ not a tag }} {NAME} {{1X}}"), { NAME: "Ada" }, "html")).toBe("{{ not a tag }} {NAME} {{1X}}");
  });
});

describe("tracking", () => {
  it("rewrites http(s) anchors in order, keeps other links, adds the pixel and an unsubscribe footer", () => {
    const html = `<html><body><a class="x" href="https://a.example/?p=1&amp;q=2">A</a><a href='http://b.example'>B</a><a href="mailto:m@example.com">M</a><a href="#top">T</a></body></html>`;
    expect(trackableLinks(html)).toEqual(["https://a.example/?p=1&q=2", "http://b.example"]);
    const out = applyTracking(html, urls, facts);
    expect(out).toContain(`<a class="x" href="https://t.example/c/1">A</a><a href="https://t.example/c/2">B</a><a href="mailto:m@example.com">M</a><a href="#top">T</a>`);
    expect(out).toMatch(/sent by Shop \(shop@example\.com\) because your address is on the mailing list of Shop Europe\..*<a href="https:\/\/t\.example\/u"[^>]*>Unsubscribe<\/a>.*<img src="https:\/\/t\.example\/o" width="1" height="1"[^>]*><\/body><\/html>$/);
  });

  it("puts the unsubscribe URL where {{UNSUBSCRIBE}} asks, without a footer", () => {
    const html = personalize(compileTemplate(`<a href="{{UNSUBSCRIBE}}">Leave</a>`), {}, "html");
    expect(trackableLinks(html)).toEqual([]);
    const out = applyTracking(html, { ...urls, clicks: [] }, facts);
    expect(out.startsWith(`<a href="https://t.example/u">Leave</a><img`)).toBe(true);
  });

  it("puts the preference page's URL where {{PREFERENCES}} asks, untracked, in both bodies", () => {
    const preferencesUrls = { ...urls, unsubscribe: "https://t.example/t/u/tok", clicks: [] };
    const html = personalize(compileTemplate(`<a href="{{UNSUBSCRIBE}}">Leave</a> <a href="{{ preferences }}">Choose</a>`), {}, "html");
    expect(trackableLinks(html)).toEqual([]);
    expect(applyTracking(html, preferencesUrls, facts)).toContain(`<a href="https://t.example/t/u/tok">Leave</a> <a href="https://t.example/t/p/tok">Choose</a><img`);
    const text = personalize(compileTemplate("Choose: {{PREFERENCES}}"), {}, "text");
    expect(applyTextUnsubscribe(text, "https://t.example/t/u/tok", facts)).toMatch(/^Choose: https:\/\/t\.example\/t\/p\/tok\r\n\r\n--/);
    // A test copy has neither link.
    expect(withoutLinkMarks(html, "#")).toBe(`<a href="#">Leave</a> <a href="#">Choose</a>`);
  });
});

describe("text part", () => {
  it("is made from the template's HTML: links kept as text, images and styles left out, merge tags filled unescaped", () => {
    const template = `<html><head><style>p{color:red}</style></head><body><h1>Hi {{ NAME | there }}</h1><img src="https://x.example/logo.png" alt="Logo">` +
      `<p>Our <a href="https://shop.example.com/sale?x=1&amp;y=2">sale</a> starts now.</p><table><tr><td>Left</td><td>Right</td></tr></table></body></html>`;
    const text = textOfHtml(template);
    expect(text).toBe("Hi {{ NAME | there }}\n\nOur sale [https://shop.example.com/sale?x=1&y=2] starts now.\n\nLeft\n\nRight");
    expect(personalize(compileTemplate(text), { NAME: "A & B" }, "text")).toContain("Hi A & B\n");
  });

  it("carries the unsubscribe URL where {{UNSUBSCRIBE}} asked, or a footer naming the sender and why", () => {
    const asked = personalize(compileTemplate(textOfHtml(`<p>Bye: <a href="{{UNSUBSCRIBE}}">leave</a></p>`)), {}, "text");
    expect(applyTextUnsubscribe(asked, "https://t.example/u", facts)).toBe("Bye: leave [https://t.example/u]");
    const footer = applyTextUnsubscribe("Hello", "https://t.example/u", facts);
    expect(footer).toBe("Hello\r\n\r\n--\r\nThis email was sent by Shop (shop@example.com) because your address is on the mailing list of Shop Europe.\r\nDon't want these emails? Unsubscribe: https://t.example/u\r\nChoose what you receive: https://t.example/u");
  });

  it("is quoted-printable: ASCII readable, = and non-ASCII as hex, trailing spaces kept, lines at most 76 characters", () => {
    expect(quotedPrintable("a=b Grüße \r\nnext")).toBe("a=3Db Gr=C3=BC=C3=9Fe=20\r\nnext");
    const long = quotedPrintable("x".repeat(200) + "é".repeat(50));
    expect(Math.max(...long.split("\r\n").map((l) => l.length))).toBeLessThanOrEqual(76);
    expect(parseMessage(`Content-Transfer-Encoding: quoted-printable\r\n\r\n${long}`).text).toBe("");
    expect(parseMessage(`Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${long}`).text).toBe("x".repeat(200) + "é".repeat(50));
  });
});

describe("MIME", () => {
  const base = {
    from: { name: "Shop Ünited", address: "shop@example.com" },
    to: "ada@example.com",
    subject: "Grüße, Ada",
    html: "<p>Grüße</p>",
    text: "Grüße",
    messageId: "cmp_1.7",
    date: Date.UTC(2026, 0, 2, 3, 4, 5),
    unsubscribeUrl: "https://t.example/u",
  };

  it("builds a multipart/alternative RFC 5322 message: the unsubscribe headers, a text part, then the HTML part", () => {
    const raw = buildMime(base);
    const message = parseMessage(raw);
    expect(message.headerText).toContain("From: =?UTF-8?B?");
    expect(message.headerText).toContain("Subject: =?UTF-8?B?R3LDvMOfZSwgQWRh?=");
    expect(message.headerText).toContain("Date: Fri, 02 Jan 2026 03:04:05 +0000");
    expect(message.headerText).toContain("Message-ID: <cmp_1.7@example.com>");
    expect(message.headerText).toContain("List-Unsubscribe: <https://t.example/u>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click");
    expect(message.headers.get("content-type")).toBe('multipart/alternative; boundary="=_apiv2_alternative"');
    // Text first: clients show the last alternative they can, so the richer one comes last.
    expect(message.parts.map((p) => [p.headers.get("content-type"), p.headers.get("content-transfer-encoding")])).toEqual([
      ["text/plain; charset=UTF-8", "quoted-printable"],
      ["text/html; charset=UTF-8", "base64"],
    ]);
    expect(message.text).toBe("Grüße");
    expect(message.html).toBe("<p>Grüße</p>");
    expect(raw.endsWith("--=_apiv2_alternative--\r\n")).toBe(true);
    expect(raw.split("\r\n").every((line) => line.length <= 78)).toBe(true);
  });

  it("folds a long ASCII subject at its spaces within 78 characters, and unfolds to the same text", () => {
    const subject = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ") + " end";
    const message = parseMessage(buildMime({ ...base, subject }));
    const lines = /Subject:[^]*?(?=\r\n\S)/.exec(message.headerText)![0].split("\r\n");
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.every((line) => line.length <= 78)).toBe(true);
    expect(lines.slice(1).every((line) => line.startsWith(" "))).toBe(true);
    expect(message.headers.get("subject")).toBe(subject);
  });

  it("writes a subject word too long to fold as encoded words, every line within 998 octets", () => {
    const subject = `Code ${"x".repeat(1200)}`;
    const message = parseMessage(buildMime({ ...base, subject }));
    expect(message.headerText.split("\r\n").every((line) => line.length <= 998)).toBe(true);
    const words = message.headers.get("subject")!.split(" ").map((w) => /^=\?UTF-8\?B\?(.*)\?=$/.exec(w)![1]!);
    expect(words.map((w) => atob(w)).join("")).toBe(subject);
  });

  it("writes an ASCII sender name as an RFC 5322 quoted-string, keeping its quotes and backslashes", () => {
    const from = parseMessage(buildMime({ ...base, from: { name: 'Shop, "Best" Deals (EU) \\ more', address: "shop@example.com" } })).headers.get("from")!;
    expect(from).toBe('"Shop, \\"Best\\" Deals (EU) \\\\ more" <shop@example.com>');
    // Read back as a mail client would: the quoted-string's escapes undone give the name as typed.
    const quoted = /^"((?:[^"\\]|\\.)*)" <shop@example\.com>$/.exec(from)![1]!;
    expect(quoted.replace(/\\(.)/g, "$1")).toBe('Shop, "Best" Deals (EU) \\ more');
  });

  it("folds every header line within 78 characters, and unfolding gives back the same values", () => {
    const name = 'Shop, "Best" Deals (EU) with a sender name long enough to need folding twice over here';
    const subject = `Grüße ${"and a long subject line ".repeat(6)}ünd mehr`;
    // As long as fits a continuation line (76): the URL is one unbreakable token.
    const unsubscribeUrl = `https://track.example.com/t/u/${"a".repeat(44)}`;
    const decodeWords = (value: string) =>
      value.replace(/=\?UTF-8\?B\?([^?]*)\?=(?:\s+(?==\?))?/g, (_, b64: string) => new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));
    for (const fromName of [name, `Ünited ${name}`]) {
      const raw = buildMime({ ...base, from: { name: fromName, address: "news@shop.example.com" }, subject, unsubscribeUrl, headers: { "Reply-To": "replies@shop.example.com", "X-Campaign-ID": "cmp_1" } });
      const message = parseMessage(raw);
      expect(message.headerText.split("\r\n").filter((line) => line.length > 78)).toEqual([]);
      expect(decodeWords(message.headers.get("subject")!)).toBe(subject);
      expect(message.headers.get("list-unsubscribe")).toBe(`<${unsubscribeUrl}>`);
      const from = message.headers.get("from")!;
      const display = fromName === name ? /^"((?:[^"\\]|\\.)*)"/.exec(from)![1]!.replace(/\\(.)/g, "$1") : decodeWords(from.slice(0, from.lastIndexOf(" <")));
      expect(display).toBe(fromName);
      expect(from.endsWith(" <news@shop.example.com>")).toBe(true);
    }
  });

  it("folds List-Unsubscribe between its URIs, each line within 78 characters, and it unfolds to the same URIs", () => {
    const https = `https://track.example.com/t/u/${"b".repeat(40)}`;
    const mailto = `mailto:unsubscribe+${"c".repeat(10)}@bounces.shop.example.com?subject=stop`;
    const field = listUnsubscribeField([https, mailto]);
    expect(field).toBe(`List-Unsubscribe:\r\n <${https}>,\r\n <${mailto}>`);
    // Within a message: every header line within 78, the one-click header still beside it.
    const head = buildMime({ ...base, unsubscribeUrl: https }).replace(/^List-Unsubscribe:[^\r]*(?:\r\n [^\r]*)*/m, field);
    const message = parseMessage(head);
    expect(message.headerText.split("\r\n").filter((line) => line.length > 78)).toEqual([]);
    expect(unsubscribeUris(head)).toEqual([https, mailto]);
    expect(message.headers.get("list-unsubscribe-post")).toBe("List-Unsubscribe=One-Click");
    // Short URIs stay on the name's line; a first that fits there starts there.
    expect(listUnsubscribeField(["https://t.example/u", "mailto:u@t.example"])).toBe("List-Unsubscribe: <https://t.example/u>, <mailto:u@t.example>");
    expect(listUnsubscribeField(["https://t.example/u", mailto])).toBe(`List-Unsubscribe: <https://t.example/u>,\r\n <${mailto}>`);
  });

  it("puts a URI too long for any line whole on a continuation line of its own, every other line within 78", () => {
    const unsubscribeUrl = `https://track.example.com/t/u/${"d".repeat(90)}`;
    const raw = buildMime({ ...base, unsubscribeUrl });
    const message = parseMessage(raw);
    expect(message.headerText).toContain(`\r\nList-Unsubscribe:\r\n <${unsubscribeUrl}>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n`);
    expect(message.headerText.split("\r\n").filter((line) => line.length > 78)).toEqual([` <${unsubscribeUrl}>`]);
    expect(unsubscribeUris(raw)).toEqual([unsubscribeUrl]);
  });

  it("writes an internationalised domain in its ASCII form", () => {
    expect(parseMessage(buildMime({ ...base, to: "ada@bücher.example" })).headers.get("to")).toBe("ada@xn--bcher-kva.example");
  });

  it("writes Reply-To as an address (punycode, on its own line when long), and encodes words too long for a line or that read as encoded words", () => {
    const long = `${"r".repeat(64)}@example.com`;
    const raw = buildMime({ ...base, to: `${"t".repeat(64)}@example.com`, replyTo: "help@bücher.example", subject: `=?UTF-8?B?SGk=?= ${"x".repeat(90)}` });
    expect(raw).toContain("\r\nReply-To: help@xn--bcher-kva.example\r\n");
    expect(raw).toContain(`\r\nTo:\r\n ${"t".repeat(64)}@example.com\r\n`);
    expect(buildMime({ ...base, replyTo: long })).toContain(`\r\nReply-To:\r\n ${long}\r\n`);
    const head = parseMessage(raw).headerText;
    expect(head.split("\r\n").filter((line) => line.length > 78)).toEqual([]);
    expect(head).toMatch(/\r\nSubject: =\?UTF-8\?B\?/);
    expect(formatMailbox("x".repeat(90), "a@example.com")).toMatch(/^=\?UTF-8\?B\?/);
    expect(formatMailbox('Shop, "Best" Deals (EU)', "a@example.com")).toBe('"Shop, \\"Best\\" Deals (EU)" <a@example.com>');
  });

  it("keeps plain ASCII header text as it is and strips line breaks (no header injection)", () => {
    expect(encodeHeaderText("Hello")).toBe("Hello");
    expect(encodeHeaderText("Hi\r\nBcc: x@example.com")).toBe("Hi Bcc: x@example.com");
  });
});
