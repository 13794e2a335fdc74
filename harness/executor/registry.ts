/** The executors `--executor` chooses from: the in-kernel one (hil_kverbs) and the userspace one (hil-uverbs). */
import type { ExecutorKind } from "../scenario/schema.ts";
import type { ExecutorFactory } from "./executor.ts";
import { KernelExecutor } from "./kernel.ts";
import { UserExecutor } from "./user.ts";

export const EXECUTOR_FACTORIES: Partial<Record<ExecutorKind, ExecutorFactory>> = {
  kernel: (guest, prepared) => KernelExecutor.load(guest, prepared),
  user: (guest) => UserExecutor.load(guest),
};

/** The factory for a kind, or why there is none. */
export function executorFactory(kind: ExecutorKind): ExecutorFactory | string {
  return EXECUTOR_FACTORIES[kind] ?? `no ${kind} executor`;
}
