import type { UnknownAttributeMode } from "../../domain/attributes";
import type { KeyedSchema } from "../../domain/contacts";
import type { ShardDb } from "../../store/shards";

/** What a contact write use case (add.ts, update.ts, remove.ts) is given by its caller. */
export interface ContactWriteContext {
  env: Env;
  /** The database of the contact's partition (services/access/partitions.ts, contactPlace): the panel's home unless its contacts span shards. */
  db: ShardDb;
  /**
   * The panel's other shards that hold its configuration (the home and mirrors besides `db`,
   * decision 0041): attributes the write creates are defined there too. Empty for a panel whose
   * contacts all live on its home.
   */
  configElsewhere: readonly ShardDb[];
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
