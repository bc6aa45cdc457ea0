import type { UnknownAttributeMode } from "../../domain/attributes";
import type { KeyedSchema } from "../../domain/contacts";
import type { ShardDb } from "../../store/shards";

/** What a contact write use case (add.ts, update.ts, remove.ts) is given by its caller. */
export interface ContactWriteContext {
  env: Env;
  db: ShardDb;
  panelId: string;
  now: number;
  /** Takes the reactions the write starts (reactions.ts), which outlive the answer. */
  waitUntil(work: Promise<unknown>): void;
}

/** The panel's attributes, and what to do with attributes it does not have. */
export interface ContactSchemaContext {
  schema: KeyedSchema;
  unknown: UnknownAttributeMode;
}
