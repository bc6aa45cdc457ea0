import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName, type AttributeType } from "../../domain/attributes";
import { putAttribute, type Attribute } from "../../store/attributes";
import type { ShardDb } from "../../store/shards";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { recordAudit, type Auditor } from "../audit/record";
import { mirrorAttributes, type MirrorShard } from "../access/partitions";

/** The attribute as stored; refused when the name breaks the rule (invalid) or the attribute has another type (conflict). */
export type DefineAttributeOutcome = Result<Attribute>;

/**
 * Adds an attribute to the panel's schema (names stored upper-case); repeating it is harmless,
 * retyping it is refused. A new attribute is recorded in the audit log when `by` is given, and
 * written to `mirrors` (decision 0041).
 */
export async function defineAttribute(db: ShardDb, panelId: string, mirrors: readonly MirrorShard[], rawName: string, type: AttributeType, by?: Auditor): Promise<DefineAttributeOutcome> {
  const name = canonicalAttributeName(rawName);
  if (!ATTRIBUTE_NAME_PATTERN.test(name)) return refusedField("invalid", "name", "must be a letter, then up to 63 letters, digits or underscores");
  const now = Date.now();
  const { created, ...stored } = await putAttribute(db, panelId, { name, type }, now);
  if (created) await mirrorAttributes(mirrors.map((m) => m.db), panelId, [{ ...stored, createdAt: now }]);
  // Retyping would leave stored values of the old type behind, so a type is fixed once set.
  if (stored.type !== type) {
    return refused("conflict", [{ field: "type", message: `attribute ${name} already has type ${stored.type}` }], `type: attribute ${name} already exists with type ${stored.type}`);
  }
  if (created && by) await recordAudit(db, panelId, by, "attribute.defined", name, { name, type });
  return succeeded(stored);
}
