import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { runCron } from "../support/cron";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { admin, apiFor, createPanel } from "../support/helpers";

// Two shards locally (wrangler.toml: SHARD_0, SHARD_1); this file has its own storage.

const shard = (n: number) => (n === 0 ? env.SHARD_0 : env.SHARD_1);

/** Panel tables of a shard whose queries then fail ("no such table"), as a shard that is down. */
const BROKEN = ["contacts", "lists", "events", "event_batches", "attributes", "activities", "import_jobs"];

async function breakShard(n: number): Promise<void> {
  await shard(n).batch(BROKEN.map((t) => shard(n).prepare(`ALTER TABLE ${t} RENAME TO broken_${t}`)));
}

async function mendShard(n: number): Promise<void> {
  await shard(n).batch(BROKEN.map((t) => shard(n).prepare(`ALTER TABLE broken_${t} RENAME TO ${t}`)));
}

let broken: number | null = null;
afterEach(async () => {
  if (broken !== null) await mendShard(broken);
  broken = null;
});

async function contactCount(n: number, panelId: string): Promise<number> {
  return (await shard(n).prepare("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ?").bind(panelId).first<{ n: number }>())!.n;
}

describe("panels on shards", () => {
  it("keeps each panel's data on the shard the directory names, and nowhere else", async () => {
    const a = await createPanel({ shard: 0 });
    const b = await createPanel({ shard: 1 });
    expect((await admin("GET", `/panels/${a.id}`)).body.shard).toBe(0);
    expect((await admin("GET", `/panels/${b.id}`)).body.shard).toBe(1);
    await apiFor(a)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    await apiFor(b)("contact", "add", { data: { EMAIL: "bob@example.com" } });
    expect([await contactCount(0, a.id), await contactCount(1, a.id)]).toEqual([1, 0]);
    expect([await contactCount(0, b.id), await contactCount(1, b.id)]).toEqual([0, 1]);
    // The control database holds the directory and keys, no contact.
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM contacts").first<{ n: number }>())!.n).toBe(0);
  });

  it("places a new panel on the shard with the least data", async () => {
    const big = await createPanel({ shard: 0 });
    await env.SHARD_0.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
       INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
       SELECT ?, 'filler' || i || '@example.com', json_object('EMAIL', 'filler' || i || '@example.com', 'NAME', printf('%.200c', 'x')), 0, 0 FROM n`,
    )
      .bind(big.id)
      .run();
    const placed = await admin("POST", "/panels", { name: "Placed" });
    expect(placed.status).toBe(201);
    expect(placed.body.shard).toBe(1);
    expect((await admin("POST", "/panels", { name: "Nowhere", shard: 7 })).body).toMatchObject({ errors: [{ field: "shard" }] });
  });

  it("serves a panel whose shard works while the other shard fails every query", async () => {
    const healthy = await createPanel({ shard: 0 });
    const unlucky = await createPanel({ shard: 1 });
    const activity = await defineActivity(healthy, "cart");
    await apiFor(unlucky)("contact", "add", { data: { EMAIL: "before@example.com" } });

    await breakShard(1);
    broken = 1;
    const api = apiFor(healthy);
    expect((await api("contact", "add", { data: { EMAIL: "ada@example.com" } })).body.result).toBe("Success");
    expect((await api("lists", "add", { listname: "Fans" })).body.result).toBe("Success");
    expect((await api("contact", "view", { data: { EMAIL: "ada@example.com" } })).body.result).toBe("Success");
    expect((await postActivity(healthy.clientId, { activityid: activity, identity: "ada@example.com", activity_source: "web" })).status).toBe(200);
    expect((await admin("GET", `/panels/${healthy.id}/contacts`)).status).toBe(200);
    // The cron walks every shard; the failing one does not stop the others' sweeps.
    await runCron(Date.now());
    const history = await eventually(async () => {
      const events = await admin("GET", `/panels/${healthy.id}/contacts/ada%40example.com/events`);
      return events.body.events?.length ? events : undefined;
    });
    expect(history.status).toBe(200);

    // The other panel's calls fail as a fault of the service, and change nothing of the healthy panel.
    const failed = await apiFor(unlucky)("contact", "add", { data: { EMAIL: "bob@example.com" } });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await contactCount(0, healthy.id)).toBe(1);

    await mendShard(1);
    broken = null;
    expect((await apiFor(unlucky)("contact", "add", { data: { EMAIL: "bob@example.com" } })).body.result).toBe("Success");
  });

});
