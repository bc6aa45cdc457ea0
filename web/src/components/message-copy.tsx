import { useState } from "react";
import { admin } from "../api";
import type { MessageCopy } from "../../../src/domain/answers";
import { ErrorNote, formatTime, Loading, useLoad } from "../ui";

/** A sent email as its recipient got it, in a sandbox that runs no script and loads nothing of the panel's. */
export function MessageCopyView({ panelId, messageId }: { panelId: string; messageId: string }) {
  const { data, error } = useLoad(() => admin<MessageCopy>("GET", panelId, `/messages/${encodeURIComponent(messageId)}/copy`), [panelId, messageId]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <section aria-label={`Copy of the email sent to ${data.to ?? "the contact"}`}>
      <p>
        <strong>{data.subject}</strong> to {data.to ?? "—"}, {formatTime(data.sent_at)}. Links go where they point; viewing it counts no open.
      </p>
      <iframe title={`Email: ${data.subject}`} sandbox="" srcDoc={data.html} className="preview" />
    </section>
  );
}

/** Which message's copy a table shows, and its View toggle for a row. */
export function useCopyToggle() {
  const [open, setOpen] = useState<string>();
  const toggle = (messageId: string, label: string) => (
    <button type="button" className="link" aria-pressed={open === messageId} onClick={() => setOpen(open === messageId ? undefined : messageId)}>
      View<span className="visually-hidden"> the email {label}</span>
    </button>
  );
  return { open, toggle };
}
