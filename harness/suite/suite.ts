/**
 * The drain suite: boots a guest (siw on its NIC, or the emulated erdma device), or `guests` of
 * them side by side (suite/guests.ts), loads the executor, runs each scenario, judges its trace
 * and writes the run directory: verdicts.json, traces/<scenario>.jsonl (and <scenario>.hw.jsonl,
 * the device's hardware trace of that scenario), console.log and hw-trace.jsonl (console-<n>.log,
 * hw-trace-<n>.jsonl for the n-th boot: another guest, or one booted after a hang). A scenario that
 * leaves the executor stuck costs its guest a reboot, never the rest of the suite. Fault steps are
 * armed on the device's control channel and cleared after each scenario; known driver bugs
 * recorded in the scenario turn their rules' FAILs into XFAILs. What the device allows is its
 * backend's word (harness/backend): on a device without fault control (an external one, a host PCI
 * function) scenarios with fault steps are SKIPs, a device without a hardware trace leaves none,
 * a device one guest at a time can have gets one guest, and a two-guest scenario needs the
 * backend's fabric. With `repeat` n > 1
 * each scenario runs n times in a row, each run (<scenario>#<k>) judged and traced on its own, and
 * the report says per scenario and oracle profile whether the repetitions agree (suite/repeat.ts).
 */
import { join } from "node:path";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { backendOf, hwTraceOf } from "../backend/registry.ts";
import { executorFactory } from "../executor/registry.ts";
import { FIRST_PORT } from "../protocol/guest-net.ts";
import { TRACE_DIR } from "../rundir/layout.ts";
import { runDirFull } from "../rundir/write.ts";
import { hwTraceFileFor, hwTraceName } from "./hw-trace.ts";
import { runLanes } from "./lanes.ts";
import { type QueuedRun, type SuiteOptions, withDevice } from "./options.ts";
import { observePair } from "./pair-run.ts";
import { queueRuns } from "./queue.ts";
import { recordRun } from "./record.ts";
import { expandRepeats, repetitionLabel } from "./repeat.ts";
import { type SuiteReport, suiteStability } from "./results.ts";

export async function runSuite(given: SuiteOptions): Promise<SuiteReport> {
  // from here on opts.device is the device (undefined: none)
  const opts = withDevice(given);
  const backend = backendOf(opts.device);
  const repeat = opts.repeat ?? 1;
  const runs = expandRepeats(opts.scenarios, repeat, FIRST_PORT);
  const report: SuiteReport = {
    driver: opts.driver,
    executor: opts.executor,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
    ...(repeat > 1 ? { repeat } : {}),
    scenarios: [],
    boots: 0,
    timings: { bootMs: 0, runMs: 0, judgeMs: 0 },
  };
  await makeDir(join(opts.runDir, TRACE_DIR)).catch((err: unknown) => {
    throw runDirFull(opts.runDir, err) ?? err;
  });
  const factory = opts.executorFactory ?? executorFactory(opts.executor);
  const { todo, pairs } = queueRuns(opts, runs, factory, report);
  const finish = (): SuiteReport => {
    const order = new Map(runs.map((r, i) => [r.name, i]));
    report.scenarios.sort((a, b) => (order.get(a.name) ?? 0) - (order.get(b.name) ?? 0));
    if (repeat > 1) report.stability = suiteStability(report.scenarios);
    return report;
  };
  if (typeof factory === "string") return finish();
  if (todo.length > 0) await runLanes(opts, factory, report, todo, backend.maxGuests);
  for (const item of pairs) await runPair(opts, item, report);
  return finish();
}

/** A ULP workload across two guests: a pair booted for it alone (pair-run.ts), judged like any run. */
async function runPair(opts: SuiteOptions, item: QueuedRun, report: SuiteReport): Promise<void> {
  const { r } = item;
  const two = backendOf(opts.device).twoGuests;
  const joined = "joinedBy" in two ? two.joinedBy(opts.driver) : "";
  const step = progress.step(`[suite] ${repetitionLabel(r)} on two guests joined by ${joined}`);
  const first = report.boots + 1;
  report.boots += 2;
  const hwTraceFile = hwTraceOf(opts.device);
  const traceFor = (boot: number) =>
    hwTraceFile ? hwTraceFileFor(hwTraceFile, boot) : join(opts.runDir, hwTraceName(boot));
  const outcome = await observePair(
    {
      prepared: opts.prepared,
      driver: opts.driver,
      ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
      consoles: [join(opts.runDir, `console-${first}.log`), join(opts.runDir, `console-${first + 1}.log`)],
      hwTraces: [traceFor(first), traceFor(first + 1)],
    },
    item.compiled,
  );
  await recordRun(opts, item, outcome, outcome.hwText, report);
  if (outcome.error !== undefined) step.fail();
  else step.succeed();
}
