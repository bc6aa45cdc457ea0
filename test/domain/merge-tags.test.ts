import { describe, expect, it } from "vitest";
import { htmlWithPreheader } from "../../src/domain/email-templates";
import { compileTemplate, hasMergeTags, mergeTagNames, mergeValuesOf, personalize } from "../../src/domain/merge-tags";

describe("the one merge-tag renderer", () => {
  it("fills a source or a compiled template alike, escaping values only in HTML", () => {
    const attributes = { NAME: "Ada & Co" };
    expect(personalize("Still thinking it over, {{NAME|friend}}?", attributes, "plain")).toBe("Still thinking it over, Ada & Co?");
    expect(personalize(compileTemplate("<p>{{NAME|friend}}</p>"), attributes, "html")).toBe("<p>Ada &amp; Co</p>");
    expect(personalize("Still thinking it over, {{NAME|friend}}?", { NAME: "" }, "plain")).toBe("Still thinking it over, friend?");
  });

  it("places link marks only in email bodies: in a subject, an SMS or a push, {{UNSUBSCRIBE}} is filled as any tag", () => {
    expect(personalize("Stop: {{UNSUBSCRIBE|reply STOP}}", {}, "plain")).toBe("Stop: reply STOP");
    expect(personalize("Stop: {{UNSUBSCRIBE}}", {}, "text")).not.toContain("STOP");
  });

  it("keeps the values a message's tags were filled with, and only those", () => {
    const names = mergeTagNames("Hi {{ name }}", compileTemplate("<p>{{CITY|there}} {{UNSUBSCRIBE}}</p>"), "{{NAME}}");
    expect(names).toEqual(["NAME", "CITY", "UNSUBSCRIBE"]);
    expect(mergeValuesOf({ NAME: "Ada", CITY: "", EMAIL: "ada@example.com" }, names)).toEqual({ NAME: "Ada" });
    expect(mergeValuesOf({ EMAIL: "ada@example.com" }, names)).toBeNull();
    expect(hasMergeTags(compileTemplate("Spring sale"))).toBe(false);
    expect(hasMergeTags(compileTemplate("Hi {{NAME}}"))).toBe(true);
  });

  it("escapes a template preheader's text once and its tags' fallbacks once, when they are filled", () => {
    const html = htmlWithPreheader({ preheader: "Fish & chips for {{NAME|Tom & Jerry}} <3", bodyHtml: "<html><body><p>x</p></body></html>" });
    expect(html).toContain(">Fish &amp; chips for {{NAME|Tom & Jerry}} &lt;3</div>");
    expect(personalize(html, {}, "html")).toContain(">Fish &amp; chips for Tom &amp; Jerry &lt;3</div>");
    expect(personalize(html, { NAME: "O'Neill" }, "html")).toContain(">Fish &amp; chips for O&#39;Neill &lt;3</div>");
  });
});
