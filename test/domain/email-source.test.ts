import { describe, expect, it } from "vitest";
import { emailSource, emailSourceMjml, starterEmailSource } from "../../src/domain/email-source";
import { fieldErrorsFromZod } from "../../src/lib/http/errors";

// The visual email editor's source (issue 43, item 4): what the schema takes, how it names what
// it refuses, and the MJML the panel renders from it.

let n = 0;
const id = () => `b${++n}`;

const message = () => ({
  version: 1,
  blocks: [
    { type: "heading", id: "h", text: "Hello {{NAME|there}}" },
    { type: "text", id: "t", text: "Tea & cake <today>\nfrom 3 pm", style: { color: "#333", padding_y: 4 } },
    { type: "button", id: "b", label: "Shop now", href: "https://shop.example.com/sale?u={{ID|}}", style: { background: "#ff6600", align: "center" } },
    { type: "columns", id: "c", columns: [[{ type: "image", id: "i", src: "https://cdn.example.com/a.png", alt: "A cup" }], [{ type: "social", id: "s", links: [{ network: "x", href: "https://x.com/shop" }] }]] },
    { type: "divider", id: "d" },
    { type: "spacer", id: "sp", height: 12 },
    { type: "footer", id: "f", text: "Shop Ltd, 1 High St" },
  ],
});

const problems = (input: unknown) => {
  const parsed = emailSource.safeParse(input);
  return parsed.success ? [] : fieldErrorsFromZod(parsed.error);
};

describe("the email editor's source", () => {
  it("takes a message of blocks and fills each default (width, colours, styles, labels)", () => {
    const doc = emailSource.parse(message());
    expect(doc).toMatchObject({ width: 600, font: "sans", background: "#f4f4f4", content_background: "#ffffff" });
    expect(doc.blocks[0]).toEqual({ type: "heading", id: "h", text: "Hello {{NAME|there}}", level: 1, style: {} });
    expect(doc.blocks.at(-1)).toEqual({ type: "footer", id: "f", text: "Shop Ltd, 1 High St", unsubscribe_label: "Unsubscribe", preferences_label: "Email preferences", style: {} });
    expect(emailSource.parse(starterEmailSource(id)).blocks.map((b) => b.type)).toEqual(["heading", "text", "footer"]);
  });

  it("names the field and the reason of each refusal", () => {
    const bad = message();
    (bad.blocks[2] as { href: string }).href = "javascript:alert(1)";
    (bad.blocks[1] as { style: Record<string, unknown> }).style.color = "red";
    (bad.blocks[3] as { columns: { alt?: string }[][] }).columns[0]![0]!.alt = undefined as never;
    expect(problems(bad)).toEqual([
      { field: "blocks.1.style.color", message: "must be a colour like #1a73e8" },
      { field: "blocks.2.href", message: "must be an http(s) or mailto: link, or a merge tag such as {{UNSUBSCRIBE}}" },
      { field: "blocks.3.columns.0.0.alt", message: "is required" },
    ]);
    expect(problems({ version: 1, blocks: [{ type: "marquee", id: "m" }] })[0]).toMatchObject({ field: "blocks.0.type" });
    expect(problems({ version: 1, blocks: [{ type: "text", id: "x", text: "a" }, { type: "spacer", id: "x" }] })).toEqual([{ field: "blocks.1.id", message: '"x" is the id of another block' }]);
    expect(problems({ version: 1, blocks: [{ type: "footer", id: "f", text: "" }, { type: "text", id: "t", text: "after" }] })).toEqual([{ field: "blocks.0", message: "a footer must be the last block" }]);
    expect(problems({ version: 1, blocks: [{ type: "columns", id: "c", columns: [[{ type: "footer", id: "f", text: "" }], []] }] })[0]).toMatchObject({ field: "blocks.0.columns.0.0.type" });
    expect(problems({ version: 2, blocks: [] })).toEqual([{ field: "version", message: "must be 1" }]);
    expect(problems({ version: 1, blocks: [{ type: "text", id: "t", text: "x".repeat(10_001) }] })).toEqual([{ field: "blocks.0.text", message: "must be at most 10000 characters" }]);
  });

  it("writes MJML with the words escaped, the merge tags kept and the footer's links to {{UNSUBSCRIBE}} and {{PREFERENCES}}", () => {
    const mjml = emailSourceMjml(emailSource.parse(message()));
    expect(mjml).toMatch(/^<mjml><mj-head>.*<\/mj-head><mj-body width="600px" background-color="#f4f4f4">/);
    expect(mjml).toContain('<h1 style="margin:0;font-size:28px">Hello {{NAME|there}}</h1>');
    expect(mjml).toContain('<mj-text color="#333" padding="4px 25px">Tea &amp; cake &lt;today&gt;<br />from 3 pm</mj-text>');
    expect(mjml).toContain('<mj-button href="https://shop.example.com/sale?u={{ID|}}" background-color="#ff6600" align="center" color="#ffffff">Shop now</mj-button>');
    expect(mjml).toContain('<mj-column><mj-image src="https://cdn.example.com/a.png" alt="A cup" /></mj-column><mj-column><mj-social');
    expect(mjml).toContain('<mj-social-element name="x-noshare" href="https://x.com/shop">X</mj-social-element>');
    expect(mjml).toContain('Shop Ltd, 1 High St<br /><a href="{{UNSUBSCRIBE}}" style="color:#777777">Unsubscribe</a> · <a href="{{PREFERENCES}}" style="color:#777777">Email preferences</a>');
    expect(mjml).toContain('<mj-divider border-width="1px" border-color="#dddddd" />');
    const padded = emailSource.parse({ version: 1, blocks: [{ type: "divider", id: "d", style: { padding_y: 0 } }] });
    expect(emailSourceMjml(padded)).toContain('<mj-divider border-width="1px" border-color="#dddddd" padding="0px 25px" />');
    // An attribute value cannot break out of its quotes.
    const quoted = emailSource.parse({ version: 1, blocks: [{ type: "image", id: "i", src: "https://cdn.example.com/a.png", alt: 'say "hi"' }] });
    expect(emailSourceMjml(quoted)).toContain('alt="say &quot;hi&quot;"');
  });
});
