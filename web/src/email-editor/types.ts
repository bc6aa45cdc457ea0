import type { EmailSource } from "../../../src/domain/email-source";

// What a form hands the lazily loaded editor (components/email-body.tsx), apart so neither imports the other.

export interface EmailBodyValue {
  html: string;
  source: EmailSource | null;
}

export interface EmailBodyProps {
  value: EmailBodyValue;
  onChange: (value: EmailBodyValue) => void;
  /** The label of the HTML textarea in "Code" mode. */
  label: string;
  hint?: string;
  /** The preview frame's title. */
  previewTitle: string;
  /** The refusal of the HTML body. */
  error?: string;
  /** The form's refused fields; those under body_source are shown by block. */
  fields?: Record<string, string>;
  /** Start a body without a source in the visual editor, from a starter message (a new email). */
  startVisual?: boolean;
}
