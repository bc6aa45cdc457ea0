import { z } from "../lib/z";
import { utf8Length } from "../lib/bytes";
import { escapeHtml, PREFERENCES_TAG, UNSUBSCRIBE_TAG } from "./merge-tags";

/**
 * The visual email editor's source (issue 43, item 4; decision 0039): an email as data, a
 * list of blocks with their styles, kept beside the HTML a campaign or template sends. The
 * panel renders it to table-based HTML with MJML (`mjml-browser`) when saving, from the MJML
 * `emailSourceMjml` writes here; the Worker keeps the source only to open it in the editor
 * again and never renders it, so the sending paths read the HTML as before.
 */

export const EMAIL_SOURCE_VERSION = 1;
/** Blocks in a message, and in each column: more is not a newsletter anyone reads to the end. */
export const MAX_BLOCKS = 100;
export const MAX_COLUMN_BLOCKS = 30;
/** The source as JSON; the HTML rendered from it has its own bound (256 KiB for templates, 2 MiB for campaigns). */
export const MAX_SOURCE_BYTES = 256 * 1024;

/** A message for a value of the wrong type (or a missing one); other issues keep the house messages. */
const typeError = (what: string) => (issue: { code?: string; input?: unknown }) =>
  issue.code !== "invalid_type" ? undefined : issue.input === undefined ? "is required" : what;

const colour = z
  .string({ error: typeError("must be a colour like #1a73e8") })
  .regex(/^#(?:[0-9a-fA-F]{3}){1,2}$/, { error: "must be a colour like #1a73e8" })
  .meta({ description: "#rgb or #rrggbb" });

/** Where a link goes: an http(s) or mailto: address, or a merge tag alone ({{UNSUBSCRIBE}}); merge tags may fill parts of it. */
const link = z
  .string({ error: typeError("must be a link") })
  .trim()
  .min(1, { error: "must not be empty" })
  .max(2048)
  .regex(/^(?:https?:\/\/[^\s<>"]+|mailto:[^\s<>"]+|\{\{[^}]+\}\})$/i, { error: "must be an http(s) or mailto: link, or a merge tag such as {{UNSUBSCRIBE}}" });

const px = (max: number) => z.number({ error: typeError("must be a number of pixels") }).int({ error: "must be a whole number of pixels" }).min(0).max(max);

/** The styles a block may set; each left out takes the block's default. */
export const blockStyle = z
  .strictObject({
    align: z.enum(["left", "center", "right"]).optional(),
    color: colour.optional().meta({ description: "Text colour" }),
    background: colour.optional().meta({ description: "Background colour (a button's fill)" }),
    font_size: px(72).min(8, { error: "must be at least 8" }).optional(),
    padding_y: px(80).optional().meta({ description: "Space above and below, in pixels" }),
    padding_x: px(80).optional().meta({ description: "Space left and right, in pixels" }),
  })
  .default({})
  .meta({ id: "EmailBlockStyle" });
export type BlockStyle = z.output<typeof blockStyle>;

const blockId = z.string({ error: typeError("must be text") }).min(1).max(40).meta({ description: "The block's id in the editor, unique in the message" });
/** Words as written: no markup (the renderer escapes them); line breaks stay; merge tags allowed. */
const words = (max: number) => z.string({ error: typeError("must be text") }).max(max);

const textBlock = z.strictObject({ type: z.literal("text"), id: blockId, text: words(10_000), style: blockStyle });
const headingBlock = z.strictObject({ type: z.literal("heading"), id: blockId, text: words(500), level: z.union([z.literal(1), z.literal(2), z.literal(3)]).default(1), style: blockStyle });
const imageBlock = z.strictObject({
  type: z.literal("image"),
  id: blockId,
  src: z.string({ error: typeError("must be an http(s) URL of the image") }).trim().max(2048).regex(/^https?:\/\/[^\s<>"]+$/i, { error: "must be an http(s) URL of the image" }),
  alt: words(500).meta({ description: "What the image shows, for readers who do not load it" }),
  href: link.optional().meta({ description: "Where a click on the image goes" }),
  width: px(800).min(10, { error: "must be at least 10" }).optional(),
  style: blockStyle,
});
const buttonBlock = z.strictObject({ type: z.literal("button"), id: blockId, label: words(200).min(1, { error: "must not be empty" }), href: link, style: blockStyle });
const dividerBlock = z.strictObject({ type: z.literal("divider"), id: blockId, thickness: px(10).min(1).default(1), style: blockStyle });
const spacerBlock = z.strictObject({ type: z.literal("spacer"), id: blockId, height: px(200).min(1).default(24) });
export const SOCIAL_NETWORKS = ["facebook", "x", "instagram", "linkedin", "youtube", "pinterest", "github", "web"] as const;
const socialBlock = z.strictObject({
  type: z.literal("social"),
  id: blockId,
  links: z.array(z.strictObject({ network: z.enum(SOCIAL_NETWORKS), href: link })).min(1).max(10),
  style: blockStyle,
});
const footerBlock = z.strictObject({
  type: z.literal("footer"),
  id: blockId,
  text: words(1000).meta({ description: "Who sends it and why (a postal address where the law asks for one)" }),
  unsubscribe_label: words(100).min(1, { error: "must not be empty" }).default("Unsubscribe"),
  preferences_label: words(100).default("Email preferences").meta({ description: "Empty: no link to the preference page" }),
  style: blockStyle,
});

/** What a column holds: any block but columns and the footer (a footer ends the message). */
const columnBlock = z.discriminatedUnion("type", [textBlock, headingBlock, imageBlock, buttonBlock, dividerBlock, spacerBlock, socialBlock]).meta({ id: "EmailColumnBlock" });
const columnsBlock = z.strictObject({
  type: z.literal("columns"),
  id: blockId,
  columns: z.tuple([z.array(columnBlock).max(MAX_COLUMN_BLOCKS), z.array(columnBlock).max(MAX_COLUMN_BLOCKS)], { error: typeError("must be two columns, each a list of blocks") }),
  style: blockStyle,
});

export const emailBlock = z
  .discriminatedUnion("type", [textBlock, headingBlock, imageBlock, buttonBlock, columnsBlock, dividerBlock, spacerBlock, socialBlock, footerBlock])
  .meta({ id: "EmailBlock" });
export type EmailBlock = z.output<typeof emailBlock>;
export type ColumnBlock = z.output<typeof columnBlock>;
export type EmailBlockType = EmailBlock["type"];

const FONTS = {
  sans: "Helvetica, Arial, sans-serif",
  serif: "Georgia, 'Times New Roman', serif",
  mono: "'Courier New', Courier, monospace",
} as const;
export const EMAIL_FONTS = Object.keys(FONTS) as (keyof typeof FONTS)[];

/** An email as the visual editor keeps it. */
export const emailSource = z
  .strictObject({
    version: z.literal(EMAIL_SOURCE_VERSION),
    width: px(800).min(320, { error: "must be at least 320" }).default(600).meta({ description: "The message's width on wide screens, in pixels; narrow screens get their own" }),
    background: colour.default("#f4f4f4"),
    content_background: colour.default("#ffffff"),
    font: z.enum(EMAIL_FONTS as [keyof typeof FONTS, ...(keyof typeof FONTS)[]]).default("sans"),
    text_color: colour.default("#222222"),
    link_color: colour.default("#1a73e8"),
    blocks: z.array(emailBlock).max(MAX_BLOCKS),
  })
  .superRefine((doc, ctx) => {
    const seen = new Set<string>();
    const visit = (block: { id: string }, path: (string | number)[]) => {
      if (seen.has(block.id)) ctx.addIssue({ code: "custom", path: [...path, "id"], message: `"${block.id}" is the id of another block` });
      seen.add(block.id);
    };
    doc.blocks.forEach((block, i) => {
      visit(block, ["blocks", i]);
      if (block.type === "columns") block.columns.forEach((column, c) => column.forEach((inner, j) => visit(inner, ["blocks", i, "columns", c, j])));
      if (block.type === "footer" && i !== doc.blocks.length - 1) ctx.addIssue({ code: "custom", path: ["blocks", i], message: "a footer must be the last block" });
    });
    if (utf8Length(JSON.stringify(doc)) > MAX_SOURCE_BYTES) ctx.addIssue({ code: "custom", path: [], message: `must be at most ${MAX_SOURCE_BYTES / 1024} KiB as JSON` });
  })
  .meta({ id: "EmailSource", description: "The visual editor's source: blocks and styles, kept to edit again; the HTML beside it is what is sent" });
export type EmailSource = z.output<typeof emailSource>;

/** The member of a body that holds the source: absent leaves it, null drops it (the HTML was written by hand). */
export const bodySourceField = emailSource.nullable().meta({ description: "The visual editor's source the HTML was rendered from; null: HTML written by hand" });

// ---------------------------------------------------------------------------------------------
// The source as MJML: what the panel hands to mjml-browser. Words are escaped; merge tags pass
// through untouched (escaping leaves braces), so the rendered HTML keeps them for `personalize`.

const attr = (value: string) => escapeHtml(value);

/** Words as MJML content: escaped, line breaks as <br />. */
const wordsHtml = (text: string) => escapeHtml(text).replace(/\r?\n/g, "<br />");

function styleAttrs(style: BlockStyle, defaults: { padding?: [number, number] } = {}): string {
  const out: string[] = [];
  if (style.align) out.push(`align="${style.align}"`);
  if (style.color) out.push(`color="${style.color}"`);
  if (style.font_size !== undefined) out.push(`font-size="${style.font_size}px"`);
  const [y, x] = defaults.padding ?? [10, 25];
  if (style.padding_y !== undefined || style.padding_x !== undefined) out.push(`padding="${style.padding_y ?? y}px ${style.padding_x ?? x}px"`);
  if (style.background && defaults.padding === undefined) out.push(`container-background-color="${style.background}"`);
  return out.length ? ` ${out.join(" ")}` : "";
}

const HEADING_SIZES = { 1: 28, 2: 22, 3: 18 } as const;
const SOCIAL_NAMES: Record<(typeof SOCIAL_NETWORKS)[number], string> = {
  facebook: "facebook-noshare",
  x: "x-noshare",
  instagram: "instagram-noshare",
  linkedin: "linkedin-noshare",
  youtube: "youtube-noshare",
  pinterest: "pinterest-noshare",
  github: "github-noshare",
  web: "web-noshare",
};

function blockMjml(block: ColumnBlock | Extract<EmailBlock, { type: "footer" }>, doc: EmailSource): string {
  switch (block.type) {
    case "text":
      return `<mj-text${styleAttrs(block.style)}>${wordsHtml(block.text)}</mj-text>`;
    case "heading": {
      const size = block.style.font_size ?? HEADING_SIZES[block.level];
      return `<mj-text${styleAttrs({ ...block.style, font_size: undefined })} font-size="${size}px" font-weight="bold" line-height="1.3"><h${block.level} style="margin:0;font-size:${size}px">${wordsHtml(block.text)}</h${block.level}></mj-text>`;
    }
    case "image": {
      const width = block.width !== undefined ? ` width="${block.width}px"` : "";
      const href = block.href ? ` href="${attr(block.href)}"` : "";
      return `<mj-image src="${attr(block.src)}" alt="${attr(block.alt)}"${href}${width}${styleAttrs(block.style)} />`;
    }
    case "button": {
      const fill = ` background-color="${block.style.background ?? doc.link_color}"`;
      return `<mj-button href="${attr(block.href)}"${fill}${styleAttrs({ ...block.style, background: undefined, color: block.style.color ?? "#ffffff" })}>${wordsHtml(block.label)}</mj-button>`;
    }
    case "divider":
      return `<mj-divider border-width="${block.thickness}px" border-color="${block.style.color ?? "#dddddd"}"${styleAttrs({ padding_y: block.style.padding_y, padding_x: block.style.padding_x })} />`;
    case "spacer":
      return `<mj-spacer height="${block.height}px" />`;
    case "social": {
      const links = block.links.map((l) => `<mj-social-element name="${SOCIAL_NAMES[l.network]}" href="${attr(l.href)}">${l.network === "x" ? "X" : l.network[0]!.toUpperCase() + l.network.slice(1)}</mj-social-element>`).join("");
      return `<mj-social mode="horizontal" font-size="13px" icon-size="24px"${styleAttrs(block.style)}>${links}</mj-social>`;
    }
    case "footer": {
      const color = block.style.color ?? "#777777";
      const links = [`<a href="{{${UNSUBSCRIBE_TAG}}}" style="color:${color}">${wordsHtml(block.unsubscribe_label)}</a>`];
      if (block.preferences_label.trim()) links.push(`<a href="{{${PREFERENCES_TAG}}}" style="color:${color}">${wordsHtml(block.preferences_label)}</a>`);
      const text = block.text.trim() ? `${wordsHtml(block.text)}<br />` : "";
      return `<mj-text font-size="${block.style.font_size ?? 12}px" align="${block.style.align ?? "center"}" color="${color}"${styleAttrs({ padding_y: block.style.padding_y, padding_x: block.style.padding_x, background: block.style.background })}>${text}${links.join(" · ")}</mj-text>`;
    }
  }
}

/** A section per top-level block (columns as one section of two), so each may have its own background. */
function sectionMjml(block: EmailBlock, doc: EmailSource): string {
  const background = block.type !== "spacer" && block.style.background && block.type !== "button" ? block.style.background : doc.content_background;
  const open = `<mj-section background-color="${background}" padding="0">`;
  if (block.type === "columns") {
    const columns = block.columns.map((column) => `<mj-column>${column.map((inner) => blockMjml(inner, doc)).join("")}</mj-column>`).join("");
    return `${open}${columns}</mj-section>`;
  }
  return `${open}<mj-column>${blockMjml(block, doc)}</mj-column></mj-section>`;
}

/**
 * The message as MJML (https://documentation.mjml.io): one section per block, in a body of the
 * chosen width. The panel renders it with mjml-browser into the HTML that is sent; a template's
 * preheader is not part of it (htmlWithPreheader adds it to the copy a campaign takes).
 */
export function emailSourceMjml(doc: EmailSource): string {
  const font = FONTS[doc.font];
  const head =
    `<mj-head><mj-attributes><mj-all font-family="${font}" /><mj-text color="${doc.text_color}" font-size="16px" line-height="1.5" /></mj-attributes>` +
    `<mj-style>a { color: ${doc.link_color}; }</mj-style></mj-head>`;
  const sections = doc.blocks.map((block) => sectionMjml(block, doc)).join("");
  return `<mjml>${head}<mj-body width="${doc.width}px" background-color="${doc.background}">${sections}</mj-body></mjml>`;
}

/** A new message: what the editor starts from. */
export function starterEmailSource(newId: () => string): EmailSource {
  return {
    version: EMAIL_SOURCE_VERSION,
    width: 600,
    background: "#f4f4f4",
    content_background: "#ffffff",
    font: "sans",
    text_color: "#222222",
    link_color: "#1a73e8",
    blocks: [
      { type: "heading", id: newId(), text: "Hello {{NAME|there}}", level: 1, style: {} },
      { type: "text", id: newId(), text: "Write your message here.", style: {} },
      { type: "footer", id: newId(), text: "You get this email because you signed up.", unsubscribe_label: "Unsubscribe", preferences_label: "Email preferences", style: {} },
    ],
  };
}
