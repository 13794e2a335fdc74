// The mutation campaign's manifest (fixtures/mutants/mutants.yaml): the shipped one loads and names
// real series that touch what it says; a selection by name; and for each kind of mistake one clear
// error naming the file, the line and the field.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import {
  diffPaths,
  loadManifest,
  parseManifest,
  selectSeries,
} from "../../harness/bench/mutants/manifest.ts";
import { HilError } from "../../util/errors.ts";

const MUTANTS = fileURLToPath(new URL("../../fixtures/mutants/", import.meta.url));
const QP = "drivers/infiniband/hw/erdma/erdma_qp.c";
const mbox = (name: string) => readFileSync(join(MUTANTS, `${name}.mbox`), "utf8");

const GOOD = [
  "series:",
  "  - name: no-reflush-after-post",
  "    kind: mutant",
  `    paths: [${QP}]`,
  "    touches: [erdma_qp.c:erdma_post_send]",
  "    class: a reflush never sent",
  "    rules: [1, 2, 5, hang]",
  "    scenarios: [post-send-in-error, post-recv-in-error]",
  "  - name: benign-reflush-immediate",
  "    kind: benign",
  `    paths: [${QP}]`,
  "    touches: [erdma_qp.c:erdma_post_send]",
  "    class: an immediate reflush",
];

function replace(at: number, line: string): string[] {
  return GOOD.map((l, i) => (i === at ? line : l));
}

t.test("the shipped manifest loads, and each series touches what it lists", async (t) => {
  const m = await loadManifest();
  const mutants = m.series.filter((s) => s.kind === "mutant");
  const benign = m.series.filter((s) => s.kind === "benign");
  t.ok(mutants.length >= 15, `${mutants.length} mutants`);
  t.ok(benign.length >= 3, `${benign.length} benign series`);
  for (const s of m.series) {
    t.same(diffPaths([readFileSync(s.file, "utf8")]), [...s.paths].sort(), `${s.name} touches its paths`);
    t.ok(s.executors.length > 0, `${s.name} runs on some executor`);
  }
  t.same(
    benign.flatMap((s) => s.rules),
    [],
    "no benign series names a rule",
  );
  t.ok(
    mutants.every((s) => s.rules.length > 0),
    "every mutant names the rules it should break",
  );
  const driverDir = {
    erdma: "drivers/infiniband/hw/erdma/",
    siw: "drivers/infiniband/sw/siw/",
    rxe: "drivers/infiniband/sw/rxe/",
  };
  for (const driver of ["erdma", "siw", "rxe"] as const) {
    const own = mutants.filter((s) => s.driver === driver);
    t.ok(own.length >= 5, `${own.length} mutants of ${driver}`);
    t.ok(
      own.every((s) => s.paths.every((p) => p.startsWith(driverDir[driver]))),
      `each ${driver} mutant changes ${driverDir[driver]} alone, the driver the suite judges it on`,
    );
  }
  t.same(
    m.series.find((s) => s.name === "modify-err-refused-in-rts")?.executors,
    ["kernel", "user"],
    "the modify path is judged on both executors",
  );
});

t.test("--only selects series by name, in manifest order", async (t) => {
  const m = await loadManifest();
  t.same(
    selectSeries(m, ["flush-status-success", "no-reflush-after-post"]).map((s) => s.name),
    ["no-reflush-after-post", "flush-status-success"],
  );
  t.equal(selectSeries(m, undefined).length, m.series.length);
  t.throws(() => selectSeries(m, ["no-reflush-after-post", "nope"]), /no series "nope"/);
});

t.test("diffPaths reads the b/ side of every diff of a series", async (t) => {
  t.same(diffPaths([mbox("benign-flush-vendor-err")]), [
    "drivers/infiniband/hw/erdma/erdma_cq.c",
    "drivers/infiniband/hw/erdma/erdma_hw.h",
  ]);
  t.same(diffPaths(["no diff here"]), []);
});

t.test("each mistake is one error with file:line:col and the field", async (t) => {
  const dir = t.testdir({
    "no-reflush-after-post.mbox": mbox("no-reflush-after-post"),
    "benign-reflush-immediate.mbox": mbox("benign-reflush-immediate"),
  });
  const file = join(dir, "mutants.yaml");
  const errorOf = (lines: readonly string[]): HilError => {
    try {
      parseManifest(lines.join("\n"), file);
    } catch (err) {
      if (err instanceof HilError) return err;
      throw err;
    }
    throw new Error("the manifest loaded without an error");
  };
  t.same(
    parseManifest(GOOD.join("\n"), file).series.map((s) => [s.name, s.kind, s.driver, s.executors]),
    [
      ["no-reflush-after-post", "mutant", "erdma", ["kernel"]],
      ["benign-reflush-immediate", "benign", "erdma", ["kernel"]],
    ],
    "the good manifest loads, the driver defaults to erdma and executors to the kernel one",
  );
  t.equal(
    parseManifest(replace(2, "    kind: mutant\n    driver: siw").join("\n"), file).series[0]?.driver,
    "siw",
    "a series names the driver the suite judges it on",
  );
  const cases: Array<{ lines: string[]; where: RegExp; message: RegExp }> = [
    {
      lines: [...GOOD, "    colour: blue"],
      where: /:14:5$/,
      message: /^series\[1\]\.colour: unknown field$/,
    },
    { lines: replace(2, "    kind: mutation"), where: /:3:5$/, message: /^series\[0\]\.kind: / },
    {
      lines: GOOD.filter((l) => !l.includes("rules:")),
      where: /:2:5$/,
      message: /^series\[0\]\.rules: a mutant names the rules it should break/,
    },
    {
      lines: [...GOOD, "    rules: [5]"],
      where: /:14:5$/,
      message: /^series\[1\]\.rules: a benign change breaks no rule/,
    },
    { lines: replace(6, "    rules: [10]"), where: /:7:\d+$/, message: /^series\[0\]\.rules\[0\]: / },
    {
      lines: replace(4, "    touches: [erdma_post_send]"),
      where: /:5:\d+$/,
      message: /^series\[0\]\.touches\[0\]: file:symbol/,
    },
    {
      lines: replace(7, "    scenarios: [post-send-in-error, no-such-scenario]"),
      where: /:8:\d+$/,
      message: /^series\[0\]\.scenarios\[1\]: no scenario "no-such-scenario"/,
    },
    {
      lines: replace(3, "    paths: [drivers/infiniband/hw/erdma/erdma_cq.c]"),
      where: /:4:5$/,
      message:
        /^series\[0\]\.paths: the series changes drivers\/infiniband\/hw\/erdma\/erdma_qp\.c, not .*erdma_cq\.c/,
    },
    {
      lines: replace(9, "    kind: mutant\n    rules: [5]"),
      where: /:10:5$/,
      message: /^series\[1\]\.kind: a mutant's patches are tagged \[MUTANT\]; "\[BENIGN\] /,
    },
    {
      lines: [...GOOD, "  - name: no-such-series", ...GOOD.slice(9)],
      where: /:14:\d+$/,
      message: /^series\[2\]\.name: no series file no-such-series\.mbox beside the manifest$/,
    },
    {
      lines: [...GOOD.slice(0, 8)],
      where: /:1:1$/,
      message: /^series: benign-reflush-immediate\.mbox is a series file the manifest does not list/,
    },
    {
      lines: [...GOOD, ...GOOD.slice(1, 8)],
      where: /:14:\d+$/,
      message: /^series\[2\]\.name: "no-reflush-after-post" is also the name of series\[0\]/,
    },
    { lines: ["series: ["], where: /:\d+:\d+$/, message: /^\(yaml\): / },
    {
      lines: replace(2, "    kind: mutant\n    driver: mlx5"),
      where: /:4:\d+$/,
      message: /^series\[0\]\.driver: /,
    },
    {
      // ceq-budget-drain is meant for erdma alone: the suite never runs it on siw
      lines: replace(2, "    kind: mutant\n    driver: siw").map((l, i) =>
        i === 7 ? "    scenarios: [post-send-in-error, ceq-budget-drain]" : l,
      ),
      where: /:9:\d+$/,
      message:
        /^series\[0\]\.scenarios\[1\]: scenario "ceq-budget-drain" does not run on siw \(drivers: erdma\)$/,
    },
    {
      lines: replace(7, "    scenarios: [post-send-in-error, ulp-nvme-rdma-io]"),
      where: /:8:\d+$/,
      message:
        /^series\[0\]\.scenarios\[1\]: scenario "ulp-nvme-rdma-io" runs the nvme-rdma workload, which needs --config ulp: the campaign's kernels have none$/,
    },
  ];
  for (const c of cases) {
    const err = errorOf(c.lines);
    t.match(err.where, c.where, `${c.message}: where ${err.where}`);
    t.match(err.message, c.message, err.format());
    t.equal(err.exitCode, 2, "bad input: exit 2");
  }
});

t.test("a mutant may name hw-protocol, the judge of the device's trace, among its rules", async (t) => {
  const dir = t.testdir({
    "no-reflush-after-post.mbox": mbox("no-reflush-after-post"),
    "benign-reflush-immediate.mbox": mbox("benign-reflush-immediate"),
  });
  const file = join(dir, "mutants.yaml");
  t.same(parseManifest(replace(6, "    rules: [5, hw-protocol]").join("\n"), file).series[0]?.rules, [
    5,
    "hw-protocol",
  ]);
  t.throws(() => parseManifest(replace(6, "    rules: [hw]").join("\n"), file), {
    message: /^series\[0\]\.rules\[0\]: /,
  });
});

t.test("a series file that is no patch is named", async (t) => {
  const dir = t.testdir({ "empty.mbox": "not a patch\n" });
  const lines = ["series:", "  - name: empty", ...GOOD.slice(9)];
  t.throws(() => parseManifest(lines.join("\n"), join(dir, "mutants.yaml")), {
    message: /^series\[0\]\.name: empty\.mbox: contains no patch/,
    where: /mutants\.yaml:2:\d+$/,
  });
});

t.test("a manifest that cannot be read is one error naming it", async (t) => {
  const err = await loadManifest(join(MUTANTS, "nope.yaml")).catch((e: unknown) => e);
  t.ok(err instanceof HilError);
  t.match((err as HilError).format(), /nope\.yaml: cannot read the mutants manifest/);
});
