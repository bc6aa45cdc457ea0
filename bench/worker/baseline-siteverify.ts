// Baseline for bench:forms: one bare call of Turnstile's siteverify (the loopback stand-in at
// `?url=`), as a form with Turnstile on makes for each submission and nothing else. Locally the
// call runs on workerd's thread (Miniflare's outbound worker and the socket), where deployed it
// is a network wait: bench:forms prints submissions against a contact add and this call together.
export async function baselineSiteverify(request: Request): Promise<Response> {
  const url = new URL(request.url).searchParams.get("url")!;
  const body = new URLSearchParams({ secret: "bench-turnstile-secret", response: crypto.randomUUID(), remoteip: "10.0.0.1" });
  const response = await fetch(url, { method: "POST", body });
  const verdict = (await response.json()) as { success?: unknown };
  return new Response(verdict.success === true ? "passed" : "refused", { status: response.ok ? 200 : 502 });
}
