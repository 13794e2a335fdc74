/**
 * The executors `--executor` chooses from. The userspace executor (guest/uverbs) is not wired in
 * yet: until a factory for it is listed here, every scenario it is asked to run is a MISS.
 */
import type { ExecutorKind } from "../scenario/schema.ts";
import type { ExecutorFactory } from "./executor.ts";
import { KernelExecutor } from "./kernel-executor.ts";

export const USER_EXECUTOR_MISSING =
  "the userspace executor (guest/uverbs) is not wired into the suite yet; run with --executor kernel";

export const EXECUTOR_FACTORIES: Partial<Record<ExecutorKind, ExecutorFactory>> = {
  kernel: (guest, prepared) => KernelExecutor.load(guest, prepared),
};

/** The factory for a kind, or why there is none. */
export function executorFactory(kind: ExecutorKind): ExecutorFactory | string {
  return EXECUTOR_FACTORIES[kind] ?? (kind === "user" ? USER_EXECUTOR_MISSING : `no ${kind} executor`);
}
