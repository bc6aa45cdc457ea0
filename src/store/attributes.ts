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

/** An attribute with the time it was defined, as a mirror copies it (decision 0041). */
export interface MirroredAttribute extends Attribute {
  createdAt: number;
}

export async function attributesToMirror(db: ShardDb, panelId: string): Promise<MirroredAttribute[]> {
  const { results } = await db
    .prepare("SELECT name, type, created_at AS createdAt FROM attributes WHERE panel_id = ? ORDER BY created_at, name")
    .bind(panelId)
    .all<MirroredAttribute>();
  return results;
}

/** Adds `attributes` to the mirror on `db` unless it has them (an attribute's type never changes): one statement. */
export function mirrorAttributesStatement(db: ShardDb, panelId: string, attributes: readonly MirroredAttribute[]): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO attributes (panel_id, name, type, created_at)
       SELECT ?1, a.value ->> 0, a.value ->> 1, a.value ->> 2 FROM json_each(?2) a WHERE true ON CONFLICT (panel_id, name) DO NOTHING`,
    )
    .bind(panelId, JSON.stringify(attributes.map((a) => [a.name, a.type, a.createdAt])));
}

/** Drops the panel's attributes from a shard that is not its home (a mirror made afresh, or left by the map). */
export function dropMirroredAttributesStatement(db: ShardDb, panelId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM attributes WHERE panel_id = ?").bind(panelId);
}
