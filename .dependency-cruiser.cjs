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

/**
 * A room that may import only the rooms named (and util/, and itself): the order inside harness/,
 * and the bottom rooms (util/, qemu/vfio-user, qemu/erdma).
 * `allowed` are regular expressions of paths; each rule says why its arrows are there.
 */
function onlyImports(name, from, allowed, comment) {
  return {
    name,
    comment,
    severity: "error",
    from: { path: from },
    to: { path: PROJECT, pathNot: [from, "^util/", ...allowed] },
  };
}

/** harness/'s rooms from the bottom up: each imports only rooms below it (the list in ARCHITECTURE.md). */
const HARNESS_LAYERS = [
  onlyImports(
    "harness-leaves",
    "^harness/(verdict|defaults)\\.ts$",
    [],
    "verdict.ts (the verdict words, exit codes) and defaults.ts are leaves: they import nothing of the project but util/",
  ),
  onlyImports(
    "console-is-a-leaf",
    "^harness/console/",
    [],
    "the kernel console parser imports nothing of the project but util/",
  ),
  onlyImports(
    "kernel-is-a-leaf",
    "^harness/kernel/",
    [],
    "the kernel builder imports nothing of the project but util/",
  ),
  onlyImports(
    "protocol-is-vocabulary",
    "^harness/protocol/",
    ["^harness/console/", "^qemu/erdma/trace-schema\\.ts$", "^qemu/device-server/"],
    "protocol/ (what the executors, the device and the harness say to each other) imports only the console's event kinds its observations carry and the device's hardware trace schema it reads (qemu/erdma/trace-schema.ts, the device server's line format)",
  ),
  onlyImports(
    "scenario-on-protocol",
    "^harness/scenario/",
    ["^harness/protocol/"],
    "the scenario format and compiler build on protocol/ alone (command lines, value sets)",
  ),
  onlyImports(
    "oracle-judges-records",
    "^harness/oracle/",
    ["^harness/(protocol|scenario|console)/", "^harness/verdict\\.ts$", "^qemu/erdma/"],
    "the oracle judges records: it imports protocol/, scenario/, console/ and verdict.ts, and qemu/erdma for the device's field layouts and statuses (the rules on its hardware trace: hw-complete, hw-protocol); never the executor, the suite, the workflows, the boot or the rest of qemu/",
  ),
  onlyImports(
    "executor-does-not-import-the-judge",
    "^harness/executor/",
    [
      "^harness/(protocol|scenario|image)/",
      "^harness/boot\\.ts$",
      "^qemu/launch/",
      // settle.ts polls each CQ for the completions the trace model says are still owed: the
      // judge's own reading of the trace, so that what is settled and what is judged agree
      "^harness/oracle/model\\.ts$",
    ],
    "the executors import protocol/, scenario/, image/ (the guest's tools), boot.ts and qemu/launch (the guest they run in), and of the oracle only its trace model",
  ),
  onlyImports(
    "rundir-reads-records",
    "^harness/rundir/",
    ["^harness/(protocol|backend)/", "^harness/verdict\\.ts$"],
    "the run directory's schema, writer and reader import protocol/ (the records), backend/ (how a run's device reads back) and verdict.ts",
  ),
  onlyImports(
    "suite-below-workflows",
    "^harness/suite/",
    [
      "^harness/(backend|executor|oracle|scenario|protocol|rundir|console)/",
      "^harness/(boot|verdict)\\.ts$",
      "^qemu/(erdma|device-server|launch)/",
    ],
    "the suite runs scenarios and judges them: it imports no workflow, report, LAVA, target or CLI module (they import it)",
  ),
  onlyImports(
    "report-imports-no-suite",
    "^harness/report/",
    [
      "^harness/(backend|kernel|oracle|protocol|rundir|scenario|workflows)/",
      "^harness/verdict\\.ts$",
      "^qemu/erdma/",
    ],
    "the reports render a run directory (rundir/) and the workflows' results; they import no suite, executor, boot, LAVA, target or CLI module",
  ),
  {
    name: "nothing-imports-the-cli",
    comment: "cli/ is the top of harness/: only the benchmark scripts (and tests) import it",
    severity: "error",
    from: { path: "^(harness|qemu|util)/", pathNot: "^harness/(cli|bench)/" },
    to: { path: "^harness/cli/" },
  },
];

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
    onlyImports(
      "util-imports-nothing",
      "^util/",
      [],
      "util/ is the bottom layer: it imports nothing of the project",
    ),
    onlyImports(
      "vfio-user-is-generic",
      "^qemu/vfio-user/",
      [],
      "qemu/vfio-user is a generic library: it imports only itself and util/",
    ),
    onlyImports(
      "erdma-is-the-device",
      "^qemu/erdma/",
      ["^qemu/vfio-user/"],
      "qemu/erdma (the device core) imports only itself, qemu/vfio-user's API and util/",
    ),
    {
      name: "nothing-below-imports-harness",
      comment: "harness/ may import qemu/ and guest/; nothing in them imports harness/",
      severity: "error",
      from: { path: "^(qemu|guest)/" },
      to: { path: "^harness/" },
    },
    ...HARNESS_LAYERS,
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
