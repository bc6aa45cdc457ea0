import type { ShardDb } from "./shards";
import type { AttributeSchema, AttributeType } from "../domain/attributes";

export interface Attribute {
  name: string;
  type: AttributeType;
}

export async function listAttributes(db: ShardDb, panelId: string): Promise<Attribute[]> {
  const { results } = await db
    .prepare("SELECT name, type FROM attributes WHERE panel_id = ? ORDER BY created_at, name")
    .bind(panelId)
    .all<Attribute>();
  return results;
}

export async function loadAttributeSchema(db: ShardDb, panelId: string): Promise<AttributeSchema> {
  return new Map((await listAttributes(db, panelId)).map((a) => [a.name, a.type]));
}

/** Creates the attribute, or returns the existing one unchanged (the caller compares types). */
/** Adds an attribute unless the panel has one of that name; answers the stored one and whether it is new. */
export async function putAttribute(db: ShardDb, panelId: string, attribute: Attribute, now: number): Promise<Attribute & { created: boolean }> {
  const inserted = await db
    .prepare("INSERT INTO attributes (panel_id, name, type, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (panel_id, name) DO NOTHING RETURNING name, type")
    .bind(panelId, attribute.name, attribute.type, now)
    .first<Attribute>();
  if (inserted) return { ...inserted, created: true };
  const stored = await db.prepare("SELECT name, type FROM attributes WHERE panel_id = ? AND name = ?").bind(panelId, attribute.name).first<Attribute>();
  return { ...stored!, created: false };
}

/** A new panel's starting schema, written before its directory entry. */
export async function insertAttributes(db: ShardDb, panelId: string, attributes: ReadonlyArray<readonly [string, AttributeType]>, now: number): Promise<void> {
  const insert = db.prepare("INSERT INTO attributes (panel_id, name, type, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (panel_id, name) DO NOTHING");
  await db.batch(attributes.map(([name, type]) => insert.bind(panelId, name, type, now)));
}
