/**
 * `hil repro`: runs a known-bug case as one job and says whether it behaves as the case states:
 * a bug case (one that expects a FAIL) REPRODUCES or is NOT REPRODUCED; a fix case (every verdict
 * it expects passes) PASSES or DOES NOT PASS. The evidence is the quoted events of the rules the
 * case names. The scenarios' own known_bugs/expect_fail records are left out: a case states the
 * oracle's verdicts.
 */
import type { RunJudgement, RunRecord, RunRule } from "../../rundir/schema.ts";
import { writeRunFile } from "../../rundir/write.ts";
import type { Scenario } from "../../scenario/schema.ts";
import { EXIT_ALL_PASS, EXIT_FAILED, EXIT_NOT_JUDGED, type Verdict } from "../../verdict.ts";
import { describeJob, type JobRecord, runJob } from "../job/job.ts";
import type { Expectation, ReproCase } from "./case.ts";

export interface RuleCheck {
  rule: string;
  want: Verdict;
  got: Verdict | undefined;
  reason: string;
}

export interface ExpectationCheck {
  /** index in the case's expect list */
  index: number;
  scenario: string;
  profile: string;
  want: Verdict;
  got: Verdict | undefined;
  reason: string;
  rules: RuleCheck[];
  evidence?: { pattern: string; matched?: string };
  /** the FAILing rules (those the expectation names, else all): reason and quoted events */
  quotes: RuleQuote[];
  met: boolean;
}

export interface RuleQuote {
  rule: string;
  verdict: Verdict;
  reason: string;
  evidence: string[];
}

export type ReproWord = "REPRODUCES" | "NOT REPRODUCED" | "PASSES" | "DOES NOT PASS";

export interface ReproOutcome {
  case: string;
  bug: string;
  reference: string;
  /** a bug case expects a FAIL; a fix case expects none */
  kind: "bug" | "fix";
  word: ReproWord;
  asStated: boolean;
  /** some expected verdict could not be judged (ERROR, MISS, or the scenario did not run) */
  unjudged: boolean;
  checks: ExpectationCheck[];
  exitCode: number;
}

export const REPRO_FILE = "repro.json";

/** The case's scenarios as repro runs them: without the records that turn FAILs into XFAILs. */
export function withoutBugRecords(scenarios: readonly Scenario[]): Scenario[] {
  return scenarios.map(({ known_bugs: _k, expect_fail: _e, ...s }) => s);
}

export function caseKind(expect: readonly Expectation[]): "bug" | "fix" {
  return expect.some((e) => e.verdict === "FAIL" || Object.values(e.rules ?? {}).includes("FAIL"))
    ? "bug"
    : "fix";
}

/** Quoted events shown per rule (the oracle keeps at most 12, plus the hardware events). */
const MAX_QUOTED_LINES = 24;

function quotesOf(rules: readonly RunRule[]): RuleQuote[] {
  return rules.map((r) => ({
    rule: r.rule,
    verdict: r.verdict,
    reason: r.reason,
    evidence: (r.evidence ?? []).slice(0, MAX_QUOTED_LINES),
  }));
}

function checkOne(
  e: Expectation,
  index: number,
  j: RunJudgement | undefined,
  scenario: string,
  profile: string,
  outcome?: { reason: string },
): ExpectationCheck {
  const rules: RuleCheck[] = Object.entries(e.rules ?? {}).map(([rule, want]) => {
    const r = j?.rules.find((x) => x.rule === rule);
    return { rule, want, got: r?.verdict, reason: r?.reason ?? "not judged" };
  });
  const named = new Set(Object.keys(e.rules ?? {}));
  const failing = (j?.rules ?? []).filter(
    (r) => r.verdict === "FAIL" && (named.size === 0 || named.has(r.rule)),
  );
  let evidence: ExpectationCheck["evidence"];
  if (e.evidence) {
    const re = new RegExp(e.evidence);
    const lines = failing.flatMap((r) => [r.reason, ...(r.evidence ?? [])]);
    const matched = lines.find((l) => re.test(l));
    evidence = { pattern: e.evidence, ...(matched ? { matched } : {}) };
  }
  const got = j?.verdict;
  const met =
    got === e.verdict &&
    rules.every((r) => r.got === r.want) &&
    (evidence === undefined || evidence.matched !== undefined);
  const failingRule = (j?.rules ?? []).find((r) => r.verdict === got && r.verdict !== "PASS");
  return {
    index,
    scenario,
    profile,
    want: e.verdict,
    got,
    reason:
      outcome?.reason ??
      (failingRule
        ? `rule ${failingRule.rule}: ${failingRule.reason}`
        : got
          ? "every rule holds"
          : "not judged"),
    rules,
    ...(evidence ? { evidence } : {}),
    quotes: quotesOf(failing),
    met,
  };
}

/** Matches the case's expectations against a run's verdicts (pure: the tests feed it records). */
export function evaluateCase(
  c: Pick<ReproCase, "name" | "bug" | "reference" | "expect">,
  record: RunRecord,
): ReproOutcome {
  const checks: ExpectationCheck[] = [];
  for (const [index, e] of c.expect.entries()) {
    const s = record.scenarios?.find((x) => x.name === e.scenario);
    const profiles = e.profiles ?? s?.judgements.map((j) => j.profile) ?? [];
    if (profiles.length === 0)
      checks.push(
        checkOne(e, index, undefined, e.scenario, "(any)", { reason: "the scenario was not judged" }),
      );
    for (const p of profiles)
      checks.push(
        checkOne(
          e,
          index,
          s?.judgements.find((j) => j.profile === p),
          e.scenario,
          p,
          s?.outcome,
        ),
      );
  }
  const kind = caseKind(c.expect);
  const asStated = checks.length > 0 && checks.every((x) => x.met);
  const unjudged =
    checks.some((x) => !x.met && (x.got === undefined || x.got === "ERROR" || x.got === "MISS")) ||
    record.results.some((r) => r.verdict === "ERROR" || r.verdict === "MISS");
  const word: ReproWord =
    kind === "bug" ? (asStated ? "REPRODUCES" : "NOT REPRODUCED") : asStated ? "PASSES" : "DOES NOT PASS";
  return {
    case: c.name,
    bug: c.bug,
    reference: c.reference,
    kind,
    word,
    asStated,
    unjudged: !asStated && unjudged,
    checks,
    exitCode: asStated ? EXIT_ALL_PASS : unjudged ? EXIT_NOT_JUDGED : EXIT_FAILED,
  };
}

export interface ReproRun {
  outcome: ReproOutcome;
  record: JobRecord;
  runDir: string;
  wallMs: number;
}

/** What repro.json holds (and `hil repro --json` prints): the outcome and the run it comes from. */
export function reproRecord(run: ReproRun) {
  return {
    ...run.outcome,
    runDir: run.runDir,
    kernel: run.record.kernel,
    release: run.record.release,
    wallMs: run.wallMs,
  };
}

/**
 * Runs the case's job into `runDir` and evaluates it. repro.json is written while the run holds its
 * directory, before verdicts.json: whoever sees the run whole or unlocked sees the outcome too.
 */
export async function runRepro(c: ReproCase, opts: { runDir: string }): Promise<ReproRun> {
  const started = Date.now();
  let run: ReproRun | undefined;
  await runJob(c.job, {
    runDir: opts.runDir,
    baseDir: c.baseDir,
    id: c.name,
    adjustScenarios: withoutBugRecords,
    alsoWrite: async (record) => {
      run = { outcome: evaluateCase(c, record), record, runDir: opts.runDir, wallMs: Date.now() - started };
      await writeRunFile(opts.runDir, REPRO_FILE, `${JSON.stringify(reproRecord(run), null, 2)}\n`);
    },
  });
  if (!run) throw new Error("the repro job ended without its record");
  return run;
}

function mark(ok: boolean): string {
  return ok ? "ok" : "NOT";
}

/** The report a person reads: the case, each expectation with what was seen, the evidence. */
export function renderRepro(c: ReproCase, run: ReproRun): string {
  const o = run.outcome;
  const lines = [
    `case ${c.name}: ${c.bug}`,
    `reference: ${c.reference}`,
    `run: ${describeJob(c.job)} (kernel ${run.record.kernel}${run.record.release ? `, ${run.record.release}` : ""})`,
    "",
  ];
  for (const x of o.checks) {
    lines.push(
      `[${mark(x.met)}] ${x.scenario}[${x.profile}]: ${x.got ?? "not judged"} (expected ${x.want}): ${x.reason}`,
    );
    for (const r of x.rules)
      lines.push(
        `       rule ${r.rule}: ${r.got ?? "not judged"} (expected ${r.want})${r.got === r.want ? "" : ` ${r.reason}`}`,
      );
    if (x.evidence)
      lines.push(
        x.evidence.matched
          ? `       evidence /${x.evidence.pattern}/: ${x.evidence.matched.trim()}`
          : `       evidence /${x.evidence.pattern}/: no line of the failing rules' evidence matches`,
      );
  }
  // each failing rule once, under the first profile it fails under (rules 1-8 read alike in all)
  const seen = new Set<string>();
  const quoted: string[] = [];
  for (const x of o.checks)
    for (const q of x.quotes) {
      const key = `${x.scenario} ${q.rule} ${q.reason}`;
      if (seen.has(key)) continue;
      seen.add(key);
      quoted.push(`  ${x.scenario}[${x.profile}] rule ${q.rule} ${q.verdict}: ${q.reason}`);
      quoted.push(...q.evidence.map((e) => `      ${e}`));
    }
  if (quoted.length > 0) lines.push("", "evidence (the quoted events):", ...quoted);
  lines.push("", `run directory: ${run.runDir}`);
  return `${lines.join("\n")}\n`;
}

export function reproSummary(run: ReproRun): string {
  const o = run.outcome;
  const met = o.checks.filter((x) => x.met).length;
  return `hil repro: ${o.case}: ${o.word} (${met}/${o.checks.length} expected verdicts seen${o.unjudged ? "; some could not be judged" : ""}) in ${Math.round(run.wallMs / 1000)}s`;
}
