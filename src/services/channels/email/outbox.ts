import type { ShardDb } from "../../../store/shards";
import { insertOutboxRecords, type OutboxRecord } from "../../../store/outbox";
import type { EmailProvider, OutgoingEmail, SendResult } from "./provider";

export function outboxKey(panelId: string, messageId: string): string {
  return `outbox/${panelId}/${messageId}.eml`;
}

const encoder = new TextEncoder();

/**
 * The embedded provider: each message is kept as an .eml in R2 and listed in D1 (admin
 * `outbox` route), exactly what would have been sent. Keys and rows are named by message id,
 * so sending a message again rewrites the same object and leaves the row as it was.
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
    const records: OutboxRecord[] = [];
    const results = await Promise.all(
      messages.map(async (message): Promise<SendResult> => {
        const key = outboxKey(message.panelId, message.id);
        const bytes = encoder.encode(message.raw);
        try {
          await this.files.put(key, bytes, { httpMetadata: { contentType: "message/rfc822" } });
        } catch (error) {
          return { ok: false, retryable: true, error: `outbox write failed: ${error instanceof Error ? error.message : String(error)}` };
        }
        records.push({
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
        });
        return { ok: true, providerMessageId: message.id };
      }),
    );
    for (const panelId of new Set(records.map((r) => r.panelId))) {
      await insertOutboxRecords(await this.dbOf(panelId), records.filter((r) => r.panelId === panelId));
    }
    return results;
  }
}
