// A journey's canvas layout through the admin API: stored and read back with the journey,
// checked like any input (each mistake named, nothing changed), kept apart from the
// definition: a running journey's boxes move without a new version.
import { describe, expect, it } from "vitest";
import { defineActivity } from "../support/activity";
import { admin, createPanel } from "../support/helpers";

async function setup() {
  const panel = await createPanel();
  await defineActivity(panel, "add_to_cart");
  const base = `/panels/${panel.id}/journeys`;
  const definition = {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      { id: "mail", type: "email", subject: "You left something", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      { id: "pause", type: "delay", after: "mail", for: "1h" },
    ],
  };
  return { panel, base, definition };
}

/** All a caller can read of a journey and what it changed: the journey, its versions, the audit log. */
async function everything(base: string, id: string, panelId: string) {
  const [journey, versions, audit] = await Promise.all([
    admin("GET", `${base}/${id}`),
    admin("GET", `${base}/${id}/versions`),
    admin("GET", `/panels/${panelId}/audit?limit=200`),
  ]);
  return JSON.stringify([journey.body, versions.body, audit.body]);
}

describe("a journey's layout", () => {
  it("is stored with the journey and read back by GET and the list; absent, it is null", async () => {
    const { base, definition } = await setup();
    const layout = { trigger: { x: -40, y: 0 }, steps: { mail: { x: 12.5, y: 180 }, pause: { x: 300, y: 410 } } };
    const created = await admin("POST", base, { ...definition, layout });
    expect(created.status).toBe(201);
    expect(created.body.layout).toEqual(layout);
    expect((await admin("GET", `${base}/${created.body.id}`)).body.layout).toEqual(layout);
    expect((await admin("GET", base)).body.journeys[0].layout).toEqual(layout);

    const bare = await admin("POST", base, definition);
    expect(bare.body.layout).toBeNull();
    expect((await admin("GET", `${base}/${bare.body.id}`)).body.layout).toBeNull();
    // Positions for some steps only: the canvas places the others.
    const partial = await admin("PUT", `${base}/${bare.body.id}`, { ...definition, layout: { steps: { pause: { x: 5, y: 6 } } } });
    expect(partial.body).toMatchObject({ version: 1, layout: { steps: { pause: { x: 5, y: 6 } } } });
    expect(partial.body.layout.trigger).toBeUndefined();
  });

  it("of a running journey changes alone without a new version; a new definition keeps the positions of the steps it still has", async () => {
    const { panel, base, definition } = await setup();
    const { id } = (await admin("POST", base, { ...definition, layout: { steps: { mail: { x: 0, y: 100 }, pause: { x: 0, y: 200 } } } })).body;
    expect((await admin("POST", `${base}/${id}/status`, { status: "running" })).status).toBe(200);

    const moved = { trigger: { x: 10, y: -20 }, steps: { mail: { x: 400, y: 100 }, pause: { x: 420, y: 260 } } };
    const saved = await admin("PUT", `${base}/${id}`, { ...definition, layout: moved });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ status: "running", version: 1, layout: moved });
    expect((await admin("GET", `${base}/${id}/versions`)).body.versions.map((v: any) => v.version)).toEqual([1]);
    const log = (await admin("GET", `/panels/${panel.id}/audit?action=journey.edited`)).body.entries;
    expect(log.map((e: any) => e.detail)).toEqual([{ name: "Cart reminder", version: 1, changed: "layout" }]);

    // The same definition and layout again: nothing to write, nothing to audit.
    const before = await everything(base, id, panel.id);
    expect((await admin("PUT", `${base}/${id}`, { ...definition, layout: moved })).body).toMatchObject({ version: 1, layout: moved });
    expect((await admin("PUT", `${base}/${id}`, definition)).body).toMatchObject({ version: 1, layout: moved });
    expect(await everything(base, id, panel.id)).toBe(before);

    // A real edit without a layout: a new version, and the removed step's position goes.
    const shorter = { ...definition, steps: [definition.steps[0]] };
    const edited = await admin("PUT", `${base}/${id}`, shorter);
    expect(edited.body).toMatchObject({ status: "running", version: 2, layout: { trigger: { x: 10, y: -20 }, steps: { mail: { x: 400, y: 100 } } } });
    expect(Object.keys(edited.body.layout.steps)).toEqual(["mail"]);
    // A real edit with one: both.
    const again = await admin("PUT", `${base}/${id}`, { ...definition, layout: { steps: { mail: { x: 1, y: 2 }, pause: { x: 3, y: 4 } } } });
    expect(again.body).toMatchObject({ version: 3, layout: { steps: { mail: { x: 1, y: 2 }, pause: { x: 3, y: 4 } } } });
    // The versions carry definitions only.
    expect((await admin("GET", `${base}/${id}/versions`)).body.versions[0].definition.layout).toBeUndefined();
  });

  it("names each mistake in its field and changes nothing, on create, on a draft's edit and on a running journey's layout", async () => {
    const { panel, base, definition } = await setup();
    const cases: Array<[unknown, string, RegExp]> = [
      [{ steps: { nope: { x: 1, y: 2 } } }, "layout.steps.nope", /names no step of the journey/],
      [{ steps: { mail: { x: "10", y: 2 } } }, "layout.steps.mail.x", /must be a number/],
      [{ steps: { mail: { x: 1, y: null } } }, "layout.steps.mail.y", /must be a number/],
      [{ steps: { mail: { x: 1e9, y: 2 } } }, "layout.steps.mail.x", /between -100000 and 100000/],
      [{ steps: { mail: { x: 1, y: -100001 } } }, "layout.steps.mail.y", /between -100000 and 100000/],
      [{ steps: { mail: { x: 1 } } }, "layout.steps.mail.y", /required/],
      [{ steps: { mail: { x: 1, y: 2, z: 3 } } }, "layout.steps.mail.z", /not an accepted member/],
      [{ steps: { mail: [1, 2] } }, "layout.steps.mail", /must be an object/],
      [{ trigger: { x: 1 } }, "layout.trigger.y", /required/],
      [{ steps: {}, zoom: 2 }, "layout.zoom", /not an accepted member/],
      [[{ id: "mail", x: 1, y: 2 }], "layout", /must be an object/],
    ];
    const refused = async (method: string, path: string, layout: unknown, field: string, message: RegExp) => {
      const answer = await admin(method, path, { ...definition, layout });
      expect(answer.status, `${method} ${field}`).toBe(400);
      const error = answer.body.errors.find((e: any) => e.field === field);
      expect(error, `${field} in ${JSON.stringify(answer.body.errors)}`).toBeDefined();
      expect(error.message).toMatch(message);
    };

    for (const [layout, field, message] of cases) await refused("POST", base, layout, field, message);
    expect((await admin("GET", base)).body.journeys).toEqual([]);

    const draft = (await admin("POST", base, { ...definition, layout: { steps: { mail: { x: 7, y: 8 } } } })).body.id;
    const running = (await admin("POST", base, definition)).body.id;
    await admin("POST", `${base}/${running}/status`, { status: "running" });
    await admin("PUT", `${base}/${running}`, { ...definition, layout: { steps: { pause: { x: 70, y: 80 } } } });
    for (const id of [draft, running]) {
      const before = await everything(base, id, panel.id);
      for (const [layout, field, message] of cases) await refused("PUT", `${base}/${id}`, layout, field, message);
      // With a changed definition too: the layout names a step the new definition dropped.
      const answer = await admin("PUT", `${base}/${id}`, { ...definition, steps: [definition.steps[0]], layout: { steps: { pause: { x: 1, y: 1 } } } });
      expect(answer.status).toBe(400);
      expect(answer.body.errors).toContainEqual({ field: "layout.steps.pause", message: expect.stringMatching(/names no step/) });
      expect(await everything(base, id, panel.id)).toBe(before);
    }
  });

  it("of a stopped journey cannot change either", async () => {
    const { panel, base, definition } = await setup();
    const { id } = (await admin("POST", base, definition)).body;
    await admin("POST", `${base}/${id}/status`, { status: "stopped" });
    const before = await everything(base, id, panel.id);
    const refused = await admin("PUT", `${base}/${id}`, { ...definition, layout: { steps: { mail: { x: 1, y: 2 } } } });
    expect(refused.status).toBe(409);
    expect(refused.body.errors).toEqual([{ field: "status", message: "is stopped" }]);
    expect(await everything(base, id, panel.id)).toBe(before);
  });
});
