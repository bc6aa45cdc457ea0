import react from "@vitejs/plugin-react";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import { staticAssetHeaders } from "../src/lib/http/security-headers.ts";

/** The asset server's `_headers` file (security headers, a year's cache for hashed files), from the Worker's own policy. */
function headersFile(): Plugin {
  return {
    name: "static-asset-headers",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "_headers", source: staticAssetHeaders() });
    },
  };
}

// The panel builds to web/dist, which wrangler.toml's [assets] serves from the same Worker.
export default defineConfig({
  root: dirname(fileURLToPath(import.meta.url)),
  plugins: [react(), headersFile()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 400 },
  logLevel: "warn",
});
