import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, admin, call, createPanel } from "../support/helpers";

const asAdmin = (method: string, path: string) => call(`/admin/v1${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

describe("admin API: a method its path does not take", () => {
  it("HEAD reads as GET: the status and headers of the GET, for a panel there and one not", async () => {
    const panel = await createPanel();
    await admin("POST", `/panels/${panel.id}/lists`, { name: "Newsletter" });

    const head = await asAdmin("HEAD", `/panels/${panel.id}/lists`);
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toContain("application/json");
    await head.body?.cancel();
    const missing = await asAdmin("HEAD", "/panels/pnl_nosuchpanel000/lists");
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
    const csv = await asAdmin("HEAD", `/panels/${panel.id}/consent.csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    await csv.body?.cancel();
  });

  it("another method on a known path is 405 naming the methods it takes; OPTIONS names them; an unknown path stays 404", async () => {
    const panel = await createPanel();

    const put = await admin("PUT", `/panels/${panel.id}/lists`, { name: "x" });
    expect(put.status).toBe(405);
    expect(put.body.error).toBe(`method: /admin/v1/panels/${panel.id}/lists takes GET, POST, HEAD, OPTIONS, not PUT`);
    const raw = await asAdmin("DELETE", `/panels/${panel.id}/overview`);
    expect(raw.status).toBe(405);
    expect(raw.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
    await raw.body?.cancel();
    // Nothing was written by the refused PUT.
    expect((await admin("GET", `/panels/${panel.id}/lists`)).body).toMatchObject({ lists: [] });

    // A trailing slash routes, as itty-router takes it.
    const slashed = await asAdmin("DELETE", `/panels/${panel.id}/overview/`);
    expect(slashed.status).toBe(405);
    await slashed.body?.cancel();

    const options = await asAdmin("OPTIONS", `/panels/${panel.id}/lists`);
    expect(options.status).toBe(204);
    expect(options.headers.get("allow")).toBe("GET, POST, HEAD, OPTIONS");

    const unknown = await admin("GET", `/panels/${panel.id}/no-such-thing`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe(`No admin route GET /admin/v1/panels/${panel.id}/no-such-thing`);
  });

  it("still asks who is calling first", async () => {
    const panel = await createPanel();
    const response = await call(`/admin/v1/panels/${panel.id}/lists`, { method: "PUT" });
    expect(response.status).toBe(401);
    await response.body?.cancel();
  });
});
