/**
 * The operator panel (web/src) imports one way: main -> app -> routes -> screens -> shared
 * components (ui, components/, charts, journey-builder) -> api, types.
 * `npm run check:boundaries` fails on any import cycle there, and on a screen importing the registry.
 */
module.exports = {
  forbidden: [
    { name: "no-cycles", comment: "web/src modules must not import each other in a circle", severity: "error", from: {}, to: { circular: true } },
    {
      name: "screens-do-not-import-the-registry",
      comment: "routes.tsx registers the screens; a screen that imports it (or app.tsx) closes a circle",
      severity: "error",
      from: { path: "^web/src/(screens|components)/" },
      to: { path: "^web/src/(routes|app|main)\\.tsx$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "web/tsconfig.json" },
    exclude: { path: "\\.css$" },
  },
};
