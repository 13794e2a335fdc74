// `hil run --repeat n` without a guest: the expansion (A#1..A#n, then B; names, ports), the suite
// driven through a fake boot and a scripted executor (each repetition judged and traced on its
// own, a reboot after a hang, nothing new for n = 1), whether the repetitions agree (stability),
// the table, the exit code, the reports reading a repeated run, and the option's bad input.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { FIRST_PORT } from "../../harness/protocol/guest-net.ts";
import { renderHtml } from "../../harness/report/html.ts";
import { renderJunit } from "../../harness/report/junit.ts";
import { renderKcidb } from "../../harness/report/kcidb.ts";
import { validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { renderKtap } from "../../harness/report/ktap.ts";
import { renderRepeatedTable, renderScenarioTable } from "../../harness/report/scenario-table.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { stabilityCell } from "../../harness/rundir/stability.ts";
import type { Scenario } from "../../harness/scenario/schema.ts";
import {
  expandRepeats,
  type RepetitionVerdict,
  repetitionLabel,
  repetitionName,
  stabilityOf,
} from "../../harness/suite/repeat.ts";
import { type SuiteReport, suiteResults } from "../../harness/suite/results.ts";
import { exitCodeFor } from "../../harness/verdict.ts";
import { Step } from "../../util/progress.ts";
import { writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { type Act, runFakeSuite, scenario } from "../support/fake-suite.ts";
import { parseTap } from "../support/tap-parse.ts";

function suite(t: Test, scenarios: Scenario[], script: (name: string, nth: number) => Act, repeat?: number) {
  return runFakeSuite(t.testdir({}), scenarios, script, repeat !== undefined ? { repeat } : {});
}

t.test("the expansion: each scenario n times in a row, names #k, a port each", async (t) => {
  const [a, b] = [scenario("drain-a"), scenario("drain-b")];
  const runs = expandRepeats([a, b], 3, 7600);
  t.same(
    runs.map((r) => [r.name, r.scenario.name, r.repetition, r.of, r.port]),
    [
      ["drain-a#1", "drain-a", 1, 3, 7600],
      ["drain-a#2", "drain-a", 2, 3, 7601],
      ["drain-a#3", "drain-a", 3, 3, 7602],
      ["drain-b#1", "drain-b", 1, 3, 7603],
      ["drain-b#2", "drain-b", 2, 3, 7604],
      ["drain-b#3", "drain-b", 3, 3, 7605],
    ],
  );
  t.same(
    expandRepeats([a, b], 1, 7600).map((r) => [r.name, r.port]),
    [
      ["drain-a", 7600],
      ["drain-b", 7601],
    ],
    "n = 1: the names and ports of today",
  );
  t.equal(repetitionName("drain-qp-idle", 2, 5), "drain-qp-idle#2");
  t.equal(repetitionName("drain-qp-idle", 1, 1), "drain-qp-idle");
  t.equal(repetitionLabel(runs[1] as (typeof runs)[number]), "drain-a #2/3");
  t.equal(repetitionLabel(expandRepeats([a], 1, 7600)[0] as (typeof runs)[number]), "drain-a");
  for (const bad of [0, 101, 2.5, Number.NaN])
    t.throws(() => expandRepeats([a], bad, 7600), /from 1 to 100/, `${bad} repetitions`);
  t.throws(
    () =>
      expandRepeats(
        Array.from({ length: 600 }, () => a),
        100,
        7600,
      ),
    /need 60000 ports from 7600/,
    "no port past 65535",
  );
});

t.test("the suite repeats each scenario on one guest, rebooted after a hang", async (t) => {
  const updates: string[] = [];
  const update = Step.prototype.update;
  Step.prototype.update = function (this: Step, n: number, total?: number, detail?: string) {
    updates.push(`${n}/${total} ${detail}`);
    return update.call(this, n, total, detail);
  };
  t.teardown(() => {
    Step.prototype.update = update;
  });
  const scenarios = [
    scenario("drain-a"),
    scenario("drain-b"),
    scenario("drain-c", ["drivers: [siw]"]),
    scenario("drain-d"),
  ];
  const { dir, fakes, report } = await suite(
    t,
    scenarios,
    (name, nth) => (name === "drain-b" && nth === 2 ? "hang" : "pass"),
    3,
  );
  t.same(
    report.scenarios.map((s) => s.name),
    ["a", "b", "c", "d"].flatMap((x) => [1, 2, 3].map((k) => `drain-${x}#${k}`)),
    "A#1..#3, then B, in the given order; the scenario not meant for erdma is SKIP in each",
  );
  t.same(
    fakes.runs.map((r) => `${r.scenario} ${r.port}`),
    [
      "drain-a 7600",
      "drain-a 7601",
      "drain-a 7602",
      "drain-b 7603",
      "drain-b 7604",
      "drain-b 7605",
      "drain-d 7609",
      "drain-d 7610",
      "drain-d 7611",
    ],
    "each repetition on its own port; the guest sees the scenario's own name",
  );
  t.equal(FIRST_PORT, 7600);
  t.equal(report.boots, 2, "one reboot, after the hang");
  t.equal(fakes.disposed, 2, "both guests disposed");
  t.same(updates.slice(0, 4), [
    "0/9 drain-a #1/3",
    "1/9 drain-a #2/3",
    "2/9 drain-a #3/3",
    "3/9 drain-b #1/3",
  ]);
  t.equal(report.repeat, 3);
  const b2 = report.scenarios.find((s) => s.name === "drain-b#2");
  t.match(b2, { scenario: "drain-b", repetition: 2, trace: "traces/drain-b#2.jsonl" });
  t.same(
    b2?.judgements.map((j) => j.verdict),
    ["FAIL", "FAIL"],
  );
  t.match(
    report.scenarios.find((s) => s.name === "drain-c#3"),
    {
      scenario: "drain-c",
      repetition: 3,
      outcome: { verdict: "SKIP", reason: "meant for siw, not erdma" },
    },
  );
  for (const name of ["drain-a#1", "drain-b#2", "drain-d#3"])
    t.ok(existsSync(join(dir, "traces", `${name}.jsonl`)), `traces/${name}.jsonl`);
  t.notOk(existsSync(join(dir, "traces", "drain-a.jsonl")), "no trace under the bare name");
  t.same(
    report.stability?.map((s) => `${s.scenario} ${s.profile} ${stabilityCell(s)}`),
    [
      "drain-a ib PASS",
      "drain-a linux PASS",
      "drain-b ib FLAKY 1/3 FAIL",
      "drain-b linux FLAKY 1/3 FAIL",
      "drain-c ib SKIP",
      "drain-c linux SKIP",
      "drain-d ib PASS",
      "drain-d linux PASS",
    ],
  );
  t.match(report.stability?.[3], {
    verdicts: { PASS: 2, FAIL: 1 },
    flaky: true,
    worst: "FAIL",
    first: { verdict: "PASS", reason: "every rule holds" },
    differs: { repetition: 2, verdict: "FAIL", reason: /^rule hang: drain \(step 1\) did not return/ },
  });

  const results = suiteResults(report);
  t.equal(results.length, 24, "a result per repetition and profile");
  t.equal(results[0]?.id, "drain-a#1[ib]");
  t.equal(exitCodeFor(results), 1, "a flaky scenario with a FAIL fails the run");
  const table = renderRepeatedTable(results, report.stability ?? []).split("\n");
  t.same(table, [
    "scenario  ib              linux           reason",
    "drain-a   PASS            PASS            every rule holds",
    "drain-b   FLAKY 1/3 FAIL  FLAKY 1/3 FAIL  #2 FAIL: rule hang: drain (step 1) did not return within 10004 ms; the worker is D",
    "drain-c   SKIP            SKIP            meant for siw, not erdma",
    "drain-d   PASS            PASS            every rule holds",
    "hil: 16 passed, 2 failed, 6 skip, 1 flaky",
    "",
  ]);
});

t.test("n = 1: the names, ports, report and table of today", async (t) => {
  const { fakes, report, dir } = await suite(t, [scenario("drain-a"), scenario("drain-b")], () => "pass");
  t.same(
    report.scenarios.map((s) => s.name),
    ["drain-a", "drain-b"],
  );
  t.same(
    fakes.runs.map((r) => r.port),
    ["7600", "7601"],
  );
  t.same(Object.keys(report), ["driver", "executor", "deviceProfile", "scenarios", "boots", "timings"]);
  t.same(Object.keys(report.scenarios[0] ?? {}), [
    "name",
    "file",
    "covers",
    "judgements",
    "trace",
    "observations",
    "durationMs",
  ]);
  t.ok(existsSync(join(dir, "traces", "drain-a.jsonl")));
  const explicit = await suite(t, [scenario("drain-a")], () => "pass", 1);
  t.equal(explicit.report.repeat, undefined, "--repeat 1 is no repeat");
  t.equal(explicit.report.stability, undefined);
  t.match(renderScenarioTable(suiteResults(report)), /^drain-a {3}PASS {3}PASS {3}9:1 +every rule holds$/m);
});

t.test("stability: agreement, a flaky FAIL, flaky between passing verdicts", async (t) => {
  const v = (scenario: string, repetition: number, verdict: RepetitionVerdict["verdict"], reason = "r") => ({
    scenario,
    repetition,
    profile: "linux",
    verdict,
    reason: `${reason} ${repetition}`,
  });
  const [stable, flaky, passing, errored] = stabilityOf([
    v("a", 1, "PASS"),
    v("a", 2, "PASS"),
    // out of order: repetitions are sorted
    v("b", 3, "FAIL"),
    v("b", 1, "PASS"),
    v("b", 2, "FAIL"),
    v("b", 4, "PASS"),
    v("b", 5, "FAIL"),
    v("c", 1, "XFAIL"),
    v("c", 2, "PASS"),
    v("c", 3, "XPASS"),
    v("e", 1, "PASS"),
    v("e", 2, "ERROR"),
  ]);
  t.same(stable, {
    scenario: "a",
    profile: "linux",
    repetitions: 2,
    verdicts: { PASS: 2 },
    flaky: false,
    worst: "PASS",
    first: { verdict: "PASS", reason: "r 1" },
  });
  t.same(flaky, {
    scenario: "b",
    profile: "linux",
    repetitions: 5,
    verdicts: { PASS: 2, FAIL: 3 },
    flaky: true,
    worst: "FAIL",
    first: { verdict: "PASS", reason: "r 1" },
    differs: { repetition: 2, verdict: "FAIL", reason: "r 2" },
  });
  t.equal(stabilityCell(flaky as NonNullable<typeof flaky>), "FLAKY 3/5 FAIL");
  t.match(passing, { flaky: true, worst: "XFAIL", verdicts: { PASS: 1, XFAIL: 1, XPASS: 1 } });
  t.equal(stabilityCell(passing as NonNullable<typeof passing>), "FLAKY 1/3 XFAIL");
  t.match(errored, { flaky: true, worst: "ERROR" });
});

t.test("exit codes of repeated runs", async (t) => {
  const bug = [
    "known_bugs:",
    "  - { driver: erdma, rules: [hang, 1, 5, 9], failure: 'did not return|never completed', reference: erdma_qp.c:erdma_drain, note: racy }",
  ];
  // a recorded bug seen in every repetition: XFAIL each time, exit 0
  const always = await suite(t, [scenario("drain-bug", bug)], () => "hang", 3);
  t.same(always.report.stability?.map(stabilityCell), ["XFAIL", "XFAIL"]);
  t.equal(exitCodeFor(suiteResults(always.report)), 0);
  // the recorded bug seen in some repetitions only: flaky, shown, not a failure
  const sometimes = await suite(
    t,
    [scenario("drain-bug", bug)],
    (_n, nth) => (nth === 2 ? "hang" : "pass"),
    3,
  );
  t.same(sometimes.report.stability?.map(stabilityCell), ["FLAKY 1/3 XFAIL", "FLAKY 1/3 XFAIL"]);
  const results = suiteResults(sometimes.report);
  t.equal(exitCodeFor(results), 0, "flaky between XPASS and XFAIL exits 0");
  t.match(
    renderRepeatedTable(results, sometimes.report.stability ?? []),
    /^drain-bug {2}FLAKY 1\/3 XFAIL {2}FLAKY 1\/3 XFAIL {2}#2 XFAIL: rule hang: known bug \(erdma_qp\.c:erdma_drain\)/m,
  );
  t.match(renderRepeatedTable(results, sometimes.report.stability ?? []), /, 1 flaky\n$/);
  // the first repetition is the worse one: its reason is named too
  const firstBad = await suite(t, [scenario("drain-a")], (_n, nth) => (nth === 1 ? "hang" : "pass"), 2);
  t.match(
    renderRepeatedTable(suiteResults(firstBad.report), firstBad.report.stability ?? []),
    /^drain-a {3}FLAKY 1\/2 FAIL {2}FLAKY 1\/2 FAIL {2}#2 PASS: every rule holds; #1 FAIL: rule hang: drain/m,
  );
  t.equal(exitCodeFor(suiteResults(firstBad.report)), 1);
  // a repetition whose run broke: ERROR, could not judge (3)
  const broke = await suite(t, [scenario("drain-a")], (_n, nth) => (nth === 3 ? "break" : "pass"), 3);
  t.same(broke.report.stability?.map(stabilityCell), ["FLAKY 1/3 ERROR", "FLAKY 1/3 ERROR"]);
  t.equal(exitCodeFor(suiteResults(broke.report)), 3);
  t.equal(broke.report.boots, 1, "the broken run was the last: no reboot");
  // all agree, all pass
  const fine = await suite(t, [scenario("drain-a")], () => "pass", 4);
  t.equal(exitCodeFor(suiteResults(fine.report)), 0);
  t.match(renderRepeatedTable(suiteResults(fine.report), fine.report.stability ?? []), /, 0 flaky\n$/);
});

/** verdicts.json as `hil run` writes it for a report. */
function record(report: SuiteReport) {
  return {
    kernel: "debian:6.12",
    release: "6.12.95",
    ...report,
    device: { profile: "erdma-reflush", trace: "hw-trace.jsonl" },
    startedAt: "2025-01-01T00:00:00.000Z",
    wallMs: 1000,
    results: suiteResults(report),
  };
}

t.test("the reports read a repeated run: ktap, junit, kcidb, html", async (t) => {
  const { report, dir } = await suite(
    t,
    [scenario("drain-a"), scenario("drain-b")],
    (name, nth) => (name === "drain-b" && nth === 2 ? "hang" : "pass"),
    3,
  );
  const { writeFile } = await import("node:fs/promises");
  await writeFile(join(dir, "verdicts.json"), `${JSON.stringify(record(report), null, 2)}\n`);
  const run = await loadRunDir(dir);
  t.equal(run.record.stability?.length, 4, "the schema keeps the stability entries");
  t.equal(run.record.scenarios?.[1]?.repetition, 2);

  const ktap = renderKtap(run);
  const { final, all } = await parseTap(ktap);
  t.equal(final.count, 6, "a top-level test per repetition");
  t.equal(final.fail, 1, "the repetition that hung");
  t.ok(
    all.some((r) => r.name === "drain-b repetition 2" && !r.ok),
    "named <scenario> repetition <k>",
  );
  t.notMatch(ktap, /no\.\d/, "no mangled '#'");
  t.match(
    ktap,
    /^# stability: drain-b linux: flaky over 3 repetitions, pass:2 fail:1 \(first differing: repetition 2 FAIL\)$/m,
  );
  t.match(ktap, /^# stability: drain-a ib: stable over 3 repetitions, pass:3$/m);

  const junit = renderJunit(run);
  t.equal((junit.match(/<testsuite /g) ?? []).length, 6, "a testsuite per repetition");
  t.match(
    junit,
    /<testsuite name="drain-b#2" [^>]*failures="7"/,
    "the hang and the WRs it left unflushed (rules 1, 5; 9 under linux)",
  );
  t.match(junit, /<property name="scenario" value="drain-b"\/>\n\s*<property name="repetition" value="2"\/>/);
  t.match(junit, /^<testsuites name="erdma-hil" tests="\d+" failures="7" errors="0"/m);

  const kcidb = await renderKcidb(run);
  const profileTests = kcidb.tests.filter((x) => /^erdma_hil\.drain-b\.linux$/.test(x.path));
  t.same(
    profileTests.map((x) => [x.status, x.misc?.repetition]),
    [
      ["PASS", 1],
      ["FAIL", 2],
      ["PASS", 3],
    ],
    "the repetitions side by side under the scenario's path",
  );
  t.equal(new Set(kcidb.tests.map((x) => x.id)).size, kcidb.tests.length, "every test id is unique");
  t.notOk(
    kcidb.tests.some((x) => x.path.includes("#") || /drain-[ab]_\d/.test(x.path)),
    "no repetition in a path",
  );
  const valid = await validateKcidb(kcidb);
  t.same(valid.errors, []);

  const html = await renderHtml(run);
  t.match(html, /<h2>Stability over 3 repetitions<\/h2>/);
  t.match(
    html,
    /<td class="v v-FAIL">FLAKY 1\/3 FAIL<\/td>.*<td class="why">[^<]*PASS 2, FAIL 1; repetition 2: FAIL: rule hang: /,
    "the cell, and why in the row's last column (no hover-only title)",
  );
  t.match(html, /<a href="#s-drain-b_2">drain-b#2<\/a>/, "a row and a section per repetition");
  t.match(html, /<section class="scenario" id="s-drain-b_2" data-scenario="drain-b#2">/);

  // a record without the stability entries (or written by hand) still reads, its names parsed
  const bare = record(report) as Record<string, unknown>;
  delete bare.stability;
  for (const s of bare.scenarios as Array<Record<string, unknown>>) {
    delete s.scenario;
    delete s.repetition;
    delete s.trace;
  }
  const bareRun = await loadRunDir(await writeRunDir(bare));
  t.match(renderKtap(bareRun), /^not ok 5 drain-b repetition 2$/m);
  t.ok((await renderKcidb(bareRun)).tests.some((x) => x.path === "erdma_hil.drain-b.linux"));
  // a stability entry that is not one is one clear error
  const broken = { ...record(report), stability: [{ scenario: "x", profile: "ib", flaky: "maybe" }] };
  await t.rejects(loadRunDir(await writeRunDir(broken)), { message: /is not a hil run record/ });
});

t.test("hil run --repeat: bad input is one clear error, exit 2, before anything is built", async (t) => {
  const iso = isolate();
  t.teardown(() => rmSync(iso.tmp, { recursive: true, force: true }));
  for (const bad of ["0", "101", "2.5", "x", "-1"]) {
    const r = await hil(["run", "--driver", "siw", "--repeat", bad], iso.env);
    t.equal(r.exitCode, 2, `--repeat ${bad}`);
    t.match(r.stderr, /expected a whole number from 1 to 100/);
  }
  const smoke = await hil(["run", "--no-device", "--repeat", "3"], iso.env);
  t.equal(smoke.exitCode, 2);
  t.match(smoke.stderr, /--repeat repeats the drain suite's scenarios/);
  const help = await hil(["run", "--help"], iso.env);
  t.match(help.stdout, /--repeat <n>/);
  t.match(help.stdout, /FLAKY 3\/5 FAIL/);
  t.same(leftovers(iso).entries, [], "nothing left in its TMPDIR");
});
