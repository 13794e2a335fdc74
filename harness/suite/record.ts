/** A run's traces written to the run directory, judged, and added to the report. */
import { type HwTraceEvent, parseHwTrace } from "../protocol/hw-trace.ts";
import { TRACE_DIR } from "../rundir/layout.ts";
import { writeRunFile } from "../rundir/write.ts";
import { hwEvidence } from "./hw-trace.ts";
import { judgeScenarioRun } from "./judge-run.ts";
import type { ObservedOutcome } from "./observe.ts";
import { bugTarget, type QueuedRun, type SuiteOptions } from "./options.ts";
import { runName, type SuiteReport } from "./results.ts";
import { ulpWorkload } from "./ulp-run.ts";

/**
 * A run's traces written to the run directory (the executor's, and the device's slice when there
 * is one), judged, and added to the report.
 */
export async function recordRun(
  opts: SuiteOptions,
  item: QueuedRun,
  outcome: ObservedOutcome,
  hwText: string | undefined,
  report: SuiteReport,
): Promise<void> {
  const { r } = item;
  report.timings.runMs += outcome.durationMs;
  const traceName = `${TRACE_DIR}/${r.name}.jsonl`;
  await writeRunFile(opts.runDir, traceName, outcome.records.map((x) => `${JSON.stringify(x)}\n`).join(""));
  let hw: string[] = [];
  let hwEvents: HwTraceEvent[] | undefined;
  let hwTrace: string | undefined;
  if (hwText !== undefined) {
    hwTrace = `${TRACE_DIR}/${r.name}.hw.jsonl`;
    await writeRunFile(opts.runDir, hwTrace, hwText);
    const qpns = ulpWorkload(item.compiled)
      ? undefined
      : new Set(
          outcome.records.flatMap((x) =>
            x.ev === "create" && x.kind === "qp" && x.qp_num !== undefined ? [x.qp_num] : [],
          ),
        );
    hwEvents = parseHwTrace(hwText, { lenient: true });
    hw = hwEvidence(hwEvents, qpns);
  }
  const t1 = Date.now();
  const judged = judgeScenarioRun(
    r.scenario,
    item.profiles,
    { ...outcome, ...(hwEvents ? { hw: hwEvents } : {}) },
    bugTarget(opts),
    hw,
  );
  report.timings.judgeMs += Date.now() - t1;
  report.scenarios.push({
    ...runName(r),
    file: r.scenario.file,
    covers: r.scenario.covers.map(String),
    judgements: judged.judgements,
    ...(judged.outcome ? { outcome: judged.outcome } : {}),
    trace: traceName,
    ...(hwTrace ? { hwTrace } : {}),
    observations: outcome.observations,
    ...(judged.knownBugs ? { knownBugs: judged.knownBugs } : {}),
    ...(judged.premise ? { premise: judged.premise } : {}),
    durationMs: outcome.durationMs,
  });
}
