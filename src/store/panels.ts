import type { AttributeType } from "../domain/attributes";

export interface Panel {
  id: string;
  name: string;
  primaryKey: string;
  timezone: string;
  apiMode: boolean;
  clientId: string;
  createdAt: number;
  updatedAt: number;
}

interface PanelRow {
  id: string;
  name: string;
  primary_key: string;
  timezone: string;
  api_mode: number;
  client_id: string;
  created_at: number;
  updated_at: number;
}

export const PANEL_COLUMNS = "id, name, primary_key, timezone, api_mode, client_id, created_at, updated_at";

export function panelFromRow(row: PanelRow): Panel {
  return {
    id: row.id,
    name: row.name,
    primaryKey: row.primary_key,
    timezone: row.timezone,
    apiMode: row.api_mode === 1,
    clientId: row.client_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Creates a panel with its starting attribute schema in one batch. */
export async function insertPanel(
  db: D1Database,
  panel: Panel,
  attributes: ReadonlyArray<readonly [string, AttributeType]>,
): Promise<void> {
  const insertAttribute = db.prepare("INSERT INTO attributes (panel_id, name, type, created_at) VALUES (?, ?, ?, ?)");
  await db.batch([
    db
      .prepare(`INSERT INTO panels (${PANEL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
      .bind(panel.id, panel.name, panel.primaryKey, panel.timezone, panel.apiMode ? 1 : 0, panel.clientId, panel.createdAt, panel.updatedAt),
    ...attributes.map(([name, type]) => insertAttribute.bind(panel.id, name, type, panel.createdAt)),
  ]);
}

export async function getPanel(db: D1Database, id: string): Promise<Panel | null> {
  const row = await db.prepare(`SELECT ${PANEL_COLUMNS} FROM panels WHERE id = ?`).bind(id).first<PanelRow>();
  return row ? panelFromRow(row) : null;
}

export async function getPanelByClientId(db: D1Database, clientId: string): Promise<Panel | null> {
  const row = await db.prepare(`SELECT ${PANEL_COLUMNS} FROM panels WHERE client_id = ?`).bind(clientId).first<PanelRow>();
  return row ? panelFromRow(row) : null;
}

export async function listPanels(db: D1Database): Promise<Panel[]> {
  const { results } = await db.prepare(`SELECT ${PANEL_COLUMNS} FROM panels ORDER BY created_at`).all<PanelRow>();
  return results.map(panelFromRow);
}

export interface PanelPatch {
  name?: string;
  timezone?: string;
  apiMode?: boolean;
}

export async function updatePanel(db: D1Database, id: string, patch: PanelPatch, now: number): Promise<Panel | null> {
  const row = await db
    .prepare(
      `UPDATE panels SET name = COALESCE(?, name), timezone = COALESCE(?, timezone),
         api_mode = COALESCE(?, api_mode), updated_at = ?
       WHERE id = ? RETURNING ${PANEL_COLUMNS}`,
    )
    .bind(patch.name ?? null, patch.timezone ?? null, patch.apiMode === undefined ? null : patch.apiMode ? 1 : 0, now, id)
    .first<PanelRow>();
  return row ? panelFromRow(row) : null;
}
