/** Gzip of UTF-8 text, through the runtime's CompressionStream. */
export async function gzipText(text: string): Promise<Uint8Array> {
  const stream = new Response(text).body!.pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The UTF-8 text a gzip holds. */
export async function gunzipText(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const stream = new Response(bytes).body!.pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}
