// npm run bench:render: personalised emails per second through the one renderer, `personalize`
// (src/domain/merge-tags.ts), beside the same HTML filled by plain string replacement, in one
// process and one run (issue 43's benchmark).
//
//   service:  the campaign's path: the template compiled once, then personalize(compiled,
//             attributes, "html") per contact (fallbacks, HTML escaping, link marks).
//   baseline: the same template filled by replaceAll of each tag's literal text with the
//             contact's value (or the fallback where it is empty), nothing escaped.
// Both write each email out flat (one character read forces V8 to join a concatenated string),
// as a send does before it encodes the message. The renderer is pure computation: it is bundled
// for Node (its V8 is the one workerd runs) rather than timed through a runtime.
//
// Goal (issue 43): the service >= 80% of the baseline's rate: the median of the rounds' ratios
// (ROUNDS alternate the two, so each ratio compares them under the same load).
//
//   RENDERS=100000  emails per round and path
//   ROUNDS=3        rounds (the median of their ratios is the figure)
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { median, report, root, share, spreadOf } from "./lib.ts";

const RENDERS = Number(process.env.RENDERS ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

type Attributes = Record<string, string | number | boolean>;
interface Renderer {
  compileTemplate(source: string): unknown;
  personalize(template: unknown, attributes: Attributes, mode: "html"): string;
}

async function loadRenderer(): Promise<Renderer> {
  const dir = mkdtempSync(join(tmpdir(), "apiv2-bench-render-"));
  try {
    const outfile = join(dir, "merge-tags.mjs");
    await build({ entryPoints: [join(root, "src", "domain", "merge-tags.ts")], bundle: true, format: "esm", platform: "neutral", outfile, logLevel: "error" });
    return (await import(pathToFileURL(outfile).href)) as Renderer;
  } finally {
    // The module is loaded: the file is no longer needed.
    setTimeout(() => rmSync(dir, { recursive: true, force: true }), 0);
  }
}

/** The merge tags of the template: [literal text, attribute, fallback]. Ten, as an editor's template might carry. */
const TAGS: Array<[string, string, string]> = [
  ["{{FIRST_NAME|there}}", "FIRST_NAME", "there"],
  ["{{ CITY | your city }}", "CITY", "your city"],
  ["{{PLAN|Free}}", "PLAN", "Free"],
  ["{{POINTS|0}}", "POINTS", "0"],
  ["{{LAST_PRODUCT|our bestsellers}}", "LAST_PRODUCT", "our bestsellers"],
  ["{{COUPON|WELCOME10}}", "COUPON", "WELCOME10"],
  ["{{STORE|the shop}}", "STORE", "the shop"],
  ["{{MANAGER|The team}}", "MANAGER", "The team"],
  ["{{RENEWAL_DATE|soon}}", "RENEWAL_DATE", "soon"],
  ["{{COMPANY|}}", "COMPANY", ""],
];

/** A responsive, table-based email as MJML renders one (inline styles, nested tables), about 9 KB, the tags spread through it. */
function templateHtml(): string {
  const [first, city, plan, points, product, coupon, store, manager, renewal, company] = TAGS.map((t) => t[0]);
  const style = 'style="font-family:Ubuntu,Helvetica,Arial,sans-serif;font-size:15px;line-height:1.5;text-align:left;color:#333333;"';
  const section = (inner: string) =>
    `<!--[if mso | IE]><table align="center" border="0" cellpadding="0" cellspacing="0" class="" style="width:600px;" width="600" ><tr><td style="line-height:0px;font-size:0px;mso-line-height-rule:exactly;"><![endif]-->` +
    `<div style="margin:0px auto;max-width:600px;"><table align="center" border="0" cellpadding="0" cellspacing="0" role="presentation" style="width:100%;"><tbody><tr>` +
    `<td style="direction:ltr;font-size:0px;padding:20px 0;text-align:center;"><div class="mj-column-per-100 mj-outlook-group-fix" style="font-size:0px;text-align:left;direction:ltr;display:inline-block;vertical-align:top;width:100%;">` +
    `<table border="0" cellpadding="0" cellspacing="0" role="presentation" style="vertical-align:top;" width="100%"><tbody><tr><td align="left" style="font-size:0px;padding:10px 25px;word-break:break-word;">` +
    `<div ${style}>${inner}</div></td></tr></tbody></table></div></td></tr></tbody></table></div><!--[if mso | IE]></td></tr></table><![endif]-->\n`;
  return (
    `<!doctype html><html xmlns="http://www.w3.org/1999/xhtml"><head><title></title><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><style type="text/css">#outlook a { padding:0; } body { margin:0;padding:0;-webkit-text-size-adjust:100%;-ms-text-size-adjust:100%; } ` +
    `table, td { border-collapse:collapse;mso-table-lspace:0pt;mso-table-rspace:0pt; } img { border:0;height:auto;line-height:100%; outline:none;text-decoration:none;-ms-interpolation-mode:bicubic; } ` +
    `p { display:block;margin:13px 0; } @media only screen and (min-width:480px) { .mj-column-per-100 { width:100% !important; max-width: 100%; } .mj-column-per-50 { width:50% !important; max-width: 50%; } }</style></head>` +
    `<body style="word-spacing:normal;background-color:#f4f4f4;"><div style="display:none;max-height:0;overflow:hidden;mso-hide:all" aria-hidden="true">Your ${plan} plan news, ${first}</div>` +
    `<div style="background-color:#f4f4f4;">\n` +
    section(`<img alt="${store}" src="https://cdn.example.com/logo.png" width="140" height="40" style="display:block;border:0;">`) +
    section(`<h1 style="margin:0;font-size:26px;">Hello ${first}, spring is here in ${city}</h1><p>As a member on the ${plan} plan you have ${points} points waiting. We picked a few things that go with ${product}.</p>`) +
    section(
      `<table role="presentation" width="100%"><tr>` +
        ["Linen shirt", "Canvas tote", "Straw hat", "Espadrilles"]
          .map((name, i) => `<td style="padding:8px;width:25%;"><img alt="${name}" src="https://cdn.example.com/p/${i}.jpg" width="120" style="display:block;width:100%;"><p style="margin:6px 0;">${name}</p><p style="margin:0;color:#888;">from €${19 + i * 10}</p></td>`)
          .join("") +
        `</tr></table>`,
    ) +
    section(`<p>Use the code <strong>${coupon}</strong> at checkout before ${renewal}: it takes 15% off everything in ${store}.</p>` +
      `<a href="https://shop.example.com/spring?utm_source=email&amp;utm_campaign=spring" style="display:inline-block;background:#e85d04;color:#ffffff;font-size:16px;padding:12px 24px;border-radius:4px;text-decoration:none;">Shop the spring collection</a>`) +
    section(`<p>See you soon,<br>${manager}<br>${company}</p>`) +
    section(
      `<p style="font-size:12px;color:#888;">You receive this email because you joined ${store}. <a href="{{UNSUBSCRIBE}}">Unsubscribe</a> or <a href="{{PREFERENCES}}">choose what you receive</a>.</p>` +
        `<p style="font-size:12px;color:#888;">Shop Ltd, 1 Market Street, ${city}</p>`,
    ) +
    `</div></body></html>`
  );
}

/** Contacts whose attributes vary: some missing (the fallback), some empty, some needing escapes. */
function contacts(count: number): Attributes[] {
  const cities = ["Pune", "Lisbon", "São Paulo", "Zürich", "Cape Town", "Osaka", "Tromsø"];
  const products = ["the linen shirt", "Tom & Jerry socks", "the <b>Classic</b> loafers", "a gift card", "sunglasses"];
  const out: Attributes[] = [];
  for (let i = 0; i < count; i++) {
    const a: Attributes = { EMAIL: `contact${i}@example.com`, FIRST_NAME: i % 11 === 0 ? "" : `Name${i}`, POINTS: (i * 37) % 5000 };
    if (i % 3 !== 0) a.CITY = cities[i % cities.length]!;
    if (i % 4 !== 0) a.PLAN = i % 2 ? "Gold" : "Silver";
    if (i % 5 !== 0) a.LAST_PRODUCT = products[i % products.length]!;
    if (i % 2 === 0) a.COUPON = `SPRING${i % 100}`;
    a.STORE = i % 7 === 0 ? "O'Neill's corner" : "the shop";
    if (i % 6 !== 0) a.MANAGER = `Manager ${i % 13}`;
    a.RENEWAL_DATE = `2027-0${(i % 9) + 1}-15`;
    if (i % 10 === 0) a.COMPANY = "Acme & Sons";
    out.push(a);
  }
  return out;
}

const { compileTemplate, personalize } = await loadRenderer();
const html = templateHtml();
const people = contacts(RENDERS);
const compiled = compileTemplate(html);
const link = { "{{UNSUBSCRIBE}}": "\uE000unsubscribe\uE001", "{{PREFERENCES}}": "\uE000preferences\uE001" };

/** Renders every contact through `render`; returns emails per second and a checksum that keeps the work observable. */
function time(render: (attributes: Attributes) => string): { rate: number; sum: number } {
  let sum = 0;
  const t0 = performance.now();
  for (const attributes of people) {
    const out = render(attributes);
    // Reading a character flattens a concatenated string, as encoding the message does.
    sum += out.length + out.charCodeAt(out.length >> 1);
  }
  return { rate: people.length / ((performance.now() - t0) / 1000), sum };
}

const service = (attributes: Attributes) => personalize(compiled, attributes, "html");
// The baseline: one pass of String.replace over the tags' literal text, each looked up in a map
// made once (the strongest plain replacement; a replaceAll per tag copies the whole HTML each
// time and is printed beside it only for information).
const literals = new Map<string, [string, string] | string>([...TAGS.map(([literal, name, fallback]) => [literal, [name, fallback]] as [string, [string, string]]), ...Object.entries(link)]);
const TAG_TEXT = /\{\{[^}]*\}\}/g;
const baseline = (attributes: Attributes) =>
  html.replace(TAG_TEXT, (literal) => {
    const tag = literals.get(literal)!;
    if (typeof tag === "string") return tag;
    const value = attributes[tag[0]];
    return value === undefined || value === "" ? tag[1] : String(value);
  });
const replaceAllChain = (attributes: Attributes) => {
  let out = html.replaceAll("{{UNSUBSCRIBE}}", link["{{UNSUBSCRIBE}}"]).replaceAll("{{PREFERENCES}}", link["{{PREFERENCES}}"]);
  for (const [literal, name, fallback] of TAGS) {
    const value = attributes[name];
    out = out.replaceAll(literal, value === undefined || value === "" ? fallback : String(value));
  }
  return out;
};

// The two agree but for escaping: the renderer's output is what the baseline's would be, escaped.
const sample = people.find((p) => typeof p.LAST_PRODUCT === "string" && p.LAST_PRODUCT.includes("&"))!;
if (service(sample).length <= baseline(sample).length) throw new Error("the renderer's output does not carry the escapes the baseline lacks: the two do not render the same template");
const plain = people.find((p) => Object.values(p).every((v) => !/[&<>"']/.test(String(v))))!;
if (service(plain) !== baseline(plain) || baseline(plain) !== replaceAllChain(plain)) throw new Error("the renderer and the baselines do not render the same email");

console.log(`template ${html.length} characters, ${TAGS.length} merge tags (+ unsubscribe and preference links); ${RENDERS} contacts per round, ${ROUNDS} rounds`);
// A warm-up of both (the JIT).
for (let i = 0; i < 2000; i++) service(people[i % people.length]!), baseline(people[i % people.length]!);
const serviceRates: number[] = [];
const baselineRates: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const s = time(service);
  const b = time(baseline);
  serviceRates.push(s.rate);
  baselineRates.push(b.rate);
  const chain = round === 0 ? time(replaceAllChain).rate : Number.NaN;
  console.log(
    `round ${round + 1}: personalize ${s.rate.toFixed(0)} emails/s, plain replacement (one pass) ${b.rate.toFixed(0)} emails/s (${((s.rate / b.rate) * 100).toFixed(0)}%)` +
      (round === 0 ? `; a replaceAll per tag ${chain.toFixed(0)} emails/s` : ""),
  );
}
const ratio = median(serviceRates.map((s, i) => s / baselineRates[i]!));
const s = median(serviceRates);
const b = median(baselineRates);
console.log(`\npersonalize: median ${s.toFixed(0)} emails/s; plain string replacement: median ${b.toFixed(0)} emails/s; median ratio ${(ratio * 100).toFixed(0)}% (goal >= 80%)`);
report("render", [
  { figure: `personalised emails/s, ${RENDERS} per round (median of ${ROUNDS})`, service: s.toFixed(0), baseline: b.toFixed(0), ratio: `${(ratio * 100).toFixed(0)}%`, spread: spreadOf(serviceRates.map((s, i) => s / baselineRates[i]!), share), goal: ">= 80%", met: ratio >= 0.8 },
]);
