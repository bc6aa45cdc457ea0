import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { contactEvents, defineActivity, postActivity } from "../support/activity";
import { createPanel } from "../support/helpers";

// Migration 0020 on a database as it was before it: activity ids from one counter for every
// panel. Existing ids keep working; new activities are numbered per panel.

async function runMigration(name: string) {
  const migration = env.TEST_MIGRATIONS.find((m) => m.name === name);
  if (!migration) throw new Error(`no migration ${name}`);
  await env.DB.batch(migration.queries.map((sql) => env.DB.prepare(sql)));
}

describe("migration 0020: activity ids per panel", () => {
  it("keeps every existing id; a panel's next activity takes the id after its highest; a new panel starts at 1", async () => {
    const a = await createPanel();
    const b = await createPanel();
    // The tables as they were before 0020 (this test file has its own storage).
    await env.DB.batch([
      env.DB.prepare("DROP TABLE activities"),
      env.DB.prepare(
        `CREATE TABLE activities (id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL REFERENCES panels(id), name TEXT NOT NULL,
           name_key TEXT NOT NULL, params TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL, UNIQUE (panel_id, name_key))`,
      ),
      env.DB.prepare("ALTER TABLE events DROP COLUMN asset_id"),
      env.DB.prepare(`INSERT INTO activities (id, panel_id, name, name_key, params, created_at) VALUES (57, ?1, 'view', 'view', '{"prid":"integer"}', 1), (58, ?2, 'view', 'view', '{}', 1), (59, ?1, 'cart', 'cart', '{}', 1)`).bind(a.id, b.id),
    ]);
    await runMigration("0020_activity_upload.sql");

    const posted = await postActivity(a.clientId, { activityid: "57", identity: "ada@example.com", activity_params: { "i^prid": 3 } });
    expect(posted.status).toBe(200);
    expect((await contactEvents(a, "ada@example.com")).body.events[0]).toMatchObject({ activityid: "57", name: "view", asset_id: null });
    expect(await defineActivity(a, "buy")).toBe("60");
    expect(await defineActivity(b, "buy")).toBe("59");
    expect(await defineActivity(await createPanel(), "buy")).toBe("1");
  });
});
