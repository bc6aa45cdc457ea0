import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { mirrorResyncTask } from "../../src/services/panels/mirror-resync";
import type { ShardDb } from "../../src/store/shards";
import { admin, apiFor, createPanel, panelData, TEST_SHARD } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";
import { defineActivity, postActivity } from "../support/activity";
import { createWebhook, startJourney } from "../support/journeys";
import { keyOn, membersOn, settledOnBoth, shard0, TWO } from "../support/partitions";

// A mirror's resync (decision 0041): mirror writes are not atomic with the home's, so a failed
// one leaves the mirror behind; POST /panels/{panel}/partitions/resync copies the home's lists,
// attributes and topics onto every mirror again. SHARD_0 is the mirror here, TEST_SHARD the home.

/** What `db` holds of the panel's configuration, as comparable text. */
async function configurationOn(db: ShardDb, panelId: string) {
  const rows = async (sql: string) => (await db.prepare(sql).bind(panelId).all<{ r: string }>()).results.map((r) => r.r);
  return {
    lists: await rows("SELECT id || ' ' || name || ' ' || name_key || ' ' || description AS r FROM lists WHERE panel_id = ? AND deleted_at IS NULL ORDER BY id"),
    attributes: await rows("SELECT name || ' ' || type AS r FROM attributes WHERE panel_id = ? ORDER BY name"),
    topics: await rows("SELECT id || ' ' || name || ' ' || description AS r FROM topics WHERE panel_id = ? ORDER BY id"),
  };
}

describe("resyncing a panel's mirrors", () => {
  it("repairs a mirror that missed writes: lists, attributes and topics back as the home has them, member counts unchanged", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await admin("PUT", `/panels/${panel.id}/attributes/NAME`, { type: "string" })).status).toBe(200);
    const list = async (name: string) => (await admin("POST", `/panels/${panel.id}/lists`, { name, description: `${name} list` })).body.id as number;
    const [readers, buyers, dogs, old] = [await list("Readers"), await list("Buyers"), await list("Dogs"), await list("Old")];
    const topic = async (name: string) => (await admin("POST", `/panels/${panel.id}/topics`, { name })).body.id as string;
    const [news, offers] = [await topic("News"), await topic("Offers")];
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const [there, here] = [keyOn(panel.id, 0), keyOn(panel.id, TEST_SHARD)];
    for (const key of [there, here]) expect((await api("contact", "add", { data: { EMAIL: key, NAME: "Ada" }, listid: String(readers) })).status).toBe(200);
    const counts = async () => Object.fromEntries(((await admin("GET", `/panels/${panel.id}/lists`)).body.lists as Array<{ name: string; count: number }>).map((l) => [l.name, l.count]));
    expect((await admin("DELETE", `/panels/${panel.id}/lists/${old}`)).status).toBe(200);
    const home = await configurationOn(panelData, panel.id);
    expect(await configurationOn(shard0, panel.id)).toEqual(home);
    const before = await counts();
    expect(before).toEqual({ Readers: 2, Buyers: 0, Dogs: 0 });

    // The mirror misses writes: a list's row, two renames (the lists swapped names), an attribute, a topic; it kept a list and a
    // topic the home deleted, with a member and an opt-out there.
    const contactThere = (await shard0.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, there).first<{ id: number }>())!.id;
    await shard0.batch([
      shard0.prepare("DELETE FROM lists WHERE panel_id = ? AND id = ?").bind(panel.id, buyers),
      shard0.prepare("UPDATE lists SET name = 'Swap', name_key = 'swap' WHERE panel_id = ? AND id = ?").bind(panel.id, readers),
      shard0.prepare("UPDATE lists SET name = 'Readers', name_key = 'readers' WHERE panel_id = ? AND id = ?").bind(panel.id, dogs),
      shard0.prepare("UPDATE lists SET name = 'Dogs', name_key = 'dogs' WHERE panel_id = ? AND id = ?").bind(panel.id, readers),
      shard0.prepare("DELETE FROM attributes WHERE panel_id = ? AND name = 'NAME'").bind(panel.id),
      shard0.prepare("DELETE FROM topics WHERE panel_id = ? AND id = ?").bind(panel.id, news),
      shard0.prepare("INSERT INTO lists (panel_id, id, name, name_key, description, created_at, updated_at) VALUES (?, ?, 'Old', 'old', '', 0, 0)").bind(panel.id, old),
      shard0.prepare("INSERT INTO list_members (list_id, contact_id, panel_id, added_at) VALUES (?, ?, ?, 0)").bind(old, contactThere, panel.id),
      shard0.prepare("INSERT INTO topics (panel_id, id, name, description, created_at, updated_at) VALUES (?, 'gone', 'Gone', '', 0, 0)").bind(panel.id),
      shard0.prepare("INSERT INTO topic_optouts (panel_id, contact_id, topic_id, created_at) VALUES (?, ?, 'gone', 0)").bind(panel.id, contactThere),
    ]);
    expect(await configurationOn(shard0, panel.id)).not.toEqual(home);

    // An owner does not lay out partitions: the deployment's operator (admin token) does.
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "POST", `/panels/${panel.id}/partitions/resync`)).status).toBe(403);
    const resync = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect(resync.status, JSON.stringify(resync.body)).toBe(200);
    expect(resync.body).toEqual({ mirrors: [{ shard: 0, lists_repaired: 3, lists_removed: 1, attributes_added: 1, topics_repaired: 1, topics_removed: 1, segments_repaired: 0, segments_removed: 0, journeys_repaired: 0 }] });

    expect(await configurationOn(shard0, panel.id)).toEqual(home);
    expect(await configurationOn(panelData, panel.id)).toEqual(home);
    // The list the home deleted goes from the mirror with its member there; the topic with its opt-out.
    expect(await membersOn(shard0, panel.id)).toEqual([`${there} in ${readers}`]);
    expect((await shard0.prepare("SELECT COUNT(*) AS n FROM topic_optouts WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n).toBe(0);
    expect(await counts()).toEqual(before);
    expect(offers).toBeTruthy();

    // The restored list takes the mirror's contacts again; a second resync finds nothing behind.
    expect((await api("contact", "add", { data: { EMAIL: keyOn(panel.id, 0, 1) }, listid: String(buyers) })).status).toBe(200);
    expect(await counts()).toEqual({ Readers: 2, Buyers: 1, Dogs: 0 });
    expect((await admin("POST", `/panels/${panel.id}/partitions/resync`)).body).toEqual({ mirrors: [{ shard: 0, lists_repaired: 0, lists_removed: 0, attributes_added: 0, topics_repaired: 0, topics_removed: 0, segments_repaired: 0, segments_removed: 0, journeys_repaired: 0 }] });
  });

  it("repairs saved segments: one missing, one at an older version, one the home deleted; never takes a newer one back; keeps the others' counts", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const save = async (name: string, value: string) => {
      const saved = await admin("POST", `/panels/${panel.id}/segments`, { name, match: { all: [{ attribute: "CITY", op: "eq", value }] } });
      expect(saved.status, JSON.stringify(saved.body)).toBe(201);
      return saved.body.id as string;
    };
    const [pune, goa, delhi] = [await save("Pune", "Pune"), await save("Goa", "Goa"), await save("Delhi", "Delhi")];
    const segmentsOn = async (db: ShardDb) =>
      (await db.prepare("SELECT id || ' ' || name || ' v' || version AS r FROM segments WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ r: string }>()).results.map((r) => r.r);
    const countOn = async (db: ShardDb, id: string) => (await db.prepare("SELECT n FROM panel_counts WHERE panel_id = ? AND subject = ?").bind(panel.id, id).first<{ n: number | null }>())?.n;
    expect(await segmentsOn(shard0)).toEqual(await segmentsOn(panelData));

    // Saving one segment leaves the others' stored counts on the mirror alone.
    await shard0.prepare("INSERT OR REPLACE INTO panel_counts (panel_id, subject, n, counted_at) VALUES (?, ?, 5, 1)").bind(panel.id, delhi).run();
    expect((await admin("PUT", `/panels/${panel.id}/segments/${goa}`, { name: "Goa beaches", match: { all: [{ attribute: "CITY", op: "eq", value: "Goa" }] } })).status).toBe(200);
    expect(await countOn(shard0, delhi)).toBe(5);

    // The mirror misses writes: Pune's row, Goa's last version; it keeps one the home deleted.
    const homeNow = await segmentsOn(panelData);
    await shard0.batch([
      shard0.prepare("DELETE FROM segments WHERE id = ?").bind(pune),
      shard0.prepare("UPDATE segments SET version = version - 1, name = 'Goa' WHERE id = ?").bind(goa),
      shard0.prepare("INSERT INTO segments (id, panel_id, name, definition, version, checked_at, created_at, updated_at) VALUES ('seg_gone', ?, 'Gone', '{}', 1, 0, 0, 0)").bind(panel.id),
    ]);
    const resync = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect(resync.body).toEqual({ mirrors: [{ shard: 0, lists_repaired: 0, lists_removed: 0, attributes_added: 0, topics_repaired: 0, topics_removed: 0, segments_repaired: 2, segments_removed: 1, journeys_repaired: 0 }] });
    expect(await segmentsOn(shard0)).toEqual(homeNow);
    expect(await countOn(shard0, delhi)).toBe(5);

    // A mirror already at a newer version (an edit that landed after the resync read the home) is not taken back.
    await shard0.prepare("UPDATE segments SET version = version + 1, name = 'Delhi NCR' WHERE id = ?").bind(delhi).run();
    const again = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect(again.body.mirrors[0]).toMatchObject({ segments_repaired: 0, segments_removed: 0 });
    expect(await segmentsOn(shard0)).toContain(`${delhi} Delhi NCR v2`);
  });

  it("repairs journeys: a copy that missed a stop ends its instances there, a missing copy comes back; run again, nothing to repair", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const steps = [
      { id: "hello", type: "webhook", webhook: hook.id },
      { id: "pause", type: "delay", for: "1h", after: "hello" },
    ];
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const stopped = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps });
    expect((await postActivity(panel.clientId, { activityid: cart, identity: keyOn(panel.id, 0) })).status).toBe(200);
    await settledOnBoth(panel.id);
    const missing = await startJourney(panel, { name: "Second", trigger: { type: "activity", activity: "add_to_cart" }, steps });
    const instancesOn = async (journeyId: string) =>
      (await shard0.prepare("SELECT status FROM journey_instances WHERE journey_id = ?").bind(journeyId).all<{ status: string }>()).results.map((r) => r.status);
    expect(await instancesOn(stopped.id)).toEqual(["active"]);

    // The home took a stop its mirror missed; the mirror lost the second journey's copy.
    await panelData.prepare("UPDATE journeys SET status = 'stopped', updated_at = ? WHERE id = ?").bind(Date.now(), stopped.id).run();
    await shard0.batch([
      shard0.prepare("DELETE FROM journey_versions WHERE journey_id = ?").bind(missing.id),
      shard0.prepare("DELETE FROM journeys WHERE id = ?").bind(missing.id),
    ]);

    const resync = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect(resync.status).toBe(200);
    expect(resync.body.mirrors).toEqual([expect.objectContaining({ shard: 0, journeys_repaired: 2 })]);
    expect(await shard0.prepare("SELECT status FROM journeys WHERE id = ?").bind(stopped.id).first<string>("status")).toBe("stopped");
    expect(await instancesOn(stopped.id)).toEqual(["exited"]);
    expect(await shard0.prepare("SELECT status || ' v' || version AS s FROM journeys WHERE id = ?").bind(missing.id).first<string>("s")).toBe("running v1");

    const again = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect(again.body.mirrors).toEqual([expect.objectContaining({ journeys_repaired: 0 })]);
  });

  it("answers no mirrors for a panel without a map, and changes nothing", async () => {
    const panel = await createPanel();
    await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" });
    const resync = await admin("POST", `/panels/${panel.id}/partitions/resync`);
    expect([resync.status, resync.body]).toEqual([200, { mirrors: [] }]);
    expect((await configurationOn(shard0, panel.id)).lists).toEqual([]);
  });

  it("the cron's task resyncs one mirrored panel of its shard a minute, each in turn", async () => {
    const panel = await createPanel();
    const readers = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    await shard0.prepare("DELETE FROM lists WHERE panel_id = ? AND id = ?").bind(panel.id, readers).run();
    expect((await configurationOn(shard0, panel.id)).lists).toEqual([]);
    const mirrored = (await env.DB.prepare("SELECT COUNT(DISTINCT panel_id) AS n FROM panel_partitions WHERE shard <> ?").bind(TEST_SHARD).first<{ n: number }>())!.n;
    for (let minute = 0; minute < mirrored; minute++) await mirrorResyncTask.shard!(env, TEST_SHARD, minute * 60_000);
    expect(await configurationOn(shard0, panel.id)).toEqual(await configurationOn(panelData, panel.id));
    expect((await configurationOn(shard0, panel.id)).lists).toHaveLength(1);
  });
});
