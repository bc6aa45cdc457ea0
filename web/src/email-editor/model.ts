import type { ColumnBlock, EmailBlock, EmailBlockType, EmailSource } from "../../../src/domain/email-source";

// The editor's model: operations on a message's blocks (found by id, wherever they sit: the
// message or a column) and an undo history. Pure functions, so the screen only wires them.

type AnyBlock = EmailBlock | ColumnBlock;

export const BLOCK_NAMES: Record<EmailBlockType, string> = {
  heading: "Heading",
  text: "Text",
  image: "Image",
  button: "Button",
  columns: "Two columns",
  divider: "Divider",
  spacer: "Spacer",
  social: "Social links",
  footer: "Footer",
};

/** Ids unique in the message: the schema refuses two blocks with one id. */
export function newBlockId(): string {
  return `b${crypto.getRandomValues(new Uint32Array(1))[0]!.toString(36)}`;
}

export function newBlock(type: EmailBlockType): AnyBlock {
  const id = newBlockId();
  switch (type) {
    case "heading":
      return { type, id, text: "A heading", level: 2, style: {} };
    case "text":
      return { type, id, text: "", style: {} };
    case "image":
      return { type, id, src: "https://", alt: "", style: {} };
    case "button":
      return { type, id, label: "Read more", href: "https://", style: {} };
    case "columns":
      return { type, id, columns: [[{ type: "text", id: newBlockId(), text: "Left", style: {} }], [{ type: "text", id: newBlockId(), text: "Right", style: {} }]], style: {} };
    case "divider":
      return { type, id, thickness: 1, style: {} };
    case "spacer":
      return { type, id, height: 24 };
    case "social":
      return { type, id, links: [{ network: "facebook", href: "https://" }], style: {} };
    case "footer":
      return { type, id, text: "", unsubscribe_label: "Unsubscribe", preferences_label: "Email preferences", style: {} };
  }
}

/** Applies `change` to the message's list of blocks and to each column's. */
function eachList(doc: EmailSource, change: (list: AnyBlock[]) => AnyBlock[]): EmailSource {
  const blocks = (change(doc.blocks) as EmailBlock[]).map((block) =>
    block.type === "columns" ? { ...block, columns: block.columns.map((column) => change(column) as ColumnBlock[]) as [ColumnBlock[], ColumnBlock[]] } : block,
  );
  return { ...doc, blocks };
}

export function updateBlock(doc: EmailSource, id: string, patch: Partial<AnyBlock>): EmailSource {
  return eachList(doc, (list) => list.map((block) => (block.id === id ? ({ ...block, ...patch } as AnyBlock) : block)));
}

export function removeBlock(doc: EmailSource, id: string): EmailSource {
  return eachList(doc, (list) => list.filter((block) => block.id !== id));
}

export function moveBlock(doc: EmailSource, id: string, by: -1 | 1): EmailSource {
  return eachList(doc, (list) => {
    const at = list.findIndex((block) => block.id === id);
    const to = at + by;
    if (at < 0 || to < 0 || to >= list.length) return list;
    // A footer stays last.
    if (list[to]!.type === "footer" || list[at]!.type === "footer") return list;
    const next = [...list];
    [next[at], next[to]] = [next[to]!, next[at]!];
    return next;
  });
}

/** Adds a block at the end of the message (before its footer), or of a column of a columns block. */
export function addBlock(doc: EmailSource, block: AnyBlock, into?: { columns: string; column: 0 | 1 }): EmailSource {
  if (into) {
    return {
      ...doc,
      blocks: doc.blocks.map((b) => {
        if (b.id !== into.columns || b.type !== "columns") return b;
        const columns = [...b.columns] as [ColumnBlock[], ColumnBlock[]];
        columns[into.column] = [...columns[into.column], block as ColumnBlock];
        return { ...b, columns };
      }),
    };
  }
  const footer = doc.blocks.findIndex((b) => b.type === "footer");
  const blocks = [...doc.blocks];
  blocks.splice(footer < 0 ? blocks.length : footer, 0, block as EmailBlock);
  return { ...doc, blocks };
}

/** Undo and redo: each change pushes the message before it, except a run of keystrokes in one field, which is one step. */
export interface History {
  past: EmailSource[];
  present: EmailSource;
  future: EmailSource[];
  /** The field the last change typed into; the next change with the same key joins its step. */
  lastKey: string | null;
}

const MAX_STEPS = 100;

export const historyOf = (present: EmailSource): History => ({ past: [], present, future: [], lastKey: null });

export function changed(history: History, next: EmailSource, key: string | null = null): History {
  if (key !== null && key === history.lastKey) return { ...history, present: next, future: [] };
  return { past: [...history.past, history.present].slice(-MAX_STEPS), present: next, future: [], lastKey: key };
}

export function undo(history: History): History {
  const previous = history.past.at(-1);
  if (!previous) return history;
  return { past: history.past.slice(0, -1), present: previous, future: [history.present, ...history.future], lastKey: null };
}

export function redo(history: History): History {
  const next = history.future[0];
  if (!next) return history;
  return { past: [...history.past, history.present], present: next, future: history.future.slice(1), lastKey: null };
}
