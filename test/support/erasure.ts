import { env } from "cloudflare:workers";
import { gunzipText } from "../../src/lib/gzip";
import { recordEvents } from "../../src/services/pipeline/record";
import { pipelineSettled } from "./activity";
import { panelData, type TestPanel } from "./helpers";

const DAY = 86_400_000;

/** Events of `identity`: one at midday UTC on each of `oldDays` days from 40 days back, and `recent` in the last hours. */
export async function seedEvents(panel: TestPanel, identity: string, oldDays: number, recent: number, from = 0): Promise<void> {
  const midday = Math.floor(Date.now() / DAY) * DAY + DAY / 2;
  const events = [
    ...Array.from({ length: oldDays }, (_, i) => ({ occurredAt: midday - (40 + i) * DAY, n: from + i })),
    ...Array.from({ length: recent }, (_, i) => ({ occurredAt: Date.now() - (i + 1) * 60_000, n: from + oldDays + i })),
  ];
  await recordEvents(env, { id: panel.id }, events.map((e) => ({ channel: "custom_activity" as const, name: "view", identity, params: { n: e.n }, occurredAt: e.occurredAt })));
  await pipelineSettled(panel.id);
  // As if each had been recorded when it happened, so the archive takes the old ones.
  await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();
}

/** The rows of the panel's archived days, every part. */
export async function archivedRows(panelId: string): Promise<Array<{ contact_id: number | null; identity: string | null }>> {
  const rows = [];
  for (const object of (await env.FILES.list({ prefix: `events/${panelId}/` })).objects) {
    const text = await gunzipText(await (await env.FILES.get(object.key))!.arrayBuffer());
    rows.push(...text.split("\n").filter(Boolean).map((line) => JSON.parse(line)));
  }
  return rows;
}

/**
 * After an erasure: every R2 object of every bucket and every row of every table of every D1
 * database bound in the test env whose text `names` recognises (an erased address or number).
 * Returns where each was found (`r2 FILES:key`, `d1 SHARD_1.table`); empty when nothing names it.
 * Bindings are found by their class (probing an RPC stub's members would call it), so a bucket
 * or database added later is searched too.
 */
export async function placesNaming(names: (text: string) => boolean): Promise<{ found: string[]; objects: number; rows: number }> {
  const found: string[] = [];
  let objects = 0;
  let rows = 0;
  for (const [binding, value] of Object.entries(env as unknown as Record<string, unknown>)) {
    const kind = value && typeof value === "object" ? Object.getPrototypeOf(value)?.constructor?.name : undefined;
    if (kind === "R2Bucket") {
      const bucket = value as R2Bucket;
      let cursor: string | undefined;
      do {
        const page = await bucket.list({ cursor });
        for (const listed of page.objects) {
          const bytes = await (await bucket.get(listed.key))!.arrayBuffer();
          const text = listed.key.endsWith(".gz") ? await gunzipText(bytes) : new TextDecoder().decode(bytes);
          if (names(text) || names(listed.key)) found.push(`r2 ${binding}:${listed.key}`);
          objects++;
        }
        cursor = page.truncated ? page.cursor : undefined;
      } while (cursor);
    } else if (kind === "D1Database") {
      const db = value as D1Database;
      const tables = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'").all<{ name: string }>();
      for (const { name } of tables.results) {
        const all = await db.prepare(`SELECT * FROM "${name}"`).all();
        rows += all.results.length;
        const naming = all.results.filter((row) => names(JSON.stringify(row)));
        if (naming.length) found.push(`d1 ${binding}.${name}: ${naming.length} row(s), e.g. ${JSON.stringify(naming[0]).slice(0, 300)}`);
      }
    }
  }
  return { found, objects, rows };
}
