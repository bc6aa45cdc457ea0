/**
 * The security headers of every answer (issue 44): nothing of this origin may be framed, no
 * answer is sniffed into another type, and pages run only the panel's own script files.
 *
 * The Worker sets them on everything it answers (routeRequest), the panel's HTML included
 * (it passes through the Worker: wrangler.toml's run_worker_first). The panel's hashed files
 * under /assets/* never reach the Worker; the asset server gives them the `_headers` file that
 * the panel's build writes from `staticAssetHeaders()` below, so both read one policy.
 */

/**
 * The panel: its own script and style files only, no inline script. Two allowances are for the
 * campaign previews, sandboxed `srcdoc` iframes (no script runs in them) that inherit this
 * policy: email HTML is styled inline and shows images from the sender's hosts, so styles may
 * be inline and images come from anywhere over http(s). The panel's own markup is rendered by
 * React, which escapes text, so no outside markup can bring a style of its own.
 */
export const PANEL_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https: http:",
  "font-src 'self' data: https:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * Pages of links in email (/t/*: unsubscribe, preferences) and SMS short links (/s/*): no
 * script and no outside resource at all; forms post back to the page. The one allowance is
 * inline style (the pages' `<style>` block and a `style` attribute): with nothing else
 * loadable, a style cannot fetch or send anything, and every value written into these pages
 * is escaped.
 */
export const LINK_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * The signup forms' pages (/f/*, issue 45): the link pages' policy, plus Cloudflare Turnstile's
 * script and frame where the form turns it on, and the form's redirect after success as a
 * place the form may lead (browsers hold a form's POST, and its redirect, to form-action).
 * Each page states its own (formPageCsp); this is the policy of one that states none.
 */
export function formPageCsp(options: { turnstileOrigin?: string; redirectOrigin?: string } = {}): string {
  const turnstile = options.turnstileOrigin ? `; script-src ${options.turnstileOrigin}; frame-src ${options.turnstileOrigin}` : "";
  const formAction = options.redirectOrigin ? `'self' ${options.redirectOrigin}` : "'self'";
  return `default-src 'none'; style-src 'unsafe-inline'${turnstile}; form-action ${formAction}; base-uri 'none'; frame-ancestors 'none'`;
}

/** JSON, CSV and the rest: nothing to run or load, and never framed. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";

type HeaderSet = Readonly<Record<string, string>>;

const NEVER_FRAMED_OR_SNIFFED = { "x-content-type-options": "nosniff", "x-frame-options": "DENY" };

export const PANEL_HEADERS: HeaderSet = {
  ...NEVER_FRAMED_OR_SNIFFED,
  "content-security-policy": PANEL_CSP,
  // Other sites see the origin only: the panel's paths (a reset link's token) stay here.
  "referrer-policy": "strict-origin-when-cross-origin",
};

// A link's token is in its URL: the site a click redirects to, or a page links to, never sees it.
export const LINK_PAGE_HEADERS: HeaderSet = { ...NEVER_FRAMED_OR_SNIFFED, "content-security-policy": LINK_PAGE_CSP, "referrer-policy": "no-referrer" };

// A form page posts to itself: `same-origin` keeps its Origin header (no-referrer would send
// `null`, which the form's origin check cannot tell from a hostile page), and tells other sites nothing.
export const FORM_PAGE_HEADERS: HeaderSet = { ...NEVER_FRAMED_OR_SNIFFED, "content-security-policy": formPageCsp(), "referrer-policy": "same-origin" };

export const API_HEADERS: HeaderSet = { ...NEVER_FRAMED_OR_SNIFFED, "content-security-policy": API_CSP, "referrer-policy": "no-referrer" };

/** The panel's hashed files (Vite names them by their content): cached for a year, never revalidated. */
export const HASHED_ASSET_CACHE = "public, max-age=31536000, immutable";

const LINK_PATH = /^\/(t|s)\//i;
const FORM_PATH = /^\/f\//i;

const isHtml = (contentType: string | null) => (contentType ?? "").toLowerCase().startsWith("text/html");

/** Which set an answer of the Worker gets: link and form pages by path, the panel by being HTML, the rest as an API. */
export function securityHeadersFor(path: string, contentType: string | null): HeaderSet {
  if (LINK_PATH.test(path)) return LINK_PAGE_HEADERS;
  if (FORM_PATH.test(path) && isHtml(contentType)) return FORM_PAGE_HEADERS;
  return isHtml(contentType) ? PANEL_HEADERS : API_HEADERS;
}

// Each set's entries listed once per isolate, not on every answer.
const ENTRIES = new Map<HeaderSet, ReadonlyArray<readonly [string, string]>>(
  [PANEL_HEADERS, LINK_PAGE_HEADERS, FORM_PAGE_HEADERS, API_HEADERS].map((set) => [set, Object.entries(set)]),
);
const entriesOf = (set: HeaderSet) => ENTRIES.get(set) ?? Object.entries(set);
const FORM_PAGE_HEADERS_BUT_POLICY = entriesOf(FORM_PAGE_HEADERS).filter(([name]) => name !== "content-security-policy");

/**
 * The answer with its security headers: set in place on the Worker's own answers (a copy of
 * every answer cost each API call an allocation on its hot path), on a copy where the headers
 * cannot be changed (an answer of the asset server, or any fetch).
 */
export function withSecurityHeaders(path: string, response: Response): Response {
  const set = securityHeadersFor(path, response.headers.get("content-type"));
  // A form page that states its own policy (its Turnstile, its redirect) keeps it.
  const ownPolicy = set === FORM_PAGE_HEADERS && response.headers.has("content-security-policy");
  const headers = ownPolicy ? FORM_PAGE_HEADERS_BUT_POLICY : entriesOf(set);
  try {
    setAll(response.headers, headers);
    return response;
  } catch {
    const secured = new Response(response.body, response);
    setAll(secured.headers, headers);
    return secured;
  }
}

/** Indexed, not destructured: on every answer, unoptimised code made an iterator and its results per header. */
function setAll(target: Headers, headers: ReadonlyArray<readonly [string, string]>): void {
  for (let i = 0; i < headers.length; i++) target.set(headers[i]![0], headers[i]![1]);
}

function headerLines(headers: HeaderSet): string[] {
  return Object.entries(headers).map(([name, value]) => `  ${name}: ${value}`);
}

/**
 * The `_headers` file of the panel's static files (Workers Static Assets): the panel's headers
 * on every file the asset server answers by itself (the hashed files, and index.html where it
 * answers a navigation under /assets/ that names no file), and a year's cache for /assets/*.
 */
export function staticAssetHeaders(): string {
  return [
    "# Written by the panel's build (web/vite.config.ts) from src/lib/http/security-headers.ts.",
    "/*",
    ...headerLines(PANEL_HEADERS),
    "/assets/*",
    ...headerLines({ "cache-control": HASHED_ASSET_CACHE }),
    "",
  ].join("\n");
}
