// Known-bug case files (fixtures/cases): every shipped case loads and names real scenarios,
// profiles and series; a case with its defaults; and for each kind of mistake one clear error
// naming the file, the line and the field.
import { join } from "node:path";
import t from "tap";
import { CASE_DIR, listCases, loadCase, parseCase } from "../../harness/workflows/repro/case.ts";
import { HilError } from "../../util/errors.ts";
import { hilErrorOf } from "../support/hil-error.ts";

const GOOD = [
  "bug: a drain that never returns",
  "reference: drivers/infiniband/core/verbs.c:__ib_drain_sq",
  "kernel: debian:6.1",
  "device_profile: erdma-2022",
  "scenarios: [drain-qp-idle]",
  "expect:",
  "  - scenario: drain-qp-idle",
  "    profiles: [linux]",
  "    verdict: FAIL",
  "    rules: { 9: FAIL, hang: FAIL }",
  "    evidence: __ib_drain_sq",
];

const errorOf = (lines: readonly string[], file = join(CASE_DIR, "bad.yaml")) =>
  hilErrorOf(() => parseCase(lines.join("\n"), file), "the case loaded without an error");

function replace(at: number, line: string): string[] {
  return GOOD.map((l, i) => (i === at ? line : l));
}

t.test("every shipped case loads", async (t) => {
  const names = listCases();
  t.ok(names.length >= 5, `${names.length} cases: ${names.join(", ")}`);
  for (const required of ["erdma-drain-hang-6.1", "erdma-post-error-in-err", "erdma-reflush-fix-6.12"])
    t.ok(names.includes(required), required);
  for (const name of names) {
    const c = await loadCase(name);
    t.equal(c.name, name);
    t.ok(c.loaded.length > 0 && c.expect.length > 0, `${name}: scenarios and expectations`);
    for (const e of c.expect)
      t.ok(
        c.loaded.some((s) => s.name === e.scenario),
        `${name}: ${e.scenario} is run`,
      );
  }
  const post = await loadCase("erdma-post-error-in-err");
  t.equal(post.job.series, "../series/erdma-fail-post-in-error.mbox", "the series, relative to the case");
  t.equal(post.job.kernel, "debian:6.12");
  const siw = await loadCase("siw-user-beacon-not-flushed");
  t.same([siw.job.driver, siw.job.executor, siw.job.deviceProfile], ["siw", "user", undefined]);
  t.ok(
    siw.loaded.some((s) => s.file.endsWith("fixtures/cases/scenarios/beacon-after-error.yaml")),
    "a scenario path is relative to the case file",
  );
});

t.test("a case with its defaults", async (t) => {
  const c = await parseCase(GOOD.join("\n"), join(CASE_DIR, "my-case.yaml"));
  t.equal(c.name, "my-case");
  t.same(c.job, {
    kernel: "debian:6.1",
    driver: "erdma",
    executor: "kernel",
    deviceProfile: "erdma-2022",
    scenarios: "drain-qp-idle",
  });
  t.same(c.expect[0]?.rules, { 9: "FAIL", hang: "FAIL" });
});

t.test("each mistake is one error with file:line:col and the field", async (t) => {
  const cases: Array<{ lines: string[]; where: RegExp; message: RegExp }> = [
    {
      lines: replace(4, "scenarios: [no-such-scenario]"),
      where: /bad\.yaml:5:\d+$/,
      message: /^scenarios\[0\]: .*no scenario matches "no-such-scenario"/,
    },
    {
      lines: replace(3, "device_profile: erdma-1999"),
      where: /bad\.yaml:4:1$/,
      message: /^device_profile: no device profile "erdma-1999"/,
    },
    { lines: replace(8, "    verdict: BROKEN"), where: /bad\.yaml:9:5$/, message: /^expect\[0\]\.verdict: / },
    {
      lines: replace(9, "    rules: { 10: FAIL }"),
      where: /bad\.yaml:10:\d+$/,
      message: /^expect\[0\]\.rules\.10: not a rule/,
    },
    {
      lines: replace(6, "  - scenario: drain-twice"),
      where: /bad\.yaml:7:5$/,
      message: /^expect\[0\]\.scenario: "drain-twice" is not among the case's scenarios/,
    },
    { lines: [...GOOD, "colour: blue"], where: /bad\.yaml:12:1$/, message: /^colour: unknown field$/ },
    { lines: GOOD.filter((l) => !l.startsWith("bug:")), where: /bad\.yaml:1:1$/, message: /^bug: / },
    {
      lines: replace(1, "reference: somewhere"),
      where: /bad\.yaml:2:1$/,
      message: /^reference: a URL or file:function/,
    },
    {
      lines: replace(2, "kernel: debian:5.10"),
      where: /bad\.yaml:3:1$/,
      message: /^kernel: unknown Debian base/,
    },
    {
      lines: [...GOOD, "series: ../series/none.mbox"],
      where: /bad\.yaml:12:1$/,
      message: /^series: no such series/,
    },
    {
      lines: [...GOOD.slice(0, 3), "driver: siw", ...GOOD.slice(3)],
      where: /bad\.yaml:5:1$/,
      message: /^device_profile: driver siw attaches no erdma device/,
    },
    {
      lines: replace(7, "    profiles: [rdma]"),
      where: /bad\.yaml:8:\d+$/,
      message: /^expect\[0\]\.profiles\[0\]: /,
    },
    {
      lines: replace(10, "    evidence: '(unclosed'"),
      where: /bad\.yaml:11:5$/,
      message: /^expect\[0\]\.evidence: not a regular expression/,
    },
    { lines: replace(5, "expect: [ {"), where: /bad\.yaml:\d+:\d+$/, message: /^\(yaml\): / },
  ];
  for (const c of cases) {
    const err = await errorOf(c.lines);
    t.match(err.where, c.where, `${c.message}: where ${err.where}`);
    t.match(err.message, c.message, err.format());
    t.equal(err.exitCode, 2, "bad input: exit 2");
  }
  const two = await errorOf([...replace(8, "    verdict: BROKEN"), "colour: blue"]);
  t.match(two.where, /bad\.yaml:9:5$/);
  t.match(
    two.format(),
    /\n.*bad\.yaml:12:1: colour: unknown field/,
    "every problem is listed, the first as the message",
  );
});

t.test("a case name that does not exist lists the cases", async (t) => {
  const err = await loadCase("no-such-case").catch((e: unknown) => e);
  t.ok(err instanceof HilError);
  t.match((err as HilError).format(), /no-such-case\.yaml: no such case\ncases in .*erdma-drain-hang-6\.1/);
});
