/**
 * The GET a HEAD request stands for (the same URL and headers): routed where no route of its
 * own takes the HEAD, as HTTP asks; workerd drops the body of the answer to a HEAD.
 */
export function getOfHead(request: Request): Request {
  return new Request(request.url, { method: "GET", headers: request.headers });
}
