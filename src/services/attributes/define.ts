import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName, type AttributeType } from "../../domain/attributes";
import { putAttribute, type Attribute } from "../../store/attributes";
import type { ShardDb } from "../../store/shards";

export type DefineAttributeOutcome = { ok: true; attribute: Attribute } | { ok: false; kind: "bad_name" } | { ok: false; kind: "retyped"; name: string; type: AttributeType };

/** Adds an attribute to the panel's schema (names stored upper-case); repeating it is harmless, retyping it is refused. */
export async function defineAttribute(db: ShardDb, panelId: string, rawName: string, type: AttributeType): Promise<DefineAttributeOutcome> {
  const name = canonicalAttributeName(rawName);
  if (!ATTRIBUTE_NAME_PATTERN.test(name)) return { ok: false, kind: "bad_name" };
  const stored = await putAttribute(db, panelId, { name, type }, Date.now());
  // Retyping would leave stored values of the old type behind, so a type is fixed once set.
  if (stored.type !== type) return { ok: false, kind: "retyped", name, type: stored.type };
  return { ok: true, attribute: stored };
}
