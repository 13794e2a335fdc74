/**
 * Judges what a LAVA job brought back against the plan that made it: each scenario's two batches
 * read back as the suite reads a batch over SSH (statuses, trace), the stuck step with its stack,
 * the kernel log it made, and the commands that were sent; then the same judgement as the suite's
 * (suite/judge-run.ts). A scenario whose output is missing or damaged is a MISS that says so.
 */
import { type KverbsStatus, parseStatuses, splitGroupsOutput } from "../executor/kverbs-driver.ts";
import type { Observation, StuckObservation } from "../protocol/observations.ts";
import { parseTrace, recordsOf, type TraceRecord } from "../protocol/trace.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import { consoleObservations, judgeScenarioRun, type ScenarioRun } from "../suite/judge-run.ts";
import type { ScenarioReport, SuiteReport } from "../suite/results.ts";
import type { Verdict } from "../verdict.ts";
import type { LavaPlan, PlannedGroup, PlannedScenario } from "./plan.ts";
import type { LavaResults, LavaScenarioOutput } from "./results.ts";

/** A judged scenario and the trace it is judged on (written to the run directory). */
export interface JudgedLavaScenario {
  report: ScenarioReport;
  records: TraceRecord[];
}

function notRun(
  s: { name: string; file: string; profiles: readonly string[] },
  verdict: Verdict,
  reason: string,
): ScenarioReport {
  return {
    name: s.name,
    file: s.file,
    judgements: s.profiles.map((profile) => ({ profile: profile as never, verdict, rules: [] })),
    outcome: { verdict, reason },
    durationMs: 0,
  };
}

interface Batch {
  statuses: KverbsStatus[];
  trace?: string;
  rc?: number;
}

function readBatch(text: string, clear: boolean, rc: number | undefined): Batch {
  const parts = splitGroupsOutput(text, { clear });
  return {
    statuses: parseStatuses(parts.statusText),
    ...(parts.trace !== undefined ? { trace: parts.trace } : {}),
    ...(rc !== undefined ? { rc } : {}),
  };
}

function failed(records: readonly TraceRecord[]): string[] {
  return recordsOf(records, "done").flatMap((d) =>
    d.rc !== 0 ? [`${d.op}: rc ${d.rc}${d.err ? ` (${d.err})` : ""}`] : [],
  );
}

/** The run as the suite's stepwise executor would have reported it, from the runner's output. */
export function runFromOutput(planned: PlannedScenario, out: LavaScenarioOutput): ScenarioRun {
  const a = readBatch(out.a, true, out.aRc);
  const b = out.b !== undefined ? readBatch(out.b, false, out.bRc) : undefined;
  const traceText = b?.trace ?? a.trace ?? "";
  const records = parseTrace(
    traceText.slice(0, traceText.lastIndexOf("\n") + 1),
    `${planned.name}: the job's trace`,
  );
  const groups: PlannedGroup[] = [
    ...planned.batches[0].slice(0, a.statuses.length),
    ...(b ? planned.batches[1].slice(0, b.statuses.length) : []),
  ];
  const statuses = [...a.statuses, ...(b?.statuses ?? [])];
  const sent: SentCommand[] = groups.flatMap((g) => g.sent);
  const observations: Observation[] = [];
  const last = statuses.at(-1);
  const lastGroup = groups.at(-1);
  if (last && !last.idle && lastGroup) {
    const stuck: StuckObservation = {
      ev: "stuck",
      step: lastGroup.index,
      op: last.busy?.op ?? "?",
      ms: last.busy?.ms ?? lastGroup.timeoutMs,
      stack: out.stack.join("\n").trim(),
      state: out.state ?? "?",
    };
    observations.push(stuck);
  }
  observations.push(...consoleObservations(out.dmesg));
  const run: ScenarioRun = { records, observations, sent };
  const rejects = recordsOf(records, "reject");
  if ((a.rc ?? 0) !== 0 || (b?.rc ?? 0) !== 0)
    return {
      ...run,
      error: `hil_kverbs refused a command${rejects.length ? `: ${rejects.map((x) => `${x.line}: ${x.why}`).join("; ")}` : ` (exit ${a.rc}/${b?.rc ?? "-"})`}`,
    };
  const setupOnly = !sent.some((c) => c.phase === "step");
  if (stuckAtSetup(observations)) return { ...run, error: `setup did not finish: ${last?.busy?.op} stuck` };
  const setupFailures = failed(records);
  if (setupFailures.length > 0 && setupOnly)
    return { ...run, error: `setup failed: ${setupFailures.join("; ")}` };
  return run;
}

function stuckAtSetup(observations: readonly Observation[]): boolean {
  return observations.some((o) => o.ev === "stuck" && o.step === -1);
}

export interface JudgeResultsOptions {
  /**
   * the run was cut off (e.g. the SSH connection to a target closed), and why: a scenario whose
   * output is missing or ends early is an ERROR naming it, not a MISS of the log
   */
  interrupted?: string;
}

export function judgeLavaResults(
  plan: LavaPlan,
  results: LavaResults,
  opts: JudgeResultsOptions = {},
): { report: SuiteReport; traces: Map<string, TraceRecord[]> } {
  const target = {
    driver: plan.driver,
    executor: plan.executor,
    ...(plan.deviceProfile ? { deviceProfile: plan.deviceProfile } : {}),
    kernel: { base: plan.kernel.base, ...(plan.kernel.version ? { version: plan.kernel.version } : {}) },
  };
  const report: SuiteReport = {
    driver: plan.driver,
    executor: plan.executor,
    ...(plan.deviceProfile ? { deviceProfile: plan.deviceProfile } : {}),
    scenarios: [],
    boots: 1,
    timings: { bootMs: 0, runMs: 0, judgeMs: 0 },
  };
  const traces = new Map<string, TraceRecord[]>();
  const started = Date.now();
  for (const s of plan.notPlanned) report.scenarios.push(notRun(s, s.verdict, s.reason));
  for (const planned of plan.scenarios) {
    const file = planned.scenario.file;
    const who = { name: planned.name, file, profiles: planned.profiles };
    const out = results.scenarios.get(planned.name);
    if (!out) {
      const why = results.notRun.get(planned.name);
      if (why === undefined && opts.interrupted !== undefined) {
        report.scenarios.push(notRun(who, "ERROR", `not run: ${opts.interrupted}`));
        continue;
      }
      report.scenarios.push(
        notRun(
          who,
          "MISS",
          why !== undefined
            ? `the job did not run it: ${why}`
            : results.done
              ? "the job's runner finished without running it (a runner of another plan?)"
              : "the job's log holds no output of it (the job ended before it, or the log is cut)",
        ),
      );
      continue;
    }
    if (out.damaged) {
      if (opts.interrupted !== undefined) {
        report.scenarios.push(notRun(who, "ERROR", `cut off: ${opts.interrupted} (${out.damaged})`));
        continue;
      }
      report.scenarios.push(notRun(who, "MISS", `the job's log cannot be judged for it: ${out.damaged}`));
      continue;
    }
    let run: ScenarioRun;
    try {
      run = runFromOutput(planned, out);
    } catch (err) {
      report.scenarios.push(
        notRun(
          who,
          "MISS",
          `the job's output of it cannot be read: ${err instanceof Error ? err.message : String(err)}`,
        ),
      );
      continue;
    }
    traces.set(planned.name, [...run.records]);
    const judged = judgeScenarioRun(planned.scenario, planned.profiles, run, target);
    report.scenarios.push({
      name: planned.name,
      file,
      covers: planned.scenario.covers.map(String),
      judgements: judged.judgements,
      ...(judged.outcome ? { outcome: judged.outcome } : {}),
      observations: [...run.observations],
      ...(judged.knownBugs ? { knownBugs: judged.knownBugs } : {}),
      ...(judged.premise ? { premise: judged.premise } : {}),
      durationMs: 0,
    });
  }
  report.timings.judgeMs = Date.now() - started;
  const order = new Map(
    [...plan.scenarios.map((s) => s.scenario.file), ...plan.notPlanned.map((s) => s.file)].map((f, i) => [
      f,
      i,
    ]),
  );
  report.scenarios.sort(
    (x, y) => x.name.localeCompare(y.name) || (order.get(x.file) ?? 0) - (order.get(y.file) ?? 0),
  );
  return { report, traces };
}
