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
import { basename, dirname, join } from "node:path";
import { traceFailureIn } from "../../qemu/device-server/trace-failure.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { backendOf, type ChosenDevice, hwTraceOf, impliedDevice } from "../backend/registry.ts";
import { type BootedGuest, bootPrepared, DEFAULT_GUEST_MAC, type PreparedGuest } from "../boot.ts";
import type { ExecutorFactory, ExecutorOutcome, ScenarioExecutor } from "../executor/executor.ts";
import { addSiwLink } from "../executor/kverbs-driver.ts";
import { executorFactory } from "../executor/registry.ts";
import type { ProfileJudgement } from "../oracle/judge.ts";
import type { BugTarget } from "../oracle/known-bugs.ts";
import type { FaultObservation, Observation } from "../oracle/observations.ts";
import type { PremiseResult } from "../oracle/premise.ts";
import { type HwTraceEvent, parseHwTrace } from "../protocol/hw-trace.ts";
import { runDirFull, writeRunFile } from "../rundir/write.ts";
import { type CompiledScenario, compileScenario, withoutOptionalFaults } from "../scenario/compile.ts";
import type { KnownBug, OracleProfile, Scenario } from "../scenario/schema.ts";
import { type CheckResult, PASSING_VERDICTS, type Verdict } from "../verdict.ts";
import { armFault, controlOf } from "./faults.ts";
import { examineSilentGuest, freezeEvent } from "./freeze.ts";
import { unitsOf } from "./guests.ts";
import { harnessDeath, watchHarness } from "./harness-watch.ts";
import { hwEvidence, hwTraceName, readSlice, settledSize } from "./hw-trace.ts";
import { consoleObservations, judgeScenarioRun } from "./judge-run.ts";
import { hangsLast } from "./order.ts";
import { observePair } from "./pair-run.ts";
import { planScenario, planSteps, type SuiteTarget } from "./plan.ts";
import {
  expandRepeats,
  type Repetition,
  type RepetitionVerdict,
  repetitionLabel,
  type Stability,
  stabilityOf,
} from "./repeat.ts";
import { runUlp, ulpWorkload } from "./ulp-run.ts";

/** The guest's address (QEMU user networking); the RDMA device is bound to its NIC. */
export const GUEST_ADDR = "10.0.2.15";
/** the port of the first scenario's QP pair; each next scenario (or repetition) takes the next one */
export const FIRST_PORT = 7600;
export const TRACE_DIR = "traces";

export interface SuiteOptions extends SuiteTarget {
  prepared: PreparedGuest;
  scenarios: readonly Scenario[];
  runDir: string;
  /** judge only under these oracle profiles (default: each scenario's own) */
  profiles?: readonly OracleProfile[];
  /** the executor to use instead of the one registered for `executor` (tests, new executors) */
  executorFactory?: ExecutorFactory;
  /**
   * the device under test (backend/registry.ts), its hardware trace file the first boot's (later
   * boots write beside it); default: the one the driver implies (erdma: the emulated device with
   * deviceProfile; siw: none)
   */
  device?: ChosenDevice;
  /** the guest NIC's MAC, which the device reports (default DEFAULT_GUEST_MAC) */
  mac?: string;
  /**
   * A first stage on the first guest, before the executor loads ("the device probes"): when one
   * of its checks is not PASS/SKIP, no scenario runs and each is a MISS naming that check.
   */
  probe?: (guest: BootedGuest, hwTraceFile: string | undefined) => Promise<CheckResult[]>;
  /** told each time a guest's QEMU starts (logs; tests that check nothing is left) */
  onQemuStarted?: (info: { pid: number; workDir: string; sshPort: number }) => void;
  /** run each scenario this many times in a row (1-100, default 1), each repetition judged on its own */
  repeat?: number;
  /** guests booted side by side, each taking the next scenario when free (default 1; at most the device's backend's maxGuests) */
  guests?: number;
  /** boots a guest (default bootPrepared; tests boot none) */
  boot?: typeof bootPrepared;
}

export type ScenarioReport = {
  /** the scenario's name; a repetition's is <scenario>#<k> (repeat > 1) */
  name: string;
  file: string;
  /** repeat > 1: the scenario this is a repetition of, and which one (1-based) */
  scenario?: string;
  repetition?: number;
  /** the rules the scenario covers */
  covers?: string[];
  /** the verdict per oracle profile */
  judgements: ProfileJudgement[];
  /** set when the scenario did not run (SKIP, MISS) or the run broke (ERROR) */
  outcome?: { verdict: Verdict; reason: string };
  trace?: string;
  /** the device's hardware trace of this scenario (traces/<name>.hw.jsonl) */
  hwTrace?: string;
  observations?: Observation[];
  /** the known driver bugs that applied to this run */
  knownBugs?: KnownBug[];
  /** whether the situation the scenario exists for happened, condition by condition */
  premise?: PremiseResult;
  durationMs: number;
};

export type SuiteReport = {
  driver: string;
  executor: string;
  deviceProfile?: string;
  /** each scenario's repetitions (set when > 1) */
  repeat?: number;
  scenarios: ScenarioReport[];
  /** the probe stage's checks, when there was one */
  probe?: CheckResult[];
  boots: number;
  timings: { bootMs: number; runMs: number; judgeMs: number };
  /** repeat > 1: per scenario and oracle profile, whether its repetitions' verdicts agree */
  stability?: Stability[];
};

function profilesFor(s: Scenario, only: readonly OracleProfile[] | undefined): OracleProfile[] {
  return only ? s.profiles.filter((p) => only.includes(p)) : [...s.profiles];
}

/** The report's name of the run and, for a repetition of several, what it repeats. */
function runName(r: Repetition): Pick<ScenarioReport, "name" | "scenario" | "repetition"> {
  return r.of > 1 ? { name: r.name, scenario: r.scenario.name, repetition: r.repetition } : { name: r.name };
}

function notRun(r: Repetition, profiles: OracleProfile[], verdict: Verdict, reason: string): ScenarioReport {
  return {
    ...runName(r),
    file: r.scenario.file,
    judgements: profiles.map((profile) => ({ profile, verdict, rules: [] })),
    outcome: { verdict, reason },
    durationMs: 0,
  };
}

/**
 * The probe stage's checks, then one CheckResult per scenario and oracle profile, then one per
 * shared known-bug record that applied by pattern and described nothing: the table, the exit code.
 */
export function suiteResults(report: SuiteReport): CheckResult[] {
  return [...(report.probe ?? []), ...scenarioResults(report), ...staleRecordResults(report)];
}

/**
 * A shared record applied to scenarios by its pattern makes no XPASS in a scenario where its bug
 * does not show; over the run, one that applied somewhere and described no failure there (no
 * XFAIL, no rule it hid) is an XPASS of its own: the bug may be fixed and the record stale.
 */
export function staleRecordResults(report: SuiteReport): CheckResult[] {
  const applied = new Map<string, number>();
  const described = new Set<string>();
  for (const s of report.scenarios) {
    for (const b of s.knownBugs ?? []) if (b.implied && b.id) applied.set(b.id, (applied.get(b.id) ?? 0) + 1);
    for (const j of s.judgements)
      for (const r of j.rules)
        if (r.knownBug?.id && (r.verdict === "XFAIL" || r.verdict === "SKIP")) described.add(r.knownBug.id);
  }
  return [...applied]
    .filter(([id]) => !described.has(id))
    .map(([id, n]) => ({
      id: `known-bug:${id}`,
      title: `the known bug ${id} shows`,
      verdict: "XPASS" as const,
      expectedBy: "known bug" as const,
      reason: `the record applied to ${n} scenario run(s) and described none of their failures: is the bug fixed? (fixtures/known-bugs.yaml)`,
    }));
}

function judgementResult(s: ScenarioReport, j: ProfileJudgement): CheckResult {
  const failing = j.rules.find((r) => r.verdict === j.verdict && r.verdict !== "PASS");
  const reason =
    s.outcome?.reason ??
    (failing
      ? failing.rule === "premise"
        ? failing.reason
        : `rule ${failing.rule}: ${failing.reason}`
      : "every rule holds");
  return {
    id: `${s.name}[${j.profile}]`,
    title: s.name,
    verdict: j.verdict,
    reason,
    ...(failing?.evidence ? { evidence: failing.evidence } : {}),
    ...(failing?.injectedFault ? { expectedBy: "injected fault" as const } : {}),
    ...(failing?.knownBug && (j.verdict === "XFAIL" || j.verdict === "XPASS")
      ? { expectedBy: "known bug" as const }
      : {}),
    ...(s.covers ? { exercised: exercisedRules(s.covers, j) } : {}),
  };
}

function exercisedRules(covers: readonly string[], j: ProfileJudgement): { rule: string; judged: number }[] {
  return covers.flatMap((rule) => {
    const r = j.rules.find((x) => String(x.rule) === rule);
    return r && r.applies !== false ? [{ rule, judged: r.judged ?? 0 }] : [];
  });
}

function scenarioResults(report: SuiteReport): CheckResult[] {
  return report.scenarios.flatMap((s) => s.judgements.map((j) => judgementResult(s, j)));
}

/** Per scenario and profile whether its repetitions agree (the reports' repetitions, in any order). */
export function suiteStability(scenarios: readonly ScenarioReport[]): Stability[] {
  return stabilityOf(
    scenarios.flatMap((s) =>
      s.judgements.map(
        (j): RepetitionVerdict => ({
          scenario: s.scenario ?? s.name,
          repetition: s.repetition ?? 1,
          profile: j.profile,
          verdict: j.verdict,
          reason: judgementResult(s, j).reason,
        }),
      ),
    ),
  );
}

interface GuestSession {
  guest: BootedGuest;
  executor: ScenarioExecutor;
  /** this boot's hardware trace file */
  hwTraceFile?: string;
  /** where the next scenario's console slice starts: after the last barrier mark */
  consoleAt: number;
  /** the barriers written so far (each scenario's has the next number) */
  barriers: number;
  /** where the last scenario's hardware trace slice ended (settled): the next one starts there */
  hwAt?: number;
}

/** How long the console may take to show a scenario's barrier mark. */
const BARRIER_WAIT_MS = 5000;

/** The end of the console line that shows barrier `id` (searched from `from`), once it shows. */
async function barrierEnd(guest: BootedGuest, id: number, from: number): Promise<number | undefined> {
  const mark = new RegExp(`hil-mark ${id}\\b[^\\n]*\\n`, "g");
  const deadline = Date.now() + BARRIER_WAIT_MS;
  for (;;) {
    mark.lastIndex = from;
    const m = mark.exec(guest.consoleLog());
    if (m) return m.index + m[0].length;
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The hardware trace file of the n-th boot: the first as given, later ones beside it. */
export function hwTraceFileFor(first: string, boot: number): string {
  if (boot <= 1) return first;
  const name = basename(first);
  return join(
    dirname(first),
    name === "hw-trace.jsonl" ? hwTraceName(boot) : name.replace(/(\.jsonl)?$/, `-${boot}$1`),
  );
}

/** The kernel under test as known-bug records name it: its base and version. */
export function bugTarget(opts: SuiteOptions): BugTarget {
  const k = opts.prepared.kernel;
  return {
    driver: opts.driver,
    executor: opts.executor,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
    kernel: { base: k.describe.split(" + ")[0] ?? k.describe, ...(k.version ? { version: k.version } : {}) },
  };
}

/** The options with the device resolved: the one given, else the one the driver implies. */
function withDevice(opts: SuiteOptions): SuiteOptions {
  const device =
    opts.device ??
    impliedDevice(opts.driver, {
      ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
      mac: opts.mac ?? DEFAULT_GUEST_MAC,
    });
  return device ? { ...opts, device } : opts;
}

export async function runSuite(given: SuiteOptions): Promise<SuiteReport> {
  // from here on opts.device is the device (undefined: none)
  const opts = withDevice(given);
  const backend = backendOf(opts.device);
  const faultSkip = backend.faultSkip?.(opts.device);
  const twoGuests = backend.twoGuests;
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
  const todo: QueuedRun[] = [];
  const pairs: QueuedRun[] = [];
  for (const r of runs) {
    const s = r.scenario;
    const profiles = profilesFor(s, opts.profiles);
    const plan = planScenario(s, opts);
    const written = compileScenario(s, {
      addr: GUEST_ADDR,
      port: r.port,
      executor: opts.executor,
      driver: opts.driver,
    });
    const compiled = backend.canArmFaults ? written : withoutOptionalFaults(written);
    const steps = plan.run ? planSteps(compiled, opts) : plan;
    if (profiles.length === 0) report.scenarios.push(notRun(r, [], "SKIP", "no rule set selected"));
    else if (!plan.run) report.scenarios.push(notRun(r, profiles, plan.verdict, plan.reason));
    else if (typeof factory === "string") report.scenarios.push(notRun(r, profiles, "MISS", factory));
    // as a fault on siw: not meant for a device without fault control, so a SKIP, not a MISS
    else if (faultSkip && compiled.steps.some((x) => x.fault))
      report.scenarios.push(notRun(r, profiles, "SKIP", faultSkip));
    else if (!steps.run) report.scenarios.push(notRun(r, profiles, steps.verdict, steps.reason));
    else if (s.guests === 2 && !("joinedBy" in twoGuests))
      report.scenarios.push(
        notRun(r, profiles, "SKIP", "skip" in twoGuests ? twoGuests.skip : twoGuests.unchecked),
      );
    else if (s.guests === 2) pairs.push({ r, profiles, compiled });
    else todo.push({ r, profiles, compiled });
  }
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

/** The scenarios that run on one guest each, on the suite's guests side by side. */
async function runLanes(
  opts: SuiteOptions,
  factory: ExecutorFactory,
  report: SuiteReport,
  todo: QueuedRun[],
  maxGuests: number,
): Promise<void> {
  const repeat = opts.repeat ?? 1;
  const units = unitsOf(hangsLast(todo), (item) => item.r.scenario.name);
  // one device behind a socket or a host PCI function: one guest at a time can have it
  const guests = Math.max(1, Math.min(opts.guests ?? 1, units.length, maxGuests));
  const what =
    repeat > 1
      ? `${opts.scenarios.length} scenario(s) x ${repeat} repetitions`
      : `${todo.length} scenario(s)`;
  const step = progress.step(
    `[suite] ${what} on ${opts.driver}, ${opts.executor} executor${guests > 1 ? `, ${guests} guests` : ""}`,
  );
  const lanes = new SuiteLanes(opts, factory, report, units, todo.length, step);
  const settled = await Promise.allSettled(Array.from({ length: guests }, () => lanes.run()));
  const failed = settled.find((x): x is PromiseRejectedResult => x.status === "rejected");
  if (failed) {
    step.fail();
    throw failed.reason;
  }
  step.succeed(
    repeat > 1
      ? `${todo.length} run(s) of ${opts.scenarios.length} scenario(s), ${report.boots} boot(s)`
      : `${todo.length} scenario(s), ${report.boots} boot(s)`,
  );
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

type QueuedRun = { r: Repetition; profiles: OracleProfile[]; compiled: CompiledScenario };

/**
 * The guests of one suite run, each taking the next unit of the shared queue when it is free.
 * The first guest's first boot runs the probe stage; the others boot meanwhile and wait for its
 * outcome before their first scenario. When one guest fails, the others stop at their next run.
 */
class SuiteLanes {
  private started = 0;
  private failure = false;
  private readonly probed: Promise<string | undefined>;
  private settleProbe: (why: string | undefined) => void = () => {};

  constructor(
    private readonly opts: SuiteOptions,
    private readonly factory: ExecutorFactory,
    private readonly report: SuiteReport,
    private readonly units: QueuedRun[][],
    private readonly total: number,
    private readonly step: ReturnType<typeof progress.step>,
  ) {
    this.probed = new Promise((resolve) => {
      this.settleProbe = resolve;
    });
    if (!opts.probe) this.settleProbe(undefined);
  }

  /** Every run of the queue not taken yet is a MISS for `why`. */
  private missRest(unit: readonly QueuedRun[], why: string): void {
    for (const rest of [...unit, ...this.units.splice(0).flat()])
      this.report.scenarios.push(notRun(rest.r, rest.profiles, "MISS", why));
  }

  async run(): Promise<void> {
    let session: GuestSession | undefined;
    try {
      for (let unit = this.units.shift(); unit && !this.failure; unit = this.units.shift()) {
        for (const [i, item] of unit.entries()) {
          if (this.failure) break;
          this.step.update(this.started++, this.total, repetitionLabel(item.r));
          if (!session) {
            const t0 = Date.now();
            const boot = ++this.report.boots;
            const started = await startSession(this.opts, this.factory, boot).catch((err: unknown) => {
              if (boot === 1) this.settleProbe("the first guest did not start");
              throw err;
            });
            this.report.timings.bootMs += Date.now() - t0;
            if (boot === 1) {
              if (started.probe) this.report.probe = started.probe;
              const bad = started.probe?.find((x) => !PASSING_VERDICTS.includes(x.verdict));
              this.settleProbe(
                bad
                  ? `the device probes stage failed (${bad.id}: ${bad.verdict} ${bad.reason}): no scenario ran`
                  : undefined,
              );
            }
            const why = await this.probed;
            if (why || !started.session) {
              if (started.session) await closeSession(started.session);
              this.missRest(unit.slice(i), why ?? "the device probes stage failed: no scenario ran");
              return;
            }
            session = started.session;
          }
          if (await runOne(this.opts, session, item, this.report)) session = undefined;
        }
      }
    } catch (err) {
      this.failure = true;
      if (session) await closeSession(session).catch(() => {}); // the first failure is the one to tell
      throw err;
    }
    if (session) await closeSession(session);
  }
}

/**
 * Runs one scenario (or repetition) on the session's guest, judges it and adds it to the report.
 * True when the guest was disposed of (a stuck executor, a broken run): the next run boots another.
 */
async function runOne(
  opts: SuiteOptions,
  session: GuestSession,
  item: QueuedRun,
  report: SuiteReport,
): Promise<boolean> {
  const { r, compiled } = item;
  const control = controlOf(session.guest.device);
  if (compiled.steps.some((x) => x.fault) && !control) {
    const why =
      backendOf(opts.device).faultSkip?.(opts.device) ??
      "the device server has no control channel to arm faults on";
    report.scenarios.push(notRun(r, item.profiles, "MISS", why));
    return false;
  }
  const hwFile = session.hwTraceFile;
  const hwFrom = hwFile ? (session.hwAt ?? (await settledSize(hwFile, { maxMs: 200 }))) : 0;
  const outcome = await observeScenario(session, compiled);
  if (control && !outcome.harnessFault) {
    const cleared = await control
      .control({ op: "clear" })
      .catch((err: Error) => ({ ok: false, error: err.message }));
    if (!cleared.ok)
      progress.info(`[suite] ${r.name}: clearing the device's faults failed: ${cleared.error}`);
  }
  let hwText: string | undefined;
  if (hwFile) {
    const hwTo = await settledSize(hwFile);
    session.hwAt = hwTo;
    hwText = await readSlice(hwFile, hwFrom, hwTo);
    checkHwTrace(session.guest);
  }
  await recordRun(opts, item, outcome, hwText, report);
  if (session.executor.wedged || outcome.wedged || outcome.error !== undefined) {
    progress.info(`[suite] ${r.name}: the guest is rebooted for the scenarios after it`);
    await session.guest.dispose({ now: outcome.harnessFault !== undefined });
    return true;
  }
  return false;
}

/**
 * A run's traces written to the run directory (the executor's, and the device's slice when there
 * is one), judged, and added to the report.
 */
async function recordRun(
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

async function closeSession(session: GuestSession): Promise<void> {
  await session.executor.close().catch((err: unknown) => {
    progress.info(`[suite] the executor did not close cleanly: ${(err as Error).message}`);
  });
  await session.guest.dispose();
}

interface ObservedOutcome extends ExecutorOutcome {
  observations: Observation[];
  /** a ULP step is stuck: the guest is rebooted for the next scenario */
  wedged?: boolean;
  durationMs: number;
  /** the device server or QEMU died while the scenario ran (harness-watch.ts): why */
  harnessFault?: string;
}

/**
 * Runs the scenario (its fault steps armed on the device) and adds what the console showed
 * meanwhile, and the faults armed, to what the executor saw. If the device server or QEMU dies
 * meanwhile, the executor is not waited for: the outcome names the dead process.
 */
async function observeScenario(session: GuestSession, compiled: CompiledScenario): Promise<ObservedOutcome> {
  const started = Date.now();
  const consoleFrom = session.consoleAt;
  const control = controlOf(session.guest.device);
  const faults: FaultObservation[] = [];
  const watch = watchHarness(session.guest);
  // the next console barrier, written by the executor in its last round trip when it can
  const barrier = session.barriers + 1;
  let outcome: ExecutorOutcome & { observations?: Observation[]; wedged?: boolean };
  let harnessFault: string | undefined;
  try {
    const run = ulpWorkload(compiled)
      ? runUlp(session.guest, compiled, barrier)
      : session.executor.runScenario(
          compiled,
          control
            ? {
                barrier,
                fault: async (step, records) => {
                  const armed = await armFault(control, step, compiled, records);
                  faults.push({
                    ev: "fault",
                    step: step.index,
                    kind: step.fault?.kind ?? "?",
                    spec: armed.spec,
                    ...(armed.target ? { wr: armed.target } : {}),
                  });
                },
              }
            : { barrier },
        );
    // settles once the guest is disposed of, after a death; nothing waits for it then
    run.catch(() => {});
    const died = watch.died.then((why) => ({ died: why }));
    const first = await Promise.race([run, died]);
    harnessFault = "died" in first ? first.died : harnessDeath(session.guest);
    outcome = "died" in first ? { records: [], stuck: [], sent: [], error: first.died } : first;
  } catch (err) {
    harnessFault = harnessDeath(session.guest);
    outcome = {
      records: [],
      stuck: [],
      sent: [],
      error: harnessFault ?? (err instanceof Error ? err.message : String(err)),
    };
  } finally {
    watch.stop();
  }
  // the executor lost a guest whose QEMU still runs: frozen (an NMI takes its stack), or not
  const silent =
    !harnessFault && outcome.error !== undefined ? await examineSilentGuest(session.guest) : undefined;
  if (silent?.kind === "not-judged") outcome = { ...outcome, error: `${outcome.error}; ${silent.reason}` };
  const observations: Observation[] = [...outcome.stuck, ...faults, ...(outcome.observations ?? [])];
  if (harnessFault) {
    session.consoleAt = session.guest.consoleLog().length;
    return {
      ...outcome,
      error: harnessFault,
      observations,
      durationMs: Date.now() - started,
      harnessFault,
    };
  }
  const consoleTo = await closeConsoleSlice(
    session,
    consoleFrom,
    observations,
    outcome.barrier === true,
    outcome.wedged === true,
  );
  observations.push(...consoleObservations(session.guest.consoleLog().slice(consoleFrom, consoleTo)));
  if (silent?.kind === "frozen") {
    const e = freezeEvent(silent);
    observations.push({ ev: "console", kind: e.kind, text: e.text, trace: e.trace });
  }
  return { ...outcome, observations, durationMs: Date.now() - started };
}

/**
 * The end of the scenario's console slice: the executor writes a numbered mark to the kernel log
 * and the slice ends with the console line that shows it, so a late WARN is the scenario's that
 * caused it, not the next one's. A mark that never shows is a console-cut observation (the console
 * rule cannot vouch for the slice); a stuck executor writes none (the guest is rebooted). `written`:
 * the executor wrote it with the teardown (StepwiseHooks.barrier).
 */
async function closeConsoleSlice(
  session: GuestSession,
  from: number,
  observations: Observation[],
  written: boolean,
  wedged: boolean,
): Promise<number> {
  const { executor, guest } = session;
  if (wedged || executor.wedged || (!written && !executor.barrier)) {
    session.consoleAt = guest.consoleLog().length;
    return session.consoleAt;
  }
  const id = ++session.barriers;
  let end: number | undefined;
  let why = `the kernel log did not show barrier mark ${id} within ${BARRIER_WAIT_MS} ms`;
  try {
    if (!written) await executor.barrier?.(id);
    end = await barrierEnd(guest, id, from);
  } catch (err) {
    why = `the barrier mark could not be written: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (end === undefined) observations.push({ ev: "console-cut", reason: why });
  session.consoleAt = end ?? guest.consoleLog().length;
  return session.consoleAt;
}

/**
 * Throws when the device server could not write its hardware trace (a full disk: the errno error,
 * naming the file), which leaves the run without the device's side of what happened.
 */
function checkHwTrace(guest: BootedGuest): void {
  const failed = guest.device ? traceFailureIn(guest.device.log) : undefined;
  if (failed)
    throw Object.assign(
      new Error(`the device server's hardware trace ${failed.file} stopped: ${failed.message}`),
      {
        code: failed.code,
        path: failed.file,
      },
    );
}

async function startSession(
  opts: SuiteOptions,
  factory: ExecutorFactory,
  boot: number,
): Promise<{ session?: GuestSession; probe?: CheckResult[] }> {
  const { device } = opts;
  const backend = backendOf(device);
  // this boot's hardware trace, beside the first boot's, where the device keeps one
  const first = backend.hwTrace?.keptIn(device);
  const hwTraceFile = first ? hwTraceFileFor(first, boot) : undefined;
  const guest = await (opts.boot ?? bootPrepared)(opts.prepared, {
    mac: opts.mac ?? DEFAULT_GUEST_MAC,
    keepConsole: join(opts.runDir, boot === 1 ? "console.log" : `console-${boot}.log`),
    ...(opts.onQemuStarted ? { onQemuStarted: opts.onQemuStarted } : {}),
    device: backend.boot(
      backend.hwTrace && hwTraceFile ? backend.hwTrace.keepIn(device, hwTraceFile) : device,
    ),
  });
  try {
    let probe: CheckResult[] | undefined;
    if (boot === 1 && opts.probe) {
      probe = await opts.probe(guest, hwTraceFile);
      checkHwTrace(guest);
      if (probe.some((r) => !PASSING_VERDICTS.includes(r.verdict))) {
        await guest.dispose();
        return { probe };
      }
    }
    if (opts.driver === "siw") await addSiwLink(guest);
    else {
      const r = await guest.exec("modprobe erdma", { timeoutMs: 60_000 });
      if (r.exitCode !== 0) throw new Error(`modprobe erdma failed: ${r.stderr.trim()}`);
    }
    return {
      ...(probe ? { probe } : {}),
      session: {
        guest,
        executor: await factory(guest, opts.prepared),
        ...(hwTraceFile ? { hwTraceFile } : {}),
        consoleAt: guest.consoleLog().length,
        barriers: 0,
      },
    };
  } catch (err) {
    // the first failure is the one to tell (a full disk fails the console's copy too)
    await guest.dispose().catch(() => {});
    throw err;
  }
}
