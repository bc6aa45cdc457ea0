import type { ShardDb } from "../../../store/shards";
import { deleteOutboxRecords, insertOutboxRecords, messagesGone, type NewOutboxRecord } from "../../../store/outbox";
import type { EmailProvider, OutgoingEmail, SendResult } from "./provider";

export function outboxKey(panelId: string, messageId: string): string {
  return `outbox/${panelId}/${messageId}.eml`;
}

const encoder = new TextEncoder();

/**
 * The embedded provider: each message is kept as an .eml in R2 and listed in D1 (admin
 * `outbox` route), exactly what would have been sent. Keys and rows are named by message id,
 * so sending a message again rewrites the same object and leaves the row as it was. A contact's
 * message (`contact`) keeps its copy only while its message row exists (see `record`).
 */
export class OutboxProvider implements EmailProvider {
  readonly name = "outbox";
  readonly idempotent = true;
  readonly realEmail = false;

  constructor(
    /** The database of a panel's shard, where its outbox rows go. */
    private readonly dbOf: (panelId: string) => Promise<ShardDb>,
    private readonly files: R2Bucket,
  ) {}

  async send(messages: readonly OutgoingEmail[], now: number): Promise<SendResult[]> {
    const records: Array<{ record: NewOutboxRecord; messagesDb: ShardDb | null }> = [];
    const results = await Promise.all(
      messages.map(async (message): Promise<SendResult> => {
        const key = outboxKey(message.panelId, message.id);
        const bytes = encoder.encode(message.raw);
        try {
          await this.files.put(key, bytes, { httpMetadata: { contentType: "message/rfc822" } });
        } catch (error) {
          return { ok: false, retryable: true, error: `outbox write failed: ${error instanceof Error ? error.message : String(error)}` };
        }
        const record: NewOutboxRecord = {
          id: message.id,
          panelId: message.panelId,
          channel: "email",
          recipient: message.to,
          sender: message.from,
          subject: message.subject,
          campaignId: message.campaignId,
          r2Key: key,
          size: bytes.byteLength,
          createdAt: now,
          note: message.note ?? null,
          contactId: message.contact?.id ?? null,
        };
        records.push({ record, messagesDb: message.contact?.db ?? null });
        return { ok: true, providerMessageId: message.id };
      }),
    );
    for (const panelId of new Set(records.map((r) => r.record.panelId))) {
      const home = await this.dbOf(panelId);
      const ofPanel = records.filter((r) => r.record.panelId === panelId);
      for (const messagesDb of new Set(ofPanel.map((r) => r.messagesDb ?? home))) {
        const gone = await this.record(home, messagesDb, panelId, ofPanel.filter((r) => (r.messagesDb ?? home) === messagesDb).map((r) => r.record));
        // Sent, as far as the sender is concerned; the copy goes with its erased contact.
        if (gone.length) await this.files.delete(gone.map((id) => outboxKey(panelId, id)));
      }
    }
    return results;
  }

  /**
   * Records the copies on the panel's home; returns the ids of contacts' messages whose rows
   * `messagesDb` no longer holds, and not recorded before, whose objects are then deleted. An
   * erasure deletes the message rows, then the outbox rows and objects of the ids they named: a
   * copy checked before that batch is deleted by the erasure, one checked after is dropped here.
   */
  private async record(home: ShardDb, messagesDb: ShardDb, panelId: string, records: readonly NewOutboxRecord[]): Promise<string[]> {
    const ofContacts = records.flatMap((r) => (typeof r.contactId === "number" ? [{ id: r.id, campaignId: r.campaignId, contactId: r.contactId }] : []));
    if (messagesDb === home) {
      // Checked in the insert itself; only what it left out is looked at again (none, unless erased or resent).
      const recorded = new Set(await insertOutboxRecords(home, records, true));
      return messagesGone(home, panelId, ofContacts.filter((m) => !recorded.has(m.id)), true);
    }
    // Rows on a partition's shard (decision 0038): recorded here first, then checked there.
    const recorded = new Set(await insertOutboxRecords(home, records));
    const gone = await messagesGone(messagesDb, panelId, ofContacts.filter((m) => recorded.has(m.id)));
    await deleteOutboxRecords(home, panelId, gone);
    return gone;
  }
}
