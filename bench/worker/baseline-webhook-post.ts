// Baseline for bench:webhooks: one batch posted to the receiver exactly as a webhook delivery
// is (form-encoded `data` of {"<panel>": [events]}), with no storage, batching or retry.
export async function baselineWebhookPost(request: Request): Promise<Response> {
  const { url, key, events } = (await request.json()) as { url: string; key: string; events: unknown[] };
  const body = `data=${encodeURIComponent(JSON.stringify({ [key]: events }))}`;
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
  await response.arrayBuffer();
  return new Response(String(response.status), { status: response.ok ? 200 : 502 });
}
