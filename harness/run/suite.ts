/**
 * The drain suite: boots one guest (siw on its NIC, or the emulated erdma device), loads the
 * executor, runs each scenario, judges its trace and writes the run directory: verdicts.json,
 * traces/<scenario>.jsonl, console.log (console-<n>.log for guests booted after a hang).
 * A scenario that leaves the executor stuck costs a reboot, never the rest of the suite.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type BootedGuest, bootPrepared, DEFAULT_GUEST_MAC, type PreparedGuest } from "../boot.ts";
import { parseConsole } from "../console/parse.ts";
import { addSiwLink } from "../kverbs/driver.ts";
import { judgeTrace, type ProfileJudgement } from "../oracle/judge.ts";
import type { Observation } from "../oracle/observations.ts";
import { type CompiledScenario, compileScenario } from "../scenario/compile.ts";
import type { OracleProfile, Scenario } from "../scenario/schema.ts";
import { progress } from "../util/progress.ts";
import type { CheckResult, Verdict } from "../verdict.ts";
import type { ExecutorFactory, ExecutorOutcome, ScenarioExecutor } from "./executor.ts";
import { executorFactory } from "./executors.ts";
import { planScenario, planSteps, type SuiteTarget } from "./suite-plan.ts";

/** The guest's address (QEMU user networking); the RDMA device is bound to its NIC. */
export const GUEST_ADDR = "10.0.2.15";
const FIRST_PORT = 7600;
export const TRACE_DIR = "traces";

export interface SuiteOptions extends SuiteTarget {
  prepared: PreparedGuest;
  scenarios: readonly Scenario[];
  runDir: string;
  /** judge only under these oracle profiles (default: each scenario's own) */
  profiles?: readonly OracleProfile[];
  /** the executor to use instead of the one registered for `executor` (tests, new executors) */
  executorFactory?: ExecutorFactory;
  /** the erdma device's hardware trace (driver erdma) */
  hwTraceFile?: string;
  /** told each time a guest's QEMU starts (logs; tests that check nothing is left) */
  onQemuStarted?: (info: { pid: number; workDir: string; sshPort: number }) => void;
}

export interface ScenarioReport {
  name: string;
  file: string;
  /** the verdict per oracle profile */
  judgements: ProfileJudgement[];
  /** set when the scenario did not run (SKIP, MISS) or the run broke (ERROR) */
  outcome?: { verdict: Verdict; reason: string };
  trace?: string;
  observations?: Observation[];
  durationMs: number;
}

export interface SuiteReport {
  driver: string;
  executor: string;
  deviceProfile?: string;
  scenarios: ScenarioReport[];
  boots: number;
  timings: { bootMs: number; runMs: number; judgeMs: number };
}

function profilesFor(s: Scenario, only: readonly OracleProfile[] | undefined): OracleProfile[] {
  return only ? s.profiles.filter((p) => only.includes(p)) : [...s.profiles];
}

function notRun(s: Scenario, profiles: OracleProfile[], verdict: Verdict, reason: string): ScenarioReport {
  return {
    name: s.name,
    file: s.file,
    judgements: profiles.map((profile) => ({ profile, verdict, rules: [] })),
    outcome: { verdict, reason },
    durationMs: 0,
  };
}

/** One CheckResult per scenario and oracle profile, for the table and the exit code. */
export function suiteResults(report: SuiteReport): CheckResult[] {
  return report.scenarios.flatMap((s) =>
    s.judgements.map((j): CheckResult => {
      const failing = j.rules.find((r) => r.verdict === j.verdict && r.verdict !== "PASS");
      const reason =
        s.outcome?.reason ?? (failing ? `rule ${failing.rule}: ${failing.reason}` : "every rule holds");
      return {
        id: `${s.name}[${j.profile}]`,
        title: s.name,
        verdict: j.verdict,
        reason,
        ...(failing?.evidence ? { evidence: failing.evidence } : {}),
      };
    }),
  );
}

interface GuestSession {
  guest: BootedGuest;
  executor: ScenarioExecutor;
}

export async function runSuite(opts: SuiteOptions): Promise<SuiteReport> {
  const report: SuiteReport = {
    driver: opts.driver,
    executor: opts.executor,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
    scenarios: [],
    boots: 0,
    timings: { bootMs: 0, runMs: 0, judgeMs: 0 },
  };
  await mkdir(join(opts.runDir, TRACE_DIR), { recursive: true });
  const factory = opts.executorFactory ?? executorFactory(opts.executor);
  const todo: Array<{ s: Scenario; port: number; profiles: OracleProfile[] }> = [];
  opts.scenarios.forEach((s, i) => {
    const profiles = profilesFor(s, opts.profiles);
    const plan = planScenario(s, opts);
    const compiled = compileScenario(s, { addr: GUEST_ADDR, port: FIRST_PORT + i });
    const steps = plan.run ? planSteps(compiled, opts) : plan;
    if (profiles.length === 0) report.scenarios.push(notRun(s, [], "SKIP", "no oracle profile selected"));
    else if (!plan.run) report.scenarios.push(notRun(s, profiles, plan.verdict, plan.reason));
    else if (typeof factory === "string") report.scenarios.push(notRun(s, profiles, "MISS", factory));
    else if (!steps.run) report.scenarios.push(notRun(s, profiles, steps.verdict, steps.reason));
    else todo.push({ s, port: FIRST_PORT + i, profiles });
  });
  const inGivenOrder = (): SuiteReport => {
    const order = new Map(opts.scenarios.map((s, i) => [s.name, i]));
    report.scenarios.sort((a, b) => (order.get(a.name) ?? 0) - (order.get(b.name) ?? 0));
    return report;
  };
  if (todo.length === 0 || typeof factory === "string") return inGivenOrder();

  let session: GuestSession | undefined;
  const step = progress.step(
    `[suite] ${todo.length} scenario(s) on ${opts.driver}, ${opts.executor} executor`,
  );
  try {
    for (const [n, item] of todo.entries()) {
      step.update(n, todo.length, item.s.name);
      if (!session) {
        const t0 = Date.now();
        session = await startSession(opts, factory, report.boots + 1);
        report.boots++;
        report.timings.bootMs += Date.now() - t0;
      }
      const compiled = compileScenario(item.s, { addr: GUEST_ADDR, port: item.port });
      const outcome = await observeScenario(session, compiled);
      report.timings.runMs += outcome.durationMs;
      const traceName = `${TRACE_DIR}/${item.s.name}.jsonl`;
      await writeFile(
        join(opts.runDir, traceName),
        outcome.records.map((r) => `${JSON.stringify(r)}\n`).join(""),
      );
      const t1 = Date.now();
      const judgements = judgeTrace(
        { records: outcome.records, observations: outcome.observations },
        item.profiles,
      );
      report.timings.judgeMs += Date.now() - t1;
      const errored = outcome.error !== undefined && !judgements.some((j) => j.verdict === "FAIL");
      report.scenarios.push({
        name: item.s.name,
        file: item.s.file,
        judgements: errored ? judgements.map((j) => ({ ...j, verdict: "ERROR" })) : judgements,
        ...(errored ? { outcome: { verdict: "ERROR" as const, reason: outcome.error ?? "" } } : {}),
        trace: traceName,
        observations: outcome.observations,
        durationMs: outcome.durationMs,
      });
      if (session.executor.wedged || outcome.error !== undefined) {
        progress.info(`[suite] ${item.s.name}: the guest is rebooted for the scenarios after it`);
        await session.guest.dispose();
        session = undefined;
      }
    }
    step.succeed(`${todo.length} scenario(s), ${report.boots} boot(s)`);
  } catch (err) {
    step.fail();
    throw err;
  } finally {
    if (session) {
      await session.executor.close().catch((err: unknown) => {
        progress.info(`[suite] the executor did not close cleanly: ${(err as Error).message}`);
      });
      await session.guest.dispose();
    }
  }
  return inGivenOrder();
}

interface ObservedOutcome extends ExecutorOutcome {
  observations: Observation[];
  durationMs: number;
}

/** Runs the scenario and adds what the console showed meanwhile to what the executor saw stuck. */
async function observeScenario(session: GuestSession, compiled: CompiledScenario): Promise<ObservedOutcome> {
  const started = Date.now();
  const consoleFrom = session.guest.consoleLog().length;
  let outcome: ExecutorOutcome;
  try {
    outcome = await session.executor.runScenario(compiled);
  } catch (err) {
    outcome = { records: [], stuck: [], error: err instanceof Error ? err.message : String(err) };
  }
  const observations: Observation[] = [...outcome.stuck];
  for (const e of parseConsole(session.guest.consoleLog().slice(consoleFrom)))
    observations.push({ ev: "console", kind: e.kind, text: e.text, trace: e.trace });
  return { ...outcome, observations, durationMs: Date.now() - started };
}

async function startSession(
  opts: SuiteOptions,
  factory: ExecutorFactory,
  boot: number,
): Promise<GuestSession> {
  const guest = await bootPrepared(opts.prepared, {
    mac: DEFAULT_GUEST_MAC,
    keepConsole: join(opts.runDir, boot === 1 ? "console.log" : `console-${boot}.log`),
    ...(opts.onQemuStarted ? { onQemuStarted: opts.onQemuStarted } : {}),
    device:
      opts.driver === "siw"
        ? false
        : { profile: opts.deviceProfile, ...(opts.hwTraceFile ? { traceFile: opts.hwTraceFile } : {}) },
  });
  try {
    if (opts.driver === "siw") await addSiwLink(guest);
    else {
      const r = await guest.exec("modprobe erdma", { timeoutMs: 60_000 });
      if (r.exitCode !== 0) throw new Error(`modprobe erdma failed: ${r.stderr.trim()}`);
    }
    return { guest, executor: await factory(guest, opts.prepared) };
  } catch (err) {
    await guest.dispose();
    throw err;
  }
}
