/**
 * What a LAVA job runs on its device, decided on the host: the scenarios in the order they run,
 * each compiled into the two batches of hil_kverbs command groups the guest-side runner sends (the
 * setup and the steps; then the settle and the teardown), and the scenarios that cannot run there,
 * with why. `hil judge` reads the same plan back to know what was sent.
 *
 * Differences from a suite run, because nothing on the host acts during the job: no device faults
 * (no control channel to arm them), a settle computed before the run (each CQ polled until every
 * WR the scenario posts could have completed, or 2 s), and a stuck step ends the job's scenarios
 * (no guest to reboot into).
 */
import { HilError } from "../../util/errors.ts";
import { hashParts } from "../../util/hash.ts";
import type { CommandGroup } from "../executor/kverbs-driver.ts";
import { phaseSent, setupSent, stepSent } from "../executor/sent.ts";
import type { KernelArtifact } from "../kernel/types.ts";
import { commandLine } from "../protocol/commands.ts";
import { FIRST_PORT, GUEST_ADDR } from "../protocol/guest-net.ts";
import { type CompiledScenario, compileScenario, withoutOptionalFaults } from "../scenario/compile.ts";
import { profilesOnDriver } from "../scenario/drivers.ts";
import type { DriverName, OracleProfile, Scenario } from "../scenario/schema.ts";
import type { SentCommand } from "../scenario/sent-command.ts";
import { hangsLast } from "../suite/order.ts";
import { planScenario, planSteps } from "../suite/plan.ts";
import type { Verdict } from "../verdict.ts";

export const LAVA_PLAN_FILE = "lava-plan.json";
export const LAVA_PLAN_FORMAT = 1 as const;
/** how long the settle waits on each CQ for completions still owed */
export const LAVA_SETTLE_WAIT_MS = 2000;
const TEARDOWN_TIMEOUT_MS = 30_000;
const NO_FAULTS =
  "a LAVA job has no control channel to arm device faults on (hil runs fault scenarios on the emulated device)";

/** A group of commands as the runner sends it, with what the commands rule needs of each. */
export interface PlannedGroup extends CommandGroup {
  sent: SentCommand[];
  /** the step index a stuck group is reported under (-1 the setup, steps.length the settle/teardown) */
  index: number;
}

export interface PlannedScenario {
  name: string;
  /** the runner's file for it: s/<id>.sh (and its batches s/<id>-a.sh, s/<id>-b.sh) */
  id: string;
  profiles: OracleProfile[];
  scenario: Scenario;
  /** setup and steps, then settle and teardown */
  batches: [PlannedGroup[], PlannedGroup[]];
}

export interface NotPlanned {
  name: string;
  file: string;
  profiles: OracleProfile[];
  verdict: Verdict;
  reason: string;
}

export interface LavaPlan {
  format: typeof LAVA_PLAN_FORMAT;
  /** a digest of what the runner will send: the log names it, so a log is judged by its own plan */
  digest: string;
  hil: string;
  kernel: { describe: string; release: string; base: string; version?: string };
  driver: DriverName;
  executor: "kernel";
  deviceProfile?: string;
  /** the address the scenarios' QP pairs connect on: the device's netdev address on the DUT */
  addr: string;
  scenarios: PlannedScenario[];
  notPlanned: NotPlanned[];
}

/** The longest the runner can take: every watchdog of every planned scenario and each settle's wait. */
export function planWatchdogMs(plan: Pick<LavaPlan, "scenarios">): number {
  return plan.scenarios.reduce(
    (sum, s) =>
      sum + [...s.batches[0], ...s.batches[1]].reduce((n, g) => n + g.timeoutMs, 0) + LAVA_SETTLE_WAIT_MS,
    0,
  );
}

/** The kernel as a plan names it, from the kernel built for it. */
export function planKernelOf(
  kernel: Pick<KernelArtifact, "describe" | "release" | "version">,
): LavaPlan["kernel"] {
  return {
    describe: kernel.describe,
    release: kernel.release,
    base: kernel.describe.split(" + ")[0] ?? kernel.describe,
    ...(kernel.version ? { version: kernel.version } : {}),
  };
}

export interface LavaPlanOptions {
  hil: string;
  kernel: LavaPlan["kernel"];
  driver: DriverName;
  deviceProfile?: string;
  addr?: string;
  /** judge only under these oracle profiles (default: each scenario's own) */
  profiles?: readonly OracleProfile[];
  /** why scenarios with device faults are SKIP where the plan runs (default: a LAVA job's reason) */
  noFaults?: string;
}

/** The settle of a plan made before the run: each CQ waits for as many completions as WRs are posted. */
function staticSettle(compiled: CompiledScenario): string[] {
  const posted = compiled.steps.reduce((n, s) => n + (s.posts?.count ?? 0), 0);
  return compiled.cqs.map((cq) =>
    commandLine("poll", { cq, min: posted, timeout: posted > 0 ? LAVA_SETTLE_WAIT_MS : 0 }),
  );
}

function batchesOf(compiled: CompiledScenario): [PlannedGroup[], PlannedGroup[]] {
  const end = compiled.steps.length;
  const setup: PlannedGroup = {
    lines: compiled.setup,
    timeoutMs: compiled.setupTimeoutMs,
    stopOnFailure: true,
    sent: setupSent(compiled),
    index: -1,
  };
  const steps = compiled.steps.map(
    (s): PlannedGroup => ({ lines: s.commands, timeoutMs: s.timeoutMs, sent: stepSent(s), index: s.index }),
  );
  const settle = staticSettle(compiled);
  return [
    [setup, ...steps],
    [
      {
        lines: settle,
        timeoutMs: LAVA_SETTLE_WAIT_MS * settle.length + 10_000,
        sent: phaseSent(settle, "settle"),
        index: end,
      },
      {
        lines: [commandLine("reset")],
        timeoutMs: TEARDOWN_TIMEOUT_MS,
        sent: phaseSent([commandLine("reset")], "teardown"),
        index: end,
      },
    ],
  ];
}

export function buildLavaPlan(scenarios: readonly Scenario[], opts: LavaPlanOptions): LavaPlan {
  if (scenarios.length === 0) throw new HilError("no scenario to put in the LAVA job");
  const target = {
    driver: opts.driver,
    executor: "kernel" as const,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
  };
  const addr = opts.addr ?? GUEST_ADDR;
  const notPlanned: NotPlanned[] = [];
  const runnable: { compiled: CompiledScenario; profiles: OracleProfile[] }[] = [];
  scenarios.forEach((s, i) => {
    const own = profilesOnDriver(s.profiles, opts.driver);
    const profiles = opts.profiles ? own.filter((p) => opts.profiles?.includes(p)) : own;
    const skip = (verdict: Verdict, reason: string) =>
      notPlanned.push({ name: s.name, file: s.file, profiles, verdict, reason });
    const plan = planScenario(s, target);
    const compiled = withoutOptionalFaults(
      compileScenario(s, {
        addr,
        port: FIRST_PORT + i,
        executor: "kernel",
        driver: opts.driver,
      }),
    );
    const steps = plan.run ? planSteps(compiled, target) : plan;
    if (profiles.length === 0) skip("SKIP", "no rule set selected");
    else if (!plan.run) skip(plan.verdict, plan.reason);
    else if (compiled.steps.some((x) => x.fault)) skip("SKIP", opts.noFaults ?? NO_FAULTS);
    else if (!steps.run) skip(steps.verdict, steps.reason);
    else runnable.push({ compiled, profiles });
  });
  const planned = hangsLast(runnable).map(
    ({ compiled, profiles }, n): PlannedScenario => ({
      name: compiled.scenario.name,
      id: String(n + 1).padStart(3, "0"),
      profiles,
      scenario: compiled.scenario,
      batches: batchesOf(compiled),
    }),
  );
  const body = {
    format: LAVA_PLAN_FORMAT,
    hil: opts.hil,
    kernel: opts.kernel,
    driver: opts.driver,
    executor: "kernel" as const,
    ...(opts.deviceProfile ? { deviceProfile: opts.deviceProfile } : {}),
    addr,
    scenarios: planned,
    notPlanned,
  };
  return { ...body, digest: hashParts(["lava-plan", JSON.stringify(body)]) };
}
