import { lazy, Suspense } from "react";
import type { EmailSource } from "../../../src/domain/email-source";
import type { EmailBodyProps, EmailBodyValue } from "../email-editor/types";
import { Loading } from "../ui";

export type { EmailBodyProps, EmailBodyValue };

// An email body as a form edits it: the HTML that is sent, and the visual editor's source it was
// rendered from (null: HTML written by hand). The editor, zod and MJML load only when a form
// with a body shows (decision 0039), so the panel's first screen stays small.

const Editor = lazy(() => import("../email-editor/editor"));

export function EmailBody(props: EmailBodyProps) {
  return (
    <Suspense fallback={<Loading />}>
      <Editor {...props} />
    </Suspense>
  );
}

/** Whether a refused field is shown by the editor itself (its source's problems, listed by block): not again on top of the form. */
export function shownByEmailBody(field: string): boolean {
  return field === "body_source" || field.startsWith("body_source.");
}

/** The members a request carries for a body: html, with the source when the visual editor wrote it. */
export function bodyMembers(value: EmailBodyValue): { html: string; body_source?: EmailSource | null } {
  return value.source ? { html: value.html, body_source: value.source } : { html: value.html };
}
