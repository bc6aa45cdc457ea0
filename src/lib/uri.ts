/**
 * Percent-decodes a path segment; a malformed escape is kept as written (and so, looked up,
 * is simply not found) instead of throwing a URIError that would surface as a 500.
 */
export function decodeOrKeep(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
