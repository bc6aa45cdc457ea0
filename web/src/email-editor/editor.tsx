import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { emailSource, emailSourceMjml, SOCIAL_NETWORKS, starterEmailSource, type BlockStyle, type ColumnBlock, type EmailBlock, type EmailBlockType, type EmailSource } from "../../../src/domain/email-source";
import { fieldErrorsFromZod } from "../../../src/lib/http/errors";
import { Field } from "../ui";
import type { EmailBodyProps } from "./types";
import { addBlock, BLOCK_NAMES, changed, historyOf, moveBlock, newBlock, newBlockId, redo, removeBlock, undo, updateBlock, type History } from "./model";

// The visual email editor (issue 43, item 4; decision 0039), loaded on demand: blocks with their
// styles, undo and redo, rendered to table-based email HTML by MJML (mjml-browser, itself loaded
// when the visual editor first shows) on every change, so what the form saves is that HTML with
// the source beside it. "Code" edits the HTML by hand, which drops the source when saved.

type AnyBlock = EmailBlock | ColumnBlock;
type Mjml = (mjml: string, options: { validationLevel: "soft" | "skip" }) => { html: string; errors: { formattedMessage: string }[] };

let mjmlModule: Promise<Mjml> | undefined;
/** mjml-browser is large (about 350 KB gzipped): fetched once, when a visual editor first needs it. */
function loadMjml(): Promise<Mjml> {
  mjmlModule ??= import("mjml-browser").then((m) => (m.default ?? m) as Mjml);
  return mjmlModule;
}

const COLUMN_TYPES: EmailBlockType[] = ["heading", "text", "image", "button", "divider", "spacer", "social"];
const TOP_TYPES: EmailBlockType[] = ["heading", "text", "image", "button", "columns", "divider", "spacer", "social", "footer"];

function StyleFields({ style, fields, onChange }: { style: BlockStyle; fields: (keyof BlockStyle)[]; onChange: (style: BlockStyle, key: string) => void }) {
  const set = (key: keyof BlockStyle, value: string | number | undefined) => {
    const next = { ...style, [key]: value === "" ? undefined : value };
    if (next[key] === undefined) delete next[key];
    onChange(next, key);
  };
  const number = (key: "font_size" | "padding_y" | "padding_x", label: string) => (
    <Field label={label}>{(props) => <input {...props} type="number" min={0} value={style[key] ?? ""} onChange={(e) => set(key, e.target.value === "" ? undefined : Number(e.target.value))} />}</Field>
  );
  const colour = (key: "color" | "background", label: string) => (
    <Field label={label} hint="#rrggbb">
      {(props) => <input {...props} value={style[key] ?? ""} placeholder="default" onChange={(e) => set(key, e.target.value.trim())} />}
    </Field>
  );
  return (
    <details className="email-style">
      <summary>Style</summary>
      <div className="row">
        {fields.includes("align") && (
          <Field label="Alignment">
            {(props) => (
              <select {...props} value={style.align ?? ""} onChange={(e) => set("align", e.target.value)}>
                <option value="">Default</option>
                <option value="left">Left</option>
                <option value="center">Centre</option>
                <option value="right">Right</option>
              </select>
            )}
          </Field>
        )}
        {fields.includes("color") && colour("color", "Text colour")}
        {fields.includes("background") && colour("background", "Background colour")}
        {fields.includes("font_size") && number("font_size", "Font size (px)")}
        {fields.includes("padding_y") && number("padding_y", "Space above and below (px)")}
        {fields.includes("padding_x") && number("padding_x", "Space left and right (px)")}
      </div>
    </details>
  );
}

const ALL_STYLES: (keyof BlockStyle)[] = ["align", "color", "background", "font_size", "padding_y", "padding_x"];

interface BlockProps {
  block: AnyBlock;
  change: (patch: Partial<AnyBlock>, key?: string) => void;
  children?: ReactNode;
}

/** One block's own fields. */
function BlockFields({ block, change, children }: BlockProps) {
  const text = (key: string, label: string, value: string, options: { multiline?: boolean; hint?: string } = {}) => (
    <Field label={label} hint={options.hint}>
      {(props) =>
        options.multiline ? (
          <textarea {...props} rows={4} value={value} onChange={(e) => change({ [key]: e.target.value } as Partial<AnyBlock>, `${block.id}.${key}`)} />
        ) : (
          <input {...props} value={value} onChange={(e) => change({ [key]: e.target.value } as Partial<AnyBlock>, `${block.id}.${key}`)} />
        )
      }
    </Field>
  );
  const styled = (fields: (keyof BlockStyle)[]) =>
    "style" in block && <StyleFields style={block.style} fields={fields} onChange={(style, key) => change({ style } as Partial<AnyBlock>, `${block.id}.style.${key}`)} />;
  switch (block.type) {
    case "heading":
      return (
        <>
          <div className="row">
            {text("text", "Heading text", block.text)}
            <Field label="Level">
              {(props) => (
                <select {...props} value={block.level} onChange={(e) => change({ level: Number(e.target.value) as 1 | 2 | 3 })}>
                  <option value={1}>Large</option>
                  <option value={2}>Medium</option>
                  <option value={3}>Small</option>
                </select>
              )}
            </Field>
          </div>
          {styled(ALL_STYLES)}
        </>
      );
    case "text":
      return (
        <>
          {text("text", "Text", block.text, { multiline: true, hint: "Plain words; {{ATTRIBUTE|fallback}} personalises them" })}
          {styled(ALL_STYLES)}
        </>
      );
    case "image":
      return (
        <>
          <div className="row">
            {text("src", "Image URL", block.src)}
            {text("alt", "Alternative text", block.alt, { hint: "What the image shows, for readers who do not load it" })}
            {text("href", "Image link (optional)", block.href ?? "")}
          </div>
          {styled(["align", "background", "padding_y", "padding_x"])}
        </>
      );
    case "button":
      return (
        <>
          <div className="row">
            {text("label", "Button label", block.label)}
            {text("href", "Button link", block.href, { hint: "http(s), mailto: or a merge tag" })}
          </div>
          {styled(ALL_STYLES)}
        </>
      );
    case "divider":
      return (
        <>
          <Field label="Thickness (px)">{(props) => <input {...props} type="number" min={1} max={10} value={block.thickness} onChange={(e) => change({ thickness: Number(e.target.value) })} />}</Field>
          {styled(["color", "padding_y", "padding_x"])}
        </>
      );
    case "spacer":
      return <Field label="Height (px)">{(props) => <input {...props} type="number" min={1} max={200} value={block.height} onChange={(e) => change({ height: Number(e.target.value) })} />}</Field>;
    case "social":
      return (
        <>
          <ul className="plain">
            {block.links.map((link, i) => (
              <li key={i} className="row">
                <Field label={`Network ${i + 1}`}>
                  {(props) => (
                    <select {...props} value={link.network} onChange={(e) => change({ links: block.links.map((l, j) => (j === i ? { ...l, network: e.target.value as (typeof SOCIAL_NETWORKS)[number] } : l)) })}>
                      {SOCIAL_NETWORKS.map((n) => (
                        <option key={n} value={n}>
                          {n}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
                <Field label={`Link ${i + 1}`}>
                  {(props) => <input {...props} value={link.href} onChange={(e) => change({ links: block.links.map((l, j) => (j === i ? { ...l, href: e.target.value } : l)) }, `${block.id}.links.${i}`)} />}
                </Field>
                <button type="button" className="secondary" disabled={block.links.length === 1} onClick={() => change({ links: block.links.filter((_, j) => j !== i) })}>
                  Remove link {i + 1}
                </button>
              </li>
            ))}
          </ul>
          <button type="button" className="secondary" disabled={block.links.length >= 10} onClick={() => change({ links: [...block.links, { network: "web", href: "https://" }] })}>
            Add a link
          </button>
          {styled(["align", "background", "padding_y", "padding_x"])}
        </>
      );
    case "footer":
      return (
        <>
          {text("text", "Footer text", block.text, { multiline: true, hint: "Who sends it and why; a postal address where the law asks for one" })}
          <div className="row">
            {text("unsubscribe_label", "Unsubscribe link text", block.unsubscribe_label, { hint: "Links to {{UNSUBSCRIBE}}: each recipient's own unsubscribe page" })}
            {text("preferences_label", "Preferences link text", block.preferences_label, { hint: "Links to {{PREFERENCES}}; empty: no link" })}
          </div>
          {styled(ALL_STYLES)}
        </>
      );
    case "columns":
      return (
        <>
          {children}
          {styled(["background"])}
        </>
      );
  }
}

function BlockList({
  blocks,
  label,
  types,
  doc,
  apply,
  into,
}: {
  blocks: AnyBlock[];
  label: string;
  types: EmailBlockType[];
  doc: EmailSource;
  apply: (next: EmailSource, key?: string) => void;
  into?: { columns: string; column: 0 | 1 };
}) {
  const hasFooter = doc.blocks.some((b) => b.type === "footer");
  return (
    <section aria-label={label} className="email-blocks">
      <ol className="plain">
        {blocks.map((block, i) => {
          const name = `${label === "Blocks" ? "" : `${label}, `}${i + 1}. ${BLOCK_NAMES[block.type]}`;
          const last = i === blocks.length - 1 || blocks[i + 1]?.type === "footer";
          return (
            <li key={block.id}>
              <fieldset className="email-block">
                <legend>{name}</legend>
                <div className="row">
                  <button type="button" className="secondary" disabled={i === 0 || block.type === "footer"} onClick={() => apply(moveBlock(doc, block.id, -1))}>
                    Move up<span className="visually-hidden"> {name}</span>
                  </button>
                  <button type="button" className="secondary" disabled={last || block.type === "footer"} onClick={() => apply(moveBlock(doc, block.id, 1))}>
                    Move down<span className="visually-hidden"> {name}</span>
                  </button>
                  <button type="button" className="danger" onClick={() => apply(removeBlock(doc, block.id))}>
                    Delete<span className="visually-hidden"> {name}</span>
                  </button>
                </div>
                <BlockFields block={block} change={(patch, key) => apply(updateBlock(doc, block.id, patch), key)}>
                  {block.type === "columns" && (
                    <div className="split">
                      {block.columns.map((column, c) => (
                        <BlockList key={c} blocks={column} label={`${name}, ${c === 0 ? "left" : "right"} column`} types={COLUMN_TYPES} doc={doc} apply={apply} into={{ columns: block.id, column: c as 0 | 1 }} />
                      ))}
                    </div>
                  )}
                </BlockFields>
              </fieldset>
            </li>
          );
        })}
      </ol>
      <div className="row" role="group" aria-label={`Add to ${label.toLowerCase()}`}>
        {types.map((type) => (
          <button key={type} type="button" className="secondary" disabled={type === "footer" && hasFooter} onClick={() => apply(addBlock(doc, newBlock(type), into))}>
            Add {BLOCK_NAMES[type].toLowerCase()}
            {into && <span className="visually-hidden"> to {label}</span>}
          </button>
        ))}
      </div>
    </section>
  );
}

/** The problems of the source, each naming the block: "2. Button: link must be …". */
function sourceProblems(doc: EmailSource, serverFields: Record<string, string>): string[] {
  const parsed = emailSource.safeParse(doc);
  const local = parsed.success ? [] : fieldErrorsFromZod(parsed.error);
  const server = Object.entries(serverFields)
    .filter(([field]) => field.startsWith("body_source"))
    .map(([field, message]) => ({ field: field.replace(/^body_source\.?/, ""), message }));
  const seen = new Set<string>();
  return [...local, ...server].flatMap(({ field, message }) => {
    const at = /^blocks\.(\d+)(?:\.columns\.(\d)\.(\d+))?\.?(.*)$/.exec(field);
    let where = field || "message";
    if (at) {
      const block = doc.blocks[Number(at[1])];
      where = `${Number(at[1]) + 1}. ${block ? BLOCK_NAMES[block.type] : "block"}`;
      if (at[2] !== undefined) where += `, ${at[2] === "0" ? "left" : "right"} column ${Number(at[3]) + 1}`;
      if (at[4]) where += ` (${at[4].replace(/\./g, " ")})`;
    }
    const line = `${where}: ${message}`;
    if (seen.has(line)) return [];
    seen.add(line);
    return [line];
  });
}

export default function EmailBodyEditor({ value, onChange, label, hint, previewTitle, error, fields = {}, startVisual = false }: EmailBodyProps) {
  const [mode, setMode] = useState<"visual" | "code">(value.source || startVisual ? "visual" : "code");
  const [history, setHistory] = useState<History | null>(() => (value.source ? historyOf(value.source) : startVisual ? historyOf(starterEmailSource(newBlockId)) : null));
  const [mjml, setMjml] = useState<Mjml>();
  const [renderError, setRenderError] = useState<string>();
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  useEffect(() => {
    if (mode === "visual" && !mjml) void loadMjml().then((m) => setMjml(() => m), (e: unknown) => setRenderError(`The renderer did not load: ${String(e)}`));
  }, [mode, mjml]);

  const doc = history?.present;
  // The HTML that is saved: rendered again on every change of the message.
  useEffect(() => {
    if (mode !== "visual" || !doc || !mjml) return;
    try {
      const { html } = mjml(emailSourceMjml(doc), { validationLevel: "skip" });
      setRenderError(undefined);
      onChangeRef.current({ html, source: doc });
    } catch (e) {
      setRenderError(`The message could not be rendered: ${String(e)}`);
    }
  }, [doc, mjml, mode]);

  const problems = useMemo(() => (doc ? sourceProblems(doc, fields) : []), [doc, fields]);
  const apply = (next: EmailSource, key?: string) => setHistory((h) => (h ? changed(h, next, key ?? null) : historyOf(next)));

  const toVisual = () => {
    setHistory((h) => h ?? historyOf(starterEmailSource(newBlockId)));
    setMode("visual");
  };
  const toCode = () => {
    setMode("code");
    onChange({ html: value.html, source: null });
  };

  return (
    <div className="email-editor">
      <div className="row" role="group" aria-label="How to write the body">
        <button type="button" className={mode === "visual" ? "" : "secondary"} aria-pressed={mode === "visual"} onClick={toVisual}>
          Visual editor
        </button>
        <button type="button" className={mode === "code" ? "" : "secondary"} aria-pressed={mode === "code"} onClick={toCode}>
          Code
        </button>
        {mode === "visual" && history && (
          <>
            <button type="button" className="secondary" disabled={!history.past.length} onClick={() => setHistory((h) => h && undo(h))}>
              Undo
            </button>
            <button type="button" className="secondary" disabled={!history.future.length} onClick={() => setHistory((h) => h && redo(h))}>
              Redo
            </button>
          </>
        )}
      </div>
      {mode === "code" && history && <p className="muted">Saved from here, the body is this HTML; back in the visual editor, its blocks replace it.</p>}
      <div className="split">
        {mode === "visual" && doc ? (
          <div>
            {problems.length > 0 && (
              <div className="error" role="alert" aria-label="Problems in the message">
                <ul>
                  {problems.map((problem) => (
                    <li key={problem}>{problem}</li>
                  ))}
                </ul>
              </div>
            )}
            {error && <p className="error">{error}</p>}
            {renderError && <p className="error">{renderError}</p>}
            <BlockList blocks={doc.blocks} label="Blocks" types={TOP_TYPES} doc={doc} apply={apply} />
            <details className="email-style">
              <summary>Message style</summary>
              <div className="row">
                <Field label="Page background" hint="#rrggbb">{(props) => <input {...props} value={doc.background} onChange={(e) => apply({ ...doc, background: e.target.value.trim() }, "doc.background")} />}</Field>
                <Field label="Content background" hint="#rrggbb">
                  {(props) => <input {...props} value={doc.content_background} onChange={(e) => apply({ ...doc, content_background: e.target.value.trim() }, "doc.content_background")} />}
                </Field>
                <Field label="Link colour" hint="#rrggbb">{(props) => <input {...props} value={doc.link_color} onChange={(e) => apply({ ...doc, link_color: e.target.value.trim() }, "doc.link_color")} />}</Field>
                <Field label="Font">
                  {(props) => (
                    <select {...props} value={doc.font} onChange={(e) => apply({ ...doc, font: e.target.value as EmailSource["font"] })}>
                      <option value="sans">Sans-serif</option>
                      <option value="serif">Serif</option>
                      <option value="mono">Monospace</option>
                    </select>
                  )}
                </Field>
              </div>
            </details>
          </div>
        ) : (
          <Field label={label} hint={hint} error={error}>
            {(props) => <textarea {...props} required rows={14} value={value.html} onChange={(e) => onChange({ html: e.target.value, source: null })} />}
          </Field>
        )}
        <Preview title={previewTitle} html={value.html} waiting={mode === "visual" && !mjml && !renderError} />
      </div>
    </div>
  );
}

function Preview({ title, html, waiting }: { title: string; html: string; waiting: boolean }) {
  const id = useMemo(() => `preview-${newBlockId()}`, []);
  return (
    <div className="field">
      <span id={id} className="label">
        Preview{waiting ? " (loading the renderer…)" : ""}
      </span>
      {/* An empty sandbox: the body's scripts, forms and links cannot run or reach the panel. */}
      <iframe title={title} aria-labelledby={id} sandbox="" srcDoc={html} className="preview email-preview" />
    </div>
  );
}
