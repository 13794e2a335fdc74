/** A run directory's verdicts.json as the integration tests read it (the run record schema), and lookups into it. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Test } from "tap";
import {
  type RunRecord,
  type RunScenario,
  runRecordSchema,
  VERDICTS_FILE,
} from "../../harness/rundir/schema.ts";

export type ScenarioVerdict = RunScenario;

/** The run record, checked against the schema every writer is held to. */
export function loadVerdicts(dir: string): RunRecord & { scenarios: RunScenario[] } {
  const record = runRecordSchema.parse(JSON.parse(readFileSync(join(dir, VERDICTS_FILE), "utf8")));
  return { ...record, scenarios: record.scenarios ?? [] };
}

export function scenarioOf(dir: string, name: string): ScenarioVerdict {
  const s = loadVerdicts(dir).scenarios.find((x) => x.name === name);
  if (!s) throw new Error(`no ${name} in ${dir}`);
  return s;
}

/** "<profile> <verdict>" per oracle profile */
export const verdictsOf = (s: ScenarioVerdict) => s.judgements.map((j) => `${j.profile} ${j.verdict}`);

export const ruleOf = (s: ScenarioVerdict, profile: string, rule: string) =>
  s.judgements.find((j) => j.profile === profile)?.rules.find((r) => r.rule === rule);

/** Every cell of a run, "<scenario>[<profile>]" → its verdict. */
export function cellVerdicts(dir: string): Map<string, string> {
  return new Map(
    loadVerdicts(dir).scenarios.flatMap((s) =>
      s.judgements.map((j) => [`${s.name}[${j.profile}]`, j.verdict] as const),
    ),
  );
}

/**
 * The scenarios the runner tests (LAVA, --target) compare with hil run: drains of idle, full and
 * outstanding queues, a shared CQ, unsignaled WRs in ERROR, and one fault scenario (`RUNNER_FAULTY`),
 * which a runner without a control channel reports as SKIP.
 */
export const RUNNER_SCENARIOS = [
  "drain-qp-idle",
  "drain-sq-full",
  "drain-rq-outstanding",
  "shared-cq-two-qps",
  "unsignaled-in-error",
  "fault-drop-flush-cqe",
] as const;
export const RUNNER_FAULTY = "fault-drop-flush-cqe";

/**
 * What a failing run's assertion should print first: every FAIL, ERROR or MISS rule of the run
 * with its reason and the first lines of its evidence (a hang's kernel stack), one rule set per
 * scenario; a CI log that keeps only a failed point's first lines still says why.
 */
export function explainFailures(dir: string, evidenceLines = 12): string {
  let record: ReturnType<typeof loadVerdicts>;
  try {
    record = loadVerdicts(dir);
  } catch (err) {
    return `(no verdicts in ${dir}: ${(err as Error).message})`;
  }
  const out: string[] = [];
  for (const s of record.scenarios) {
    const j = s.judgements.find((x) => x.verdict !== "PASS" && x.verdict !== "XFAIL" && x.verdict !== "SKIP");
    if (!j) continue;
    for (const r of j.rules.filter((x) => ["FAIL", "ERROR", "MISS"].includes(x.verdict))) {
      out.push(`${s.name} ${j.verdict}: rule ${r.rule}: ${r.reason}`);
      out.push(...(r.evidence ?? []).slice(0, evidenceLines).map((l) => `  ${l}`));
    }
  }
  return out.join("\n");
}

/**
 * A runner's verdicts (a LAVA job's, a --target's) against hil run's of the same scenarios: every
 * cell as hil run judged it, the fault scenario a SKIP, the same cells, and something that passed.
 */
export function assertRunnerVerdictsEqual(t: Test, runnerDir: string, runDir: string): void {
  const want = cellVerdicts(runDir);
  const got = cellVerdicts(runnerDir);
  for (const [cell, verdict] of want) {
    if (cell.startsWith(RUNNER_FAULTY))
      t.equal(got.get(cell), "SKIP", `${cell}: a fault scenario is a SKIP in a LAVA job`);
    else t.equal(got.get(cell), verdict, `${cell}: as hil run judged it`);
  }
  t.equal(got.size, want.size, "the same cells");
  t.ok(
    [...want.values()].some((v) => v === "PASS"),
    "hil run passed scenarios to compare with",
  );
}

/** A cell's verdict and each of its rules' verdicts. */
export interface RuleCell {
  verdict: string;
  rules: Record<string, string>;
}

/** Every cell of a run, "<scenario>[<profile>]" → its verdict and its rules' verdicts. */
export function ruleCells(dir: string): Record<string, RuleCell> {
  const cells: Record<string, RuleCell> = {};
  for (const s of loadVerdicts(dir).scenarios)
    for (const j of s.judgements)
      cells[`${s.name}[${j.profile}]`] = {
        verdict: j.verdict,
        rules: Object.fromEntries(j.rules.map((x) => [String(x.rule), x.verdict])),
      };
  return cells;
}
