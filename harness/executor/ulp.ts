/**
 * A ULP workload's scenario in the guest: each ulp step runs guest/ulp/hil-ulp.sh over SSH under
 * the step's watchdog, fault steps are armed on the device by the suite's hook (on the QP of the
 * host's or the target's I/O queue), and the RDMA objects the kernel (and the device model) hold are counted
 * before the first step and after the last, so what the teardown left behind shows. A step past its
 * watchdog is a hang: the stacks of its task and children are taken (and sysrq-w is asked for the
 * kernel log) and the guest is wedged, as a stuck verbs call wedges it.
 */
import { fileURLToPath } from "node:url";
import type {
  ObjectCounts,
  Observation,
  StuckObservation,
  UlpStepObservation,
} from "../protocol/observations.ts";
import { leftBehind } from "../protocol/observations.ts";
import type { CompiledScenario, CompiledStep } from "../scenario/compile.ts";
import { sleepMsOf, type UlpAction } from "../scenario/schema.ts";
import type { ExecutorGuest } from "./executor.ts";
import { describeUnread, parseUnreadSockets, TCP_TABLE_COMMAND } from "./tcp-unread.ts";

export const ULP_SCRIPT = fileURLToPath(new URL("../../guest/ulp/hil-ulp.sh", import.meta.url));
const GUEST_SCRIPT = "/tmp/hil-ulp.sh";
/** hil-ulp.sh's exit status when the guest cannot run the workload at all (a module missing) */
const UNAVAILABLE = 3;
/** how long the evidence of a stuck step may take to collect */
const EVIDENCE_MS = 15_000;
/** how long the teardown's objects may take to go (nvmet frees its queues from a workqueue) */
const SETTLE_MS = 3_000;

export interface UlpHooks {
  /** arms a fault step on the device; what it armed, for the observation */
  fault?: (step: CompiledStep) => Promise<Observation>;
  /** the device model's count of the objects it holds (undefined: no device model) */
  deviceObjects?: () => Promise<ObjectCounts | undefined>;
  /** the console barrier's number: written to the kernel log after the last step */
  barrier?: number;
}

export interface UlpOutcome {
  observations: Observation[];
  stuck: StuckObservation[];
  /** the run broke (a step could not be started, the script could not be copied) */
  error?: string;
  /** a step is stuck in the guest: nothing more can run there */
  wedged: boolean;
  /** the barrier mark was written */
  barrier?: boolean;
}

/** The arguments hil-ulp.sh takes for an action. */
export function ulpCommand(compiled: CompiledScenario, action: UlpAction): string {
  const { addr, port } = compiled.endpoint;
  const nqn = `hil-${compiled.scenario.name}-${port}`;
  const [name, kib] = typeof action === "string" ? [action, 0] : ["io", action.io.kib];
  return `sh ${GUEST_SCRIPT} ${compiled.scenario.workload} ${name} ${addr} ${port} ${nqn} ${kib}`;
}

export function actionName(action: UlpAction): string {
  return typeof action === "string" ? action : `io ${action.io.kib} KiB`;
}

/** The "hil-ulp key=value ..." lines of the script's output, as one record. */
export function parseUlpValues(stdout: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("hil-ulp ")) continue;
    // a value runs to the next " key=" (error texts have spaces)
    for (const m of line.slice("hil-ulp ".length).matchAll(/([a-z0-9-]+)=(.*?)(?= [a-z0-9-]+=|$)/g))
      if (m[1] !== undefined && m[2] !== undefined) values[m[1]] = m[2];
  }
  return values;
}

/** `rdma resource show` lines ("0: erdma_0: pd 2 cq 2 qp 4 cm_id 5 mr 320 ..."), summed over devices. */
export function parseRdmaResources(text: string): ObjectCounts {
  const counts: ObjectCounts = {};
  for (const line of text.split("\n")) {
    for (const m of line.matchAll(/\b(pd|cq|qp|cm_id|mr|srq|ctx) (\d+)/g))
      if (m[1] && m[2]) counts[m[1]] = (counts[m[1]] ?? 0) + Number(m[2]);
  }
  return counts;
}

/**
 * The stacks of the step's task, its children and every other task in uninterruptible sleep (the
 * worker a ULP hands its teardown to), each with its state: the stuck evidence.
 */
const STACKS = (pidFile: string) =>
  [
    `p=$(cat ${pidFile} 2>/dev/null)`,
    `for d in /proc/$p /proc/[0-9]*; do`,
    `  [ -r "$d/status" ] || continue`,
    `  pp=$(sed -n 's/^PPid:[[:space:]]*//p' "$d/status"); st=$(sed -n 's/^State:[[:space:]]*//p' "$d/status")`,
    `  if [ "$d" = "/proc/$p" ]; then r=step; elif [ "$pp" = "$p" ]; then r=child; elif [ "\${st#D}" != "$st" ]; then r=blocked; else continue; fi`,
    `  echo "task $(basename "$d") $r $(tr ' ' _ < "$d/comm") $st"`,
    `  cat "$d/stack" 2>/dev/null; echo end`,
    "done",
    "echo w > /proc/sysrq-trigger",
  ].join("\n");

interface TaskStack {
  pid: string;
  /** the step's own task, its child, or another task in uninterruptible sleep */
  role: "step" | "child" | "blocked";
  comm: string;
  state: string;
  stack: string;
}

export function parseTaskStacks(text: string): TaskStack[] {
  const tasks: TaskStack[] = [];
  let cur: TaskStack | undefined;
  for (const line of text.split("\n")) {
    const head = /^task (\d+) (step|child|blocked) (\S+) (.*)$/.exec(line);
    if (head?.[1] && head[3] && head[4] !== undefined) {
      cur = { pid: head[1], role: head[2] as TaskStack["role"], comm: head[3], state: head[4], stack: "" };
      if (!tasks.some((t) => t.pid === cur?.pid)) tasks.push(cur);
    } else if (line === "end") cur = undefined;
    else if (cur && line.trim()) cur.stack += `${line}\n`;
  }
  return tasks;
}

/**
 * The task whose stack the hang is told by: the step's own task or its child in uninterruptible
 * sleep, else the step's own task, else the first other blocked task.
 */
function stuckTask(tasks: readonly TaskStack[]): TaskStack | undefined {
  const blocked = (t: TaskStack) => t.state.startsWith("D");
  return (
    tasks.find((t) => t.role !== "blocked" && blocked(t)) ??
    tasks.find((t) => t.role === "step") ??
    tasks.find(blocked)
  );
}

/** The stuck task's stack, then the other blocked tasks' under a line naming each. */
export function stuckStack(tasks: readonly TaskStack[]): string {
  const first = stuckTask(tasks);
  const others = tasks.filter((t) => t !== first && t.state.startsWith("D"));
  return [
    first?.stack.trim() ?? "",
    ...others.map((t) => `-- also blocked: ${t.comm} (pid ${t.pid}, ${t.state})\n${t.stack.trim()}`),
  ]
    .filter(Boolean)
    .join("\n");
}

/** The RDMA objects the kernel tracks and the device model holds (either may be unknown). */
type Counts = { kernel?: ObjectCounts; device?: ObjectCounts };

/** The steps a ULP target runs; the others are the host's. */
const TARGET_ACTIONS: readonly string[] = ["target-up", "target-down"];

/**
 * Runs a ULP workload's steps in one guest, or in two (`target`: the target's steps there, the
 * host's in `host`); the objects are counted in both.
 */
export class UlpRunner {
  private readonly guests: readonly ExecutorGuest[];

  constructor(
    private readonly host: ExecutorGuest,
    private readonly target: ExecutorGuest = host,
  ) {
    this.guests = target === host ? [host] : [host, target];
  }

  private guestFor(action: UlpAction): ExecutorGuest {
    return typeof action === "string" && TARGET_ACTIONS.includes(action) ? this.target : this.host;
  }

  async run(compiled: CompiledScenario, hooks: UlpHooks = {}): Promise<UlpOutcome> {
    const observations: Observation[] = [];
    try {
      for (const g of this.guests) await g.copyTo(ULP_SCRIPT, GUEST_SCRIPT, { mode: 0o755 });
    } catch (err) {
      return { observations, stuck: [], wedged: false, error: (err as Error).message };
    }
    const before = await this.counts(hooks);
    for (const step of compiled.steps) {
      if (step.fault) {
        if (!hooks.fault)
          return { observations, stuck: [], wedged: false, error: "no device to arm faults on" };
        observations.push(await hooks.fault(step));
        continue;
      }
      const written = compiled.scenario.steps[step.index];
      if (written && "sleep" in written) {
        await new Promise((r) => setTimeout(r, sleepMsOf(written.sleep)));
        continue;
      }
      if (step.ulp === undefined) continue;
      const ran = await this.step(compiled, step, step.ulp);
      if ("stuck" in ran) return { observations, stuck: [ran.stuck], wedged: true };
      // no exit status: the SSH channel closed under the step, which says nothing of the driver
      if (ran.observation.exitCode === -1)
        return {
          observations,
          stuck: [],
          wedged: false,
          error: `step ${step.index + 1} (${ran.observation.action}): the guest's SSH channel closed without the step's exit status`,
        };
      if (ran.observation.exitCode === UNAVAILABLE)
        return {
          observations,
          stuck: [],
          wedged: false,
          error: `step ${step.index + 1} (${ran.observation.action}): the guest cannot run the ${compiled.scenario.workload} workload: ${ran.observation.stderr ?? "(no reason given)"}`,
        };
      observations.push(ran.observation);
    }
    const after = await this.settledCounts(hooks, before);
    if (before.kernel && after.kernel)
      observations.push({ ev: "ulp-objects", before: before.kernel, after: after.kernel, source: "kernel" });
    if (before.device && after.device)
      observations.push({ ev: "ulp-objects", before: before.device, after: after.device, source: "device" });
    const barrier = hooks.barrier === undefined ? undefined : await this.mark(hooks.barrier);
    return { observations, stuck: [], wedged: false, ...(barrier !== undefined ? { barrier } : {}) };
  }

  private async step(
    compiled: CompiledScenario,
    step: CompiledStep,
    action: UlpAction,
  ): Promise<{ observation: UlpStepObservation } | { stuck: StuckObservation }> {
    const started = Date.now();
    const command = ulpCommand(compiled, action);
    const guest = this.guestFor(action);
    const run = guest.exec(command, { timeoutMs: step.timeoutMs + EVIDENCE_MS + 60_000 });
    let timer: NodeJS.Timeout | undefined;
    const watchdog = new Promise<"stuck">((resolve) => {
      timer = setTimeout(() => resolve("stuck"), step.timeoutMs);
    });
    const first = await Promise.race([run, watchdog]).finally(() => clearTimeout(timer));
    if (first === "stuck") {
      // the stuck command settles when the guest is disposed of; nothing waits for it
      run.catch(() => {});
      const evidence = await guest
        .exec(STACKS("/tmp/hil-ulp/step.pid"), { timeoutMs: EVIDENCE_MS })
        .catch((err: Error) => ({ exitCode: -1, stdout: "", stderr: err.message }));
      const tasks = parseTaskStacks(evidence.stdout);
      const task = stuckTask(tasks);
      const unread = await this.unreadSockets();
      return {
        stuck: {
          ev: "stuck",
          step: step.index,
          op: `ulp ${actionName(action)}`,
          ms: step.timeoutMs,
          stack:
            stuckStack(tasks) || `(no stack: ${evidence.stderr.trim() || "the step's task was not found"})`,
          state: task ? `${task.state} (${task.comm}, pid ${task.pid})` : "unknown",
          ...(unread.length ? { unread } : {}),
        },
      };
    }
    return {
      observation: {
        ev: "ulp-step",
        step: step.index,
        action: actionName(action),
        exitCode: first.exitCode,
        ms: Date.now() - started,
        values: parseUlpValues(first.stdout),
        ...(first.stderr.trim() ? { stderr: first.stderr.trim().slice(0, 2000) } : {}),
        expect: step.expect ?? 0,
      },
    };
  }

  /** Every guest's TCP connections with bytes nobody read (a guest that cannot tell is left out). */
  private async unreadSockets(): Promise<string[]> {
    const out: string[] = [];
    for (const [i, g] of this.guests.entries()) {
      const name = this.guests.length === 1 ? "the guest" : i === 0 ? "the host" : "the target";
      const r = await g
        .exec(TCP_TABLE_COMMAND, { timeoutMs: EVIDENCE_MS })
        .catch(() => ({ exitCode: -1, stdout: "" }));
      out.push(...parseUnreadSockets(r.stdout).map((u) => describeUnread(name, u)));
    }
    return out;
  }

  /**
   * The objects held now. A guest whose `rdma resource show` fails or counts nothing leaves the
   * kernel's count out: no count is no evidence that nothing was left behind.
   */
  private async counts(hooks: UlpHooks): Promise<Counts> {
    let kernel: ObjectCounts | undefined = {};
    for (const g of this.guests) {
      const r = await g
        .exec("rdma resource show", { timeoutMs: 10_000 })
        .catch(() => ({ exitCode: -1, stdout: "" }));
      const counted = parseRdmaResources(r.stdout);
      if (r.exitCode !== 0 || Object.keys(counted).length === 0) kernel = undefined;
      if (kernel) for (const [kind, n] of Object.entries(counted)) kernel[kind] = (kernel[kind] ?? 0) + n;
    }
    const device = await hooks.deviceObjects?.();
    return { ...(kernel ? { kernel } : {}), ...(device ? { device } : {}) };
  }

  /** The counts after the teardown, once nothing more goes (or SETTLE_MS passed). */
  private async settledCounts(hooks: UlpHooks, before: Counts): Promise<Counts> {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const now = await this.counts(hooks);
      const left = [...leftBehind(before.kernel, now.kernel), ...leftBehind(before.device, now.device)];
      if (left.length === 0 || Date.now() > deadline) return now;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async mark(id: number): Promise<boolean> {
    const r = await this.host
      .exec(`echo "hil-mark ${id}" > /dev/kmsg`, { timeoutMs: 10_000 })
      .catch(() => ({ exitCode: -1 }));
    return r.exitCode === 0;
  }
}
