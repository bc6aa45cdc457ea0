import { useState, type FormEvent } from "react";
import { admin } from "../../api";
import type { SmsSuppressionPage, SmsSuppressionView } from "../../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../../components/data-table";
import { Empty, ErrorNote, Field, failureOf, formatTime, Loading, useLoad, useSubmit, unplacedFailure } from "../../ui";
import { useConfirm } from "../../components/confirm-dialog";

// Numbers SMS is not sent to. Lifting one sends to it again: for a STOP reply only with the
// person's consent, which the confirmation says.

const REASONS: Record<SmsSuppressionView["reason"], string> = {
  stop: "replied STOP (or unsubscribed)",
  provider: "the provider reported an opt-out",
  operator: "stopped by an operator",
};

/** Stops SMS to a number an operator names (someone asked by mail or phone, say). */
function StopNumberForm({ panelId, onStopped }: { panelId: string; onStopped: () => void }) {
  const [phone, setPhone] = useState("");
  const { failure, fields, busy, run } = useSubmit(() => (setPhone(""), onStopped()));
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    await run(() => admin("PUT", panelId, `/sms/suppressions/${encodeURIComponent(phone.trim())}`));
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Stop SMS to a number">
      <ErrorNote error={unplacedFailure(failure, fields, ["phone"])} />
      <Field label="Number to stop" hint="With its country code, such as 14155550100" error={fields.phone}>
        {(props) => <input {...props} inputMode="tel" autoComplete="off" value={phone} onChange={(e) => setPhone(e.target.value)} />}
      </Field>
      <button type="submit" disabled={busy || phone.trim() === ""}>
        Stop SMS to this number
      </button>
    </form>
  );
}

export function SmsSuppressions({ panelId, writable }: { panelId: string; writable: boolean }) {
  const [confirm, confirmation] = useConfirm();
  // A page at a time from the Worker, newest first: a panel may have stopped any number of numbers.
  const [cursor, setCursor] = useState<string>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
  const { data, error, reload } = useLoad(() => admin<SmsSuppressionPage>("GET", panelId, `/sms/suppressions?${query}`), [panelId, query.toString()]);
  const [failure, setFailure] = useState<string>();
  // A number just stopped is the newest: shown on the first page.
  const firstPage = () => (cursor === undefined ? reload() : (setCursor(undefined), setTrail([])));

  const lift = async (phone: string) => {
    const message = `Send SMS to ${phone} again? Do so for a number that replied STOP only with its owner's consent.`;
    if (!(await confirm({ title: "Send SMS to this number again?", message, confirmLabel: "Send again" }))) return;
    setFailure(undefined);
    try {
      await admin("DELETE", panelId, `/sms/suppressions/${encodeURIComponent(phone)}`);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <section aria-labelledby="sms-suppressions-title">
      <h2 id="sms-suppressions-title">Numbers SMS is not sent to</h2>
      <ErrorNote error={error ?? failure} />
      {writable && <StopNumberForm panelId={panelId} onStopped={firstPage} />}
      <DataTable
        caption="Numbers SMS is not sent to, newest first"
        rows={data?.suppressions}
        rowKey={(s) => s.phone}
        loading={!error && <Loading />}
        empty={<Empty title="No stopped numbers">Numbers that reply STOP, or that the provider reports opted out, are listed here and get no SMS.</Empty>}
        columns={[
          { header: "Number", rowHeader: true, cell: (s) => s.phone, sortBy: (s) => s.phone },
          { header: "Why", cell: (s) => REASONS[s.reason], sortBy: (s) => REASONS[s.reason] },
          { header: "Since", cell: (s) => formatTime(s.created_at), sortBy: (s) => s.created_at },
          writable && {
            header: "Action",
            // An erased contact's number is kept only as a hash: it cannot be named to lift it.
            cell: (s) =>
              !s.phone.startsWith("erased:") && (
                <button type="button" className="secondary" onClick={() => void lift(s.phone)}>
                  Send again<span className="visually-hidden"> to {s.phone}</span>
                </button>
              ),
          },
        ]}
        pagerLabel="Stopped numbers pages"
        serverPages={{
          onPrevious: trail.length ? () => (setCursor(trail.at(-1)), setTrail(trail.slice(0, -1))) : undefined,
          onNext: data?.next_cursor ? () => (setTrail([...trail, cursor]), setCursor(data.next_cursor!)) : undefined,
        }}
      />
      {confirmation}
    </section>
  );
}
