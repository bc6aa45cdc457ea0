/**
 * The stairs of src/ run one way (docs/architecture.md):
 *   http (edge) -> api | admin -> services -> domain + store -> lib;  jobs (wiring) -> services.
 * `npm run check:boundaries` (part of `npm test`) fails on any import against them, on any cycle,
 * and on any loop between the folders of src/services.
 */
const floor = (name, allowed) => ({
  name: `${name}-imports-only-below`,
  comment: `src/${name} may import only ${allowed.join(", ")}`,
  severity: "error",
  from: { path: `^src/${name}/` },
  to: { path: "^src/", pathNot: allowed.map((dir) => `^src/${dir}/`) },
});

module.exports = {
  forbidden: [
    { name: "no-cycles", severity: "error", from: {}, to: { circular: true } },
    {
      // A loop between folders (journeys -> broadcasts -> journeys) hides which engine sits
      // on which: each folder of src/services may import only folders that never import it back.
      name: "no-service-folder-cycles",
      comment: "folders of src/services form no loop: move what two folders share into a lower one, or register a reaction",
      severity: "error",
      scope: "folder",
      from: { path: "^src/services/" },
      to: { circular: true },
    },
    floor("lib", ["lib"]),
    floor("domain", ["domain", "lib"]),
    floor("store", ["store", "domain", "lib"]),
    floor("services", ["services", "store", "domain", "lib"]),
    floor("jobs", ["jobs", "services", "store", "domain", "lib"]),
    floor("api", ["api", "services", "store", "domain", "lib"]),
    floor("admin", ["admin", "services", "store", "domain", "lib"]),
    {
      name: "services-know-no-http",
      comment: "services, store and domain report problems as values; HTTP errors and bodies belong to the handlers",
      severity: "error",
      from: { path: "^src/(services|store|domain)/" },
      to: { path: "^src/lib/http/" },
    },
    {
      // ImportFailure and TransientImportError are the import step's own signals; the job's
      // status is what callers read (docs/architecture.md, errors at the service boundary).
      name: "import-signals-stay-in-imports",
      comment: "only src/services/imports throws or catches the import signals; callers read the job",
      severity: "error",
      from: { pathNot: "^src/services/imports/" },
      to: { path: "^src/services/imports/errors\\.ts$" },
    },
    {
      name: "domain-has-no-platform",
      comment: "src/domain holds rules without I/O: no Cloudflare or Node modules",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { dependencyTypes: ["core"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^(test|bench|scripts)/" },
  },
};
