// KTAP output of a run directory, read by its consumers: the kernel's own reader
// (tools/testing/kunit/kunit_parser.py of the kernel source hil unpacks) and a TAP14 parser (tap's
// tap-parser); the directives each verdict gets (XFAIL and XPASS as kselftest writes them, SKIP,
// ERROR for ERROR and MISS).
import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import t from "tap";
import { renderKtap, runCases } from "../../harness/report/ktap.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import type { Verdict } from "../../harness/verdict.ts";
import { NASTY, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { unpackedKernelSource } from "../support/kernel-source.ts";
import { parseTap as parse } from "../support/tap-parse.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const MUTANT = fileURLToPath(new URL("../fixtures/rundir-mutant", import.meta.url));
const KUNIT_READ = fileURLToPath(new URL("../support/kunit-read.py", import.meta.url));

t.test("the real run: one test per scenario plus the probe stage, rules nested per profile", async (t) => {
  const text = renderKtap(await loadRunDir(FIXTURE));
  t.match(text, /^KTAP version 1\n# erdma-hil: kernel debian:6\.12 \(6\.12\.95\)/);
  const { final, all } = await parse(text);
  t.equal(final.count, 4, "device-probes + 3 scenarios");
  t.equal(final.pass, 4, "device-probes and drain-sq-idle pass, the two XFAIL scenarios are ok");
  t.equal(final.todo, 0, "XFAIL is not TAP's TODO");
  t.equal(final.ok, true, "XFAIL does not fail the stream");
  // 6 probe checks + 3 scenarios x 3 profiles x 11 rules + 3 x 3 profile lines + top level 4
  t.equal(all.length, 6 + 99 + 9 + 4);
  t.equal((text.match(/^ {4}KTAP version 1$/gm) ?? []).length, 4, "one subtest per top-level test");
  t.equal((text.match(/^ {8}KTAP version 1$/gm) ?? []).length, 9, "one subtest per scenario and profile");
  const hang = all.find((r) => r.name.startsWith("rule-hang") && / # XFAIL /.test(r.name));
  t.ok(hang?.ok, "the stuck drain is an ok XFAIL rule");
  t.match(hang?.name, /# XFAIL expected \(.*did not return/, "the injected fault it was expected from");
  t.match(text, /# +stack: \[<0>\] __ib_drain_sq/, "the hung task's stack is diagnostic data");
  t.ok(
    all.some((r) => r.skip && r.name.startsWith("rule-9")),
    "rules that do not apply are SKIP",
  );
});

t.test("every verdict's result line", async (t) => {
  const text = renderKtap(await loadRunDir(await writeRunDir(syntheticRecord())));
  const { final, all } = await parse(text);
  t.equal(final.ok, false, "a FAIL fails the stream");
  t.equal(final.count, 6);
  t.match(text, /^ {8}not ok 1 rule-1 rule 1 title$/m, "FAIL is a plain not ok");
  t.ok(
    text.split("\n").some((l) => l.trim() === `# FAIL: ${NASTY}`),
    "the reason is a diagnostic line",
  );
  t.match(text, /^ {8}not ok 1 rule-1 rule 1 title # ERROR trace lost$/m, "ERROR");
  t.match(text, /^ {4}ok 1 ib # SKIP not meant for siw$/m, "SKIP");
  t.match(text, /^ {4}not ok 1 ib # ERROR MISS: no control channel$/m, "MISS");
  t.match(text, /^ {8}ok 1 rule-5 rule 5 title # XPASS held \(erdma_qp\.c\)$/m, "XPASS");
  t.ok(
    all.some((r) => r.skip),
    "the parser sees the SKIP",
  );
  // TAP parsers know SKIP and TODO only: KTAP's ERROR, XFAIL and XPASS stay in the description
  for (const r of all) {
    const directive = / \\?# (ERROR|XFAIL|XPASS) .*$/.exec(r.name)?.[1];
    const name = r.name.replace(/ \\?# (ERROR|XFAIL|XPASS) .*$/, "");
    t.notMatch(name, /#/, `no # in the description "${r.name}"`);
    if (directive === "ERROR") t.equal(r.ok, false, "ERROR lines are not ok");
    if (directive === "XPASS") t.equal(r.ok, true, "XPASS lines are ok outside --strict");
  }
});

/** The mutant run (PASS, FAIL, XFAIL, MISS, SKIP rules) with the synthetic ERROR, SKIP and XPASS scenarios added. */
async function everyVerdictRun(opts: { strict?: boolean } = {}) {
  const real = JSON.parse(await readFile(`${MUTANT}/verdicts.json`, "utf8"));
  const synthetic = syntheticRecord() as {
    scenarios: Array<{ name: string }>;
    results: Array<{ id: string }>;
  };
  const added = synthetic.scenarios.filter((s) => ["s-error", "s-skip", "s-xpass"].includes(s.name));
  const names = new Set(added.map((s) => s.name));
  real.scenarios.push(...added);
  real.results.push(...synthetic.results.filter((r) => names.has(r.id.replace(/\[.*$/, ""))));
  if (opts.strict) real.strict = true;
  return loadRunDir(await writeRunDir(real));
}

interface KunitNode {
  name: string;
  status: string;
  errors: number;
  counts?: { passed: number; failed: number; crashed: number; skipped: number };
  subtests?: KunitNode[];
}

/** The tree kunit_parser.py of the unpacked kernel source reads from `ktap`. */
async function kunitRead(ktap: string): Promise<KunitNode> {
  const kunit = `${await unpackedKernelSource()}/tools/testing/kunit`;
  const r = await execa("python3", [KUNIT_READ, kunit], { input: ktap, reject: false });
  if (r.exitCode !== 0) throw new Error(`kunit_parser failed (exit ${r.exitCode}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout) as KunitNode;
}

type Leaf = { path: string[]; verdict: Verdict };
type CaseTree = { name: string; verdict: Verdict; children?: CaseTree[] };
const leavesOf = (cases: readonly CaseTree[], path: string[] = []): Leaf[] =>
  cases.flatMap((c) =>
    c.children ? leavesOf(c.children, [...path, c.name]) : [{ path: [...path, c.name], verdict: c.verdict }],
  );
const kunitLeaves = (n: KunitNode, path: string[] = []): Array<{ path: string[]; status: string }> =>
  (n.subtests ?? []).flatMap((c) =>
    c.subtests ? kunitLeaves(c, [...path, c.name]) : [{ path: [...path, c.name], status: c.status }],
  );

/** What each verdict must read as in kunit_parser (TestStatus): ok only where hil's exit code is 0. */
const KUNIT_STATUS: Record<Verdict, string> = {
  PASS: "SUCCESS",
  XFAIL: "SUCCESS",
  XPASS: "SUCCESS",
  SKIP: "SKIPPED",
  FAIL: "FAILURE",
  ERROR: "FAILURE",
  MISS: "FAILURE",
};

t.test("the kernel's kunit_parser reads every verdict with its status", async (t) => {
  const run = await everyVerdictRun();
  const ktap = renderKtap(run);
  const tree = await kunitRead(ktap);
  const want = leavesOf(runCases(run));
  t.same(
    [...new Set(want.map((l) => l.verdict))].sort(),
    ["ERROR", "FAIL", "MISS", "PASS", "SKIP", "XFAIL", "XPASS"],
    "the run has a test case of every verdict",
  );
  t.equal(tree.errors, 0, "kunit_parser reports no error in the stream");
  const got = kunitLeaves(tree);
  t.equal(got.length, want.length, "one kunit test case per rule, probe check and unjudged profile");
  const wrong = want.flatMap((w, i) => {
    const g = got[i];
    const status = KUNIT_STATUS[w.verdict];
    const name = w.path.map((p) => p.replace(/#/g, "no.")).join(" / ");
    return g && g.path.join(" / ") === name && g.status === status
      ? []
      : [`${name} (${w.verdict}): want ${status}, kunit read ${g?.path.join(" / ")} ${g?.status}`];
  });
  t.same(wrong, [], "every test case has its verdict's status, under its own name");
  const n = (...v: Verdict[]) => want.filter((l) => v.includes(l.verdict)).length;
  t.same(
    tree.counts,
    {
      passed: n("PASS", "XFAIL", "XPASS"),
      failed: n("FAIL", "ERROR", "MISS"),
      crashed: 0,
      skipped: n("SKIP"),
    },
    "kunit_parser's totals",
  );
  t.equal(tree.status, "FAILURE", "a run with a FAIL fails");
  const scenario = (name: string) => tree.subtests?.find((s) => s.name === name);
  t.equal(scenario("drain-rq-idle")?.status, "SUCCESS", "a scenario that passes");
  t.equal(scenario("s-skip")?.status, "SKIPPED", "a scenario that was not run");
  t.equal(scenario("post-send-in-error")?.status, "FAILURE", "a scenario with a FAIL and a MISS");
  t.match(ktap, /^ {8}ok \d+ rule-5 .* # XFAIL expected \(/m, "XFAIL as kselftest writes it");
});

t.test("under --strict an XPASS fails: kunit_parser reads it as a failure", async (t) => {
  const tree = await kunitRead(renderKtap(await everyVerdictRun({ strict: true })));
  const xpass = kunitLeaves(tree).filter((l) => l.path[0] === "s-xpass");
  t.same(
    xpass.map((l) => l.status),
    ["FAILURE"],
  );
});

t.test("a TAP14 parser reads the same stream: ok exactly where hil's exit code is 0", async (t) => {
  const run = await everyVerdictRun();
  const { final, all } = await parse(renderKtap(run));
  t.equal(final.ok, false, "a FAIL fails the stream");
  t.equal(final.count, runCases(run).length, "the top-level tests");
  t.same(
    final.failures.filter((f) => f.tapError),
    [],
    "no TAP parse errors",
  );
  const DIRECTIVE: Partial<Record<Verdict, string>> = {
    XFAIL: "XFAIL",
    XPASS: "XPASS",
    ERROR: "ERROR",
    MISS: "ERROR MISS:",
  };
  const wrong: string[] = [];
  for (const w of leavesOf(runCases(run))) {
    const full = w.path.map((p) => p.replace(/#/g, "no.")).join(" > ");
    const r = all.find((x) => x.fullname === full || x.fullname.startsWith(`${full} # `));
    const ok = !["FAIL", "ERROR", "MISS"].includes(w.verdict);
    const directive = DIRECTIVE[w.verdict];
    if (
      !r ||
      r.ok !== ok ||
      Boolean(r.skip) !== (w.verdict === "SKIP") ||
      r.todo !== false ||
      (directive !== undefined && !r.fullname.startsWith(`${full} # ${directive} `))
    )
      wrong.push(
        `${full} (${w.verdict}): ${r ? `ok=${r.ok} skip=${r.skip} todo=${r.todo} ${r.fullname}` : "no result"}`,
      );
  }
  t.same(wrong, [], "every test case: ok unless FAIL, ERROR or MISS; SKIP is TAP's SKIP; nothing is TODO");
});

t.test(
  "a kernel source that is not unpacked is unpacked; one that cannot be is an error naming it, not a skip",
  async (t) => {
    const dir = t.testdir({ "linux-0.0.tar": "not a kernel", cache: {} });
    const saved = process.env.HIL_CACHE_DIR;
    process.env.HIL_CACHE_DIR = join(dir, "cache");
    t.teardown(() => {
      if (saved === undefined) delete process.env.HIL_CACHE_DIR;
      else process.env.HIL_CACHE_DIR = saved;
    });
    await t.rejects(
      unpackedKernelSource(`${dir}/linux-0.0.tar`),
      /tar -x failed: tar -xvf \S+linux-0\.0\.tar /,
    );
    t.same(readdirSync(join(dir, "cache", "kernel-base")), [], "no half-unpacked entry is left");
  },
);
