// The panel's build (web/dist) for `npm start`, skipped when nothing it was built from changed.
//
//   node scripts/panel-build.ts    builds web/dist as `npm run build:panel` does, and records
//                                  what it read in web/dist/.inputs.json
//
// The record holds a hash of every file the bundle was made of (web/src, and what it imports
// from src/), of index.html, the Vite config, the security headers its _headers file is written
// from, and package-lock.json (the dependencies' versions). `npm start` builds again only when
// one of them differs, or when web/dist has no record (a build by `npm run build:panel`, or none).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(import.meta.dirname, "..");
const record = join(root, "web", "dist", ".inputs.json");
/** Inputs the bundle's module list does not name. */
const ALWAYS = ["web/index.html", "web/vite.config.ts", "src/lib/http/security-headers.ts", "package-lock.json"];

function hashOf(file: string): string | null {
  const path = join(root, file);
  return existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : null;
}

/** True when web/dist was built by this script from the files as they are now. */
export function panelUpToDate(): boolean {
  if (!existsSync(record) || !existsSync(join(root, "web", "dist", "index.html"))) return false;
  const inputs = JSON.parse(readFileSync(record, "utf8")) as Record<string, string | null>;
  return Object.entries(inputs).every(([file, hash]) => hashOf(file) === hash);
}

async function build(): Promise<void> {
  const { build: viteBuild } = await import("vite");
  const files = new Set<string>(ALWAYS);
  await viteBuild({
    configFile: join(root, "web", "vite.config.ts"),
    plugins: [
      {
        name: "record-inputs",
        generateBundle(_options, bundle) {
          for (const output of Object.values(bundle)) {
            if (output.type !== "chunk") continue;
            for (const id of output.moduleIds) {
              const path = id.split("?")[0]!;
              if (isAbsolute(path) && existsSync(path) && !relative(root, path).startsWith("..") && !path.includes("node_modules")) files.add(relative(root, path).split("\\").join("/"));
            }
          }
        },
      },
    ],
  });
  writeFileSync(record, JSON.stringify(Object.fromEntries([...files].sort().map((file) => [file, hashOf(file)])), null, 2));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await build();
