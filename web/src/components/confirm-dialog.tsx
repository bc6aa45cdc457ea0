import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from "react";

/** What a confirmation asks: a short title, the consequence in a sentence, and the action's verb. */
export interface ConfirmRequest {
  title: string;
  message: string;
  confirmLabel: string;
}

/**
 * A modal alert dialog for a destructive action. It opens as a native modal <dialog> (the page
 * behind turns inert), moves focus to Cancel (the safe choice), answers false on Escape or Cancel,
 * and gives focus back to whatever held it before.
 */
export function ConfirmDialog({ request, onAnswer }: { request: ConfirmRequest; onAnswer: (confirmed: boolean) => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const id = useId();

  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    cancel.current?.focus();
    return () => {
      if (element?.open) element.close();
      // The opener may be gone (its row deleted); focus then falls back to the page as before.
      if (opener?.isConnected) opener.focus();
    };
  }, []);

  return (
    <dialog
      ref={dialog}
      role="alertdialog"
      className="confirm"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-message`}
      // Escape fires `cancel`: the browser would close the dialog by itself; answer instead, so state stays in step.
      onCancel={(event) => {
        event.preventDefault();
        onAnswer(false);
      }}
    >
      <h2 id={`${id}-title`}>{request.title}</h2>
      <p id={`${id}-message`}>{request.message}</p>
      <div className="row">
        <button type="button" className="secondary" ref={cancel} onClick={() => onAnswer(false)}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={() => onAnswer(true)}>
          {request.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * `const [confirm, dialog] = useConfirm()`: render `dialog` anywhere in the screen, and
 * `if (await confirm({...})) ...` where window.confirm stood.
 */
export function useConfirm(): [(request: ConfirmRequest) => Promise<boolean>, ReactNode] {
  const [pending, setPending] = useState<{ request: ConfirmRequest; resolve: (confirmed: boolean) => void } | null>(null);
  const confirm = useCallback((request: ConfirmRequest) => new Promise<boolean>((resolve) => setPending({ request, resolve })), []);
  const dialog = pending && (
    <ConfirmDialog
      request={pending.request}
      onAnswer={(confirmed) => {
        setPending(null);
        pending.resolve(confirmed);
      }}
    />
  );
  return [confirm, dialog];
}
