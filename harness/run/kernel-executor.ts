/** The in-kernel executor (hil_kverbs) as a suite executor: one step at a time, a watchdog each. */
import type { PreparedGuest } from "../boot.ts";
import type { ModuleShell } from "../image/kmod.ts";
import { KverbsDriver } from "../kverbs/driver.ts";
import { buildKverbsModule } from "../kverbs/module.ts";
import type { KvRecord } from "../kverbs/trace.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import type { ExecutorOutcome, ScenarioExecutor } from "./executor.ts";
import { type CommandRunner, runStepwise, type StuckCommand } from "./stepwise.ts";

export class KernelExecutor implements ScenarioExecutor, CommandRunner {
  readonly kind = "kernel" as const;
  private stuckOnce = false;

  private constructor(
    private readonly driver: KverbsDriver,
    private readonly guest: ModuleShell,
  ) {}

  /** Builds hil_kverbs for the guest's kernel (cached), copies it in and loads it. */
  static async load(guest: ModuleShell, prepared: PreparedGuest): Promise<KernelExecutor> {
    const mod = await buildKverbsModule(prepared.kernel);
    return new KernelExecutor(await KverbsDriver.load(guest, mod), guest);
  }

  get wedged(): boolean {
    return this.stuckOnce;
  }

  runScenario(compiled: CompiledScenario): Promise<ExecutorOutcome> {
    return runStepwise(this, compiled);
  }

  async clear(): Promise<void> {
    await this.driver.clear();
  }

  async run(
    lines: readonly string[],
    timeoutMs: number,
  ): Promise<{ records: KvRecord[]; stuck?: StuckCommand }> {
    const r = await this.driver.run(lines, { timeoutMs, check: false });
    if (!r.stuck) return { records: r.records };
    this.stuckOnce = true;
    // the blocked tasks' stacks on the console too, as the hung-task detector would print them
    await this.guest.exec("echo w > /proc/sysrq-trigger", { timeoutMs: 10_000 }).catch(() => undefined);
    return {
      records: r.records,
      stuck: {
        op: r.stuck.status.busy?.op ?? "?",
        ms: r.stuck.status.busy?.ms ?? timeoutMs,
        stack: r.stuck.stack,
        state: r.stuck.state,
      },
    };
  }

  async close(): Promise<void> {
    if (!this.stuckOnce) await this.driver.unload();
  }
}
