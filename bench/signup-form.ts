// A signup form as bench:forms and bench:profile (PROFILE=forms) submit it: Turnstile on, its
// siteverify answered by a loopback stand-in, one list joined, single opt-in.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { adminCall, type createBenchPanel } from "./lib.ts";

type BenchPanel = Awaited<ReturnType<typeof createBenchPanel>>;

export const SITE_ORIGIN = "https://shop.example";

/** Turnstile's stand-in: siteverify passes every answer, as Cloudflare's does a real visitor's. */
export async function startSiteverify(): Promise<{ url: string; verifications(): number; close(): void }> {
  let verifications = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      verifications++;
      response.writeHead(200, { "content-type": "application/json" }).end('{"success":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/turnstile/v0/siteverify`,
    verifications: () => verifications,
    close: () => server.close(),
  };
}

/** Makes the panel's form (a NAME attribute, a list, the Turnstile secret) and answers a submitter of visitor `i`. */
export async function createBenchForm(origin: string, panel: BenchPanel, turnstile: boolean): Promise<(i: number) => Promise<Response>> {
  await adminCall(origin, "PUT", `/panels/${panel.id}/attributes/NAME`, { type: "string" });
  const list = await adminCall(origin, "POST", `/panels/${panel.id}/lists`, { name: "Newsletter" });
  await adminCall(origin, "PUT", `/panels/${panel.id}/form-settings`, { turnstile_secret: "bench-turnstile-secret" });
  const form = await adminCall(origin, "POST", `/panels/${panel.id}/forms`, {
    name: "Newsletter",
    fields: [{ attribute: "EMAIL" }, { attribute: "NAME" }],
    lists: [list.id],
    consent_text: "Yes, send me the newsletter.",
    allowed_origins: [SITE_ORIGIN],
    double_opt_in: false,
    turnstile_site_key: turnstile ? "0x4AAAAAAAbenchsite" : null,
  });
  // Every submission comes from an address and a client IP of its own: the per-IP and
  // per-address limits are looked up and recorded for each, as for real visitors, but never
  // reached. The IP is the cf-connecting-ip header the service reads (Cloudflare's edge sets it).
  return (i) =>
    fetch(`${origin}/f/${form.id}.json`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        origin: SITE_ORIGIN,
        "user-agent": "Mozilla/5.0 (bench)",
        // A visitor address of its own: 10.x.y.z covers 16 million submissions.
        "cf-connecting-ip": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      },
      body: JSON.stringify({ EMAIL: `visitor${i}@example.com`, NAME: `Visitor ${i}`, "cf-turnstile-response": `answer-${i}` }),
    });
}
