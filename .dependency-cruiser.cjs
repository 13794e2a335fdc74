// The arrows between folders (which room may import which), checked by dependency-cruiser in
// `npm run lint`. It reads every import and export of util/, harness/, qemu/, guest/ and test/,
// type-only ones included (tsPreCompilationDeps); an import that resolves to no file fails (the
// checker would not see its arrow). npm packages and node: modules are not followed.
// Paths given to `new URL(..., import.meta.url)` are not imports and are not seen; today they name
// data (fixtures/, guest/ sources, test/fixtures/) or a file of the same folder (the device-server
// main that process.ts spawns, the vfio-user receive worker).

/** One edge of a folder cycle that exists today, allowed until the folders are restructured. */
const KNOWN_FOLDER_CYCLE_EDGES = [
  // None today: the last cycles (scenario <-> executor, console -> executor through the capture
  // tool, oracle -> scenario -> executor) were cut on 2026-12-01. Add an edge here only with the
  // imports behind it and the restructure that will remove it.
];

const PROJECT = "^(util|harness|qemu|guest|test)/";
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const oneOf = (names) => `^(${names.map(escapeRegExp).join("|")})$`;

/**
 * No import cycles between folders. A folder is a directory: its files and sub-folders together,
 * so a folder never cycles with its own sub-folders (harness/oracle/rules with harness/oracle) and
 * cycles between files of one folder are fine. test/'s sub-folders are one room: their cycles
 * among themselves are not checked. Every edge of a folder cycle fails unless it is in
 * KNOWN_FOLDER_CYCLE_EDGES, so a new cycle fails even between folders that already form one.
 */
function folderCycleRules() {
  const allowed = new Map();
  for (const [from, to] of KNOWN_FOLDER_CYCLE_EDGES) allowed.set(from, [...(allowed.get(from) ?? []), to]);
  const rule = (from, to) => ({
    name: "no-folder-cycles",
    comment: "an import cycle between folders (see KNOWN_FOLDER_CYCLE_EDGES in .dependency-cruiser.cjs)",
    severity: "error",
    scope: "folder",
    from,
    to: { circular: true, ...to },
  });
  return [
    rule({ pathNot: [oneOf([...allowed.keys()]), "^test/."] }, {}),
    ...[...allowed].map(([from, tos]) => rule({ path: oneOf([from]) }, { pathNot: oneOf(tos) })),
  ];
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "not-to-unresolvable",
      comment: "an import the checker cannot resolve to a file: it would not see the arrow",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "util-imports-nothing",
      comment: "util/ is the bottom layer: it imports nothing of the project",
      severity: "error",
      from: { path: "^util/" },
      to: { path: PROJECT, pathNot: "^util/" },
    },
    {
      name: "vfio-user-is-generic",
      comment: "qemu/vfio-user is a generic library: it imports only itself and util/",
      severity: "error",
      from: { path: "^qemu/vfio-user/" },
      to: { path: PROJECT, pathNot: "^(qemu/vfio-user|util)/" },
    },
    {
      name: "erdma-is-the-device",
      comment: "qemu/erdma (the device core) imports only itself, qemu/vfio-user's API and util/",
      severity: "error",
      from: { path: "^qemu/erdma/" },
      to: { path: PROJECT, pathNot: "^(qemu/erdma|qemu/vfio-user|util)/" },
    },
    {
      name: "nothing-below-imports-harness",
      comment: "harness/ may import qemu/ and guest/; nothing in them imports harness/",
      severity: "error",
      from: { path: "^(qemu|guest)/" },
      to: { path: "^harness/" },
    },
    ...folderCycleRules(),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      extensions: [".ts", ".mjs", ".js"],
      // packages' subpath exports (@stryker-mutator/api/plugin), as node resolves them
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
  },
};
