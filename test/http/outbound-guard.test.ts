import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { broadcastData } from "../support/broadcasts";
import { publishTxt } from "../support/dns";
import { BASE, createPanel, fetchWith, panelSnapshot, STRICT } from "../support/helpers";

/** The Worker as deployed: private fetches off. */
async function strictCall(path: string, init: RequestInit) {
  const response = await fetchWith(STRICT, new Request(`${BASE}${path}`, init));
  return { status: response.status, body: (await response.json()) as any };
}

// Every form the issue found passing the guard; each would reach this machine's loopback.
const HOSTS = ["receiver", "localhost.", "[::127.0.0.1]", "[64:ff9b::7f00:1]", "[fec0::1]", "198.18.0.1", "127.0.0.1.", "[::ffff:7f00:1]"];

describe("with private fetches off, every caller-given URL refuses hosts outside the public internet", () => {
  it.each(HOSTS)("%s", async (host) => {
    const panel = await createPanel();
    const before = await panelSnapshot(panel.id);
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const bulk = `/apiv2?type=contact&activity=bulkupload&apikey=${panel.apiKey}`;
    const path = await strictCall(bulk, { method: "POST", headers: form, body: new URLSearchParams({ path: `http://${host}/a.csv` }) });
    expect(path.status).toBe(400);
    expect(path.body.errors[0].field).toBe("path");
    const callback = await strictCall(bulk, {
      method: "POST",
      headers: form,
      body: new URLSearchParams({ path: "https://files.example.com/a.csv", callback: `http://${host}/done` }),
    });
    expect(callback.status).toBe(400);
    expect(callback.body.errors[0].field).toBe("callback");

    const publish = `/apiv2?type=email_broadcast&activity=upload_contact_and_publish&apikey=${panel.apiKey}`;
    for (const member of ["contacts_upload_source", "source_file"]) {
      const url = member === "source_file" ? `http://${host}/body.html` : `http://${host}/contacts.csv`;
      const data = await broadcastData({ contacts_upload_source: "https://files.example.com/contacts.csv", source_code: undefined, source_file: "https://files.example.com/body.html", [member]: url });
      const answer = await strictCall(publish, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(data) });
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ success: false, message: expect.stringContaining(`data.${member}: must`) });
    }

    const webhook = await strictCall(`/admin/v1/panels/${panel.id}/webhooks`, {
      method: "POST",
      headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
      body: JSON.stringify({ label: "L", url: `http://${host}/hook` }),
    });
    expect(webhook.status).toBe(400);
    expect(webhook.body.errors[0].field).toBe("url");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});

describe("with private fetches off, a name that resolves to this machine is refused before any connection", () => {
  it("refuses contacts_upload_source and source_file without a byte of the listener's answer", async () => {
    const panel = await createPanel();
    const bucket = `ssrf-${crypto.randomUUID()}`;
    // The listener would answer with this, as an internal service would; none of it may come back.
    await fetch(`${env.RECEIVER_URL}/__script/${bucket}`, { method: "POST", body: JSON.stringify([{ status: 200, body: "listener,secret\n1,2\n" }]) });
    const host = `internal-${crypto.randomUUID().slice(0, 8)}.example.com`;
    await publishTxt({ [`${host} A`]: ["127.0.0.1"] });
    const inside = `http://${host}:${new URL(env.RECEIVER_URL).port}/hooks/${bucket}`;

    const publish = `/apiv2?type=email_broadcast&activity=upload_contact_and_publish&apikey=${panel.apiKey}`;
    // The contact file alone, then with the HTML body at the same name (whichever download runs first is refused).
    for (const data of [
      await broadcastData({ contacts_upload_source: `${inside}/contacts.csv` }),
      await broadcastData({ contacts_upload_source: `${inside}/contacts.csv`, source_code: undefined, source_file: `${inside}/body.html` }),
    ]) {
      const answer = await strictCall(publish, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(data) });
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain("resolves to a private, loopback or special-use address");
      expect(JSON.stringify(answer.body)).not.toContain("listener");
    }

    // Webhook deliveries run in the dispatcher Durable Object with the deployment's env; they
    // fetch through the same fetchOutbound (test/lib/outbound.test.ts covers it there).
    const received = await fetch(`${env.RECEIVER_URL}/__requests/${bucket}`);
    expect(await received.json()).toEqual([]);
  });
});
