/**
 * KTAP version 1 (Documentation/dev-tools/ktap.rst, https://docs.kernel.org/dev-tools/ktap.html),
 * kselftest style: one top-level test for the probe stage and one per scenario; inside a scenario
 * one subtest per oracle profile, and inside that one test case per rule. Subtests open with an
 * indented "KTAP version 1" line and a "# Subtest: <name>" line, as KUnit prints them, indented by
 * four spaces as KUnit does (and as TAP14 requires of a child; KTAP readers take any indentation).
 *
 * Verdicts to result lines (the spec's "Test case result lines": `<result> <number>
 * [<description>][ # [<directive>] [<diagnostic data>]]`; a reader that does not know a directive
 * falls back to the ok / not ok result). The ok / not ok of every line says what hil's exit code
 * says: ok for what does not fail the run, not ok for what does.
 * - PASS `ok`; FAIL `not ok`; SKIP `ok ... # SKIP <reason>`.
 * - XFAIL `ok ... # XFAIL <reason>` (the oracle's reason says what was expected: a known bug and
 *   its record, or the fault the scenario injects): the spec's directive for a test "expected to fail", written
 *   as kselftest writes it (tools/testing/selftests/kselftest.h, ksft_test_result_code: "ok" and
 *   " # XFAIL "). kunit_parser.py knows SKIP alone and reads it as a success; a TAP14 reader, which
 *   knows SKIP and TODO, as a pass. The rule did fail: the diagnostic lines before it say how.
 * - XPASS `ok ... # XPASS <reason>` as kselftest writes it; `not ok` in a --strict run, where an
 *   XPASS fails the run.
 * - ERROR `not ok ... # ERROR <reason>`: the spec's ERROR, "the execution of a test has failed",
 *   with "not ok" as it asks. A failure for every reader.
 * - MISS (the harness could not run or judge it) `not ok ... # ERROR MISS: <reason>`: not a pass
 *   (hil exits 3 on it), and not a SKIP either, which every reader counts as ok; of the spec's
 *   directives ERROR is the one that says the test did not get to a verdict.
 * The reason and evidence of every line that is not a PASS follow as diagnostic lines ("# ...")
 * before it.
 *
 * A repeated run (--repeat n) has a top-level test per repetition, named `<scenario> repetition
 * <k>` (a description may not hold the "#" of `<scenario>#<k>`), and after the totals one
 * diagnostic line per scenario and oracle profile saying whether its repetitions agree.
 *
 * Written here rather than with a TAP library: tap's own writer (@tapjs/core, TAP14) opens a
 * subtest with no KTAP version line and knows the SKIP and TODO directives only, so it cannot write
 * the XFAIL, XPASS and ERROR lines above; npm has no package that writes KTAP.
 *
 * `hil diff` writes its KTAP with the same writer (renderKtapCases, from report/diff-report.ts):
 * a test per compared cell, what moved as diagnostic lines (`notes`) even on a test that passes.
 */

import {
  type RunDir,
  repetitionOf,
  runSetting,
  scenariosOf,
  stabilityOf,
  stageChecks,
} from "../rundir/read.ts";
import type { RunRule, RunScenario } from "../rundir/schema.ts";
import type { Verdict } from "../verdict.ts";

/** A KTAP test: its result line, the diagnostic lines before it, its subtests. */
export interface KtapCase {
  name: string;
  verdict: Verdict;
  reason: string;
  evidence?: readonly string[];
  /** diagnostic lines printed whatever the verdict (hil diff: what moved, on a test that passes) */
  notes?: readonly string[];
  children?: KtapCase[];
}

/** A description may hold any character but "#" and a newline. */
function description(text: string): string {
  return text
    .replace(/[\r\n]+/g, " ")
    .replace(/#/g, "no.")
    .trim();
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, " ").trim();
}

function resultLine(n: number, c: KtapCase, strict: boolean): string {
  const name = description(c.name);
  const why = oneLine(c.reason);
  switch (c.verdict) {
    case "PASS":
      return `ok ${n} ${name}`;
    case "SKIP":
      return `ok ${n} ${name} # SKIP ${why}`;
    case "FAIL":
      return `not ok ${n} ${name}`;
    case "XFAIL":
      return `ok ${n} ${name} # XFAIL ${why}`;
    case "XPASS":
      return `${strict ? "not ok" : "ok"} ${n} ${name} # XPASS ${why}`;
    case "ERROR":
      return `not ok ${n} ${name} # ERROR ${why}`;
    case "MISS":
      return `not ok ${n} ${name} # ERROR MISS: ${why}`;
  }
}

function diagnostics(c: KtapCase): string[] {
  const notes = (c.notes ?? []).flatMap((n) => n.split("\n"));
  if (c.verdict === "PASS" || c.children) return notes.map((l) => `# ${l}`.trimEnd());
  const lines = c.verdict === "SKIP" ? [] : [`${c.verdict}: ${oneLine(c.reason)}`];
  lines.push(...notes);
  for (const e of c.evidence ?? []) lines.push(...e.split("\n").map((l) => `  ${l}`));
  return lines.map((l) => `# ${l}`.trimEnd());
}

function emit(cases: readonly KtapCase[], indent: string, out: string[], strict: boolean): void {
  out.push(`${indent}1..${cases.length}`);
  cases.forEach((c, i) => {
    if (c.children) {
      const inner = `${indent}    `;
      out.push(`${inner}KTAP version 1`, `${inner}# Subtest: ${description(c.name)}`);
      emit(c.children, inner, out, strict);
    }
    for (const d of diagnostics(c)) out.push(`${indent}${d}`);
    out.push(`${indent}${resultLine(i + 1, c, strict)}`);
  });
}

/** The rule's reason, naming its known-bug record where the reason does not (the oracle's XFAIL and XPASS reasons say whether a known bug or an injected fault is expected). */
function ruleCase(r: RunRule): KtapCase {
  const ref = r.knownBug?.reference;
  const known = ref && !r.reason.includes(ref) ? ` (${ref})` : "";
  return {
    name: `rule-${r.rule} ${r.title}`,
    verdict: r.verdict,
    reason: `${r.reason}${r.verdict === "XFAIL" || r.verdict === "XPASS" ? known : ""}`,
    ...(r.evidence ? { evidence: r.evidence } : {}),
  };
}

/** A scenario's test name: its own, or `<scenario> repetition <k>` for a repetition. */
function scenarioName(s: RunScenario): string {
  const r = repetitionOf(s);
  return r.repetition === undefined ? s.name : `${r.scenario} repetition ${r.repetition}`;
}

/** The cases of a run: the probe stage (when there was one), then each scenario. */
export function runCases(run: RunDir): KtapCase[] {
  const cases: KtapCase[] = [];
  const stage = stageChecks(run);
  if (stage.length > 0) {
    const verdicts = stage.map((c) => c.verdict);
    const worst = verdicts.find((v) => v !== "PASS" && v !== "SKIP") ?? "PASS";
    cases.push({
      name: run.record.probe ? "device-probes" : "stage",
      verdict: worst,
      reason: stage.find((c) => c.verdict === worst)?.reason ?? "",
      children: stage.map((c) => ({
        name: c.id,
        verdict: c.verdict,
        reason: c.reason,
        ...(c.evidence ? { evidence: c.evidence } : {}),
      })),
    });
  }
  for (const s of scenariosOf(run)) {
    const profiles = s.judgements.map(
      (j): KtapCase => ({
        name: j.profile,
        verdict: j.verdict,
        reason: s.outcome?.reason ?? j.rules.find((r) => r.verdict === j.verdict)?.reason ?? "",
        ...(j.rules.length > 0 ? { children: j.rules.map(ruleCase) } : {}),
      }),
    );
    // under --strict an XPASS fails the run, so it outranks an XFAIL
    const order: Verdict[] = run.record.strict
      ? ["FAIL", "ERROR", "MISS", "XPASS", "XFAIL", "PASS", "SKIP"]
      : ["FAIL", "ERROR", "MISS", "XFAIL", "XPASS", "PASS", "SKIP"];
    const worst = order.find((v) => profiles.some((p) => p.verdict === v)) ?? s.outcome?.verdict ?? "SKIP";
    cases.push({
      name: scenarioName(s),
      verdict: worst,
      reason: s.outcome?.reason ?? profiles.find((p) => p.verdict === worst)?.reason ?? "",
      ...(profiles.length > 0 ? { children: profiles } : {}),
    });
  }
  return cases;
}

/** A KTAP document of these top-level tests: the version line, the header's diagnostic lines, the tests, the trailer's. */
export function renderKtapCases(
  header: readonly string[],
  cases: readonly KtapCase[],
  trailer: readonly string[] = [],
  strict = false,
): string {
  const out = ["KTAP version 1", ...header.map((h) => `# ${oneLine(h)}`)];
  emit(cases, "", out, strict);
  out.push(...trailer.map((h) => `# ${oneLine(h)}`));
  return `${out.join("\n")}\n`;
}

export function renderKtap(run: RunDir): string {
  const r = run.record;
  const what = runSetting(run);
  const count = (v: Verdict) => r.results.filter((x) => x.verdict === v).length;
  const trailer = [
    `totals: pass:${count("PASS")} fail:${count("FAIL")} xfail:${count("XFAIL")} xpass:${count("XPASS")} skip:${count("SKIP")} error:${count("ERROR")} miss:${count("MISS")}`,
  ];
  for (const st of stabilityOf(run)) {
    const counts = Object.entries(st.verdicts)
      .map(([v, n]) => `${v.toLowerCase()}:${n}`)
      .join(" ");
    const differs = st.differs
      ? ` (first differing: repetition ${st.differs.repetition} ${st.differs.verdict})`
      : "";
    trailer.push(
      `stability: ${description(st.scenario)} ${st.profile}: ${st.flaky ? "flaky" : "stable"} over ${st.repetitions} repetitions, ${counts}${differs}`,
    );
  }
  return renderKtapCases([`erdma-hil: ${what.join(", ")}`], runCases(run), trailer, r.strict === true);
}
