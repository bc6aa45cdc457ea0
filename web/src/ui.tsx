import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from "react";
import { ApiFailure } from "./api";

/** Loads data for a screen; `reload` fetches again after a change. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string | undefined; reload: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setError(undefined);
    load().then(
      (value) => live && setData(value),
      (failure: unknown) => live && setError(failure instanceof Error ? failure.message : String(failure)),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

/** Runs `callback` every `ms` while `active` (a page's figures kept current while it is open). */
export function useEvery(ms: number, callback: () => void, active = true): void {
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(callback, ms);
    return () => clearInterval(timer);
  }, [ms, callback, active]);
}

/** The screen's heading takes focus on arrival, so keyboard and screen-reader users start there. */
export function Screen({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Panel`;
    heading.current?.focus();
  }, [title]);
  return (
    <section aria-labelledby="screen-title">
      <div className="screen-head">
        <h1 id="screen-title" tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function Loading() {
  return (
    <p role="status" className="muted">
      Loading…
    </p>
  );
}

export function ErrorNote({ error }: { error: string | undefined }) {
  if (!error) return null;
  return (
    <p role="alert" className="error">
      {error}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <h2>{title}</h2>
      {children && <p>{children}</p>}
    </div>
  );
}

export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: string;
  error?: string;
  children: (props: { id: string; "aria-describedby"?: string; "aria-invalid"?: boolean }) => ReactNode;
}) {
  const id = useId();
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, "aria-describedby": described, "aria-invalid": error ? true : undefined })}
      {hint && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} className="error">
          {error}
        </small>
      )}
    </div>
  );
}

/** A form's closing row: its submit button (left out when `submitLabel` is absent) and, given `onCancel`, a secondary button that closes it. */
export function FormActions({ submitLabel, busy, onCancel, cancelLabel = "Cancel" }: { submitLabel?: ReactNode; busy: boolean; onCancel?: () => void; cancelLabel?: string }) {
  return (
    <div className="row">
      {submitLabel !== undefined && (
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
      )}
      {onCancel && (
        <button type="button" className="secondary" onClick={onCancel}>
          {cancelLabel}
        </button>
      )}
    </div>
  );
}

/** Turns a thrown failure into a message and per-field errors for a form. */
export function failureOf(failure: unknown): { message: string; fields: Record<string, string> } {
  if (failure instanceof ApiFailure) {
    return { message: failure.message, fields: Object.fromEntries(failure.errors.map((e) => [e.field, e.message])) };
  }
  return { message: failure instanceof Error ? failure.message : String(failure), fields: {} };
}

/**
 * A refusal's message for the top of a form, or nothing when every field it names is shown
 * under its input already: each error appears once, at its field.
 */
export function unplacedFailure(failure: string | undefined, fields: Record<string, string>, placed: readonly string[] | ((field: string) => boolean)): string | undefined {
  const named = Object.keys(fields);
  const shown = typeof placed === "function" ? placed : (field: string) => placed.includes(field);
  return named.length > 0 && named.every(shown) ? undefined : failure;
}

/**
 * Runs a form's or a button's request: `run(work)` clears the last refusal, awaits `work` and
 * answers whether it succeeded; a refusal becomes `failure` (the message) and `fields` (per-field
 * errors). `onDone` runs after each success (a screen's reload, say).
 */
export function useSubmit(onDone?: () => void) {
  const [failure, setFailure] = useState<string>();
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<unknown>): Promise<boolean> => {
    setFailure(undefined);
    setFields({});
    setBusy(true);
    try {
      await work();
      onDone?.();
      return true;
    } catch (problem) {
      const refused = failureOf(problem);
      setFailure(refused.message);
      setFields(refused.fields);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { failure, fields, busy, run };
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="secondary"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => setCopied(true), () => setCopied(false));
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}

/** A value an operator copies elsewhere (a DNS record, a URL to give a provider), shown whole beside its copy button. */
export function CopyableValue({ text, label }: { text: string; label: string }) {
  return (
    <>
      <code className="record-value">{text}</code> <CopyButton text={text} label={label} />
    </>
  );
}

/** Previous/next paging over a cursor or an offset; the screen supplies what each button does. */
export function Pager({ onPrevious, onNext, label }: { onPrevious?: () => void; onNext?: () => void; label: string }) {
  if (!onPrevious && !onNext) return null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" className="secondary" disabled={!onPrevious} onClick={onPrevious}>
        Previous
      </button>
      <button type="button" className="secondary" disabled={!onNext} onClick={onNext}>
        Next
      </button>
    </nav>
  );
}

/** A text fact as a read-only view shows it: "none" when it is empty or missing. */
export function orNone(text: string | null | undefined): string {
  return text?.trim() ? text : "none";
}

/** Several values as one fact: joined, or "none" when there are none. */
export function listedOrNone(values: readonly string[]): string {
  return values.length ? values.join(", ") : "none";
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  return new Date(iso).toLocaleString();
}

/**
 * A stored count as shown (issue 42): "at least" for a floor, and "as of HH:MM" when it was
 * counted in the background a while ago rather than by this request.
 */
export function countFigure(n: number, countedAt: string, atLeast: boolean): string {
  const age = Date.now() - Date.parse(countedAt);
  const asOf = age > 60_000 ? ` (as of ${new Date(countedAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })})` : "";
  return `${atLeast ? "at least " : ""}${n}${asOf}`;
}

/**
 * A callback ref that calls `onVisible` when its element scrolls near the viewport: the next page
 * of an endless list loads through it. Give the element a key that changes with each page, so a
 * new observer looks again when a short page leaves it in view.
 */
export function useWhenVisible(onVisible: () => void): (element: Element | null) => void {
  const latest = useRef(onVisible);
  useEffect(() => {
    latest.current = onVisible;
  });
  const observer = useRef<IntersectionObserver | null>(null);
  return useCallback((element: Element | null) => {
    observer.current?.disconnect();
    if (!element) return;
    observer.current = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) latest.current();
    }, { rootMargin: "200px" });
    observer.current.observe(element);
  }, []);
}
