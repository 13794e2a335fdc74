import { type Command, InvalidArgumentError } from "commander";
import { DEFAULT_KERNEL } from "../defaults.ts";
import { ACCEPTED_BASE_FORMS } from "../kernel/base-spec.ts";
import type { KernelRequest } from "../kernel/types.ts";
import { kernelRequestOf } from "../workflows/job/job.ts";

export interface KernelOptionValues {
  kernel: string;
  series?: string;
  config: string[];
}

export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The help of --kernel, on every command that takes one. */
export const KERNEL_HELP = `the kernel's base tree: ${ACCEPTED_BASE_FORMS.join(" | ")}`;

/** --kernel, --series and --config, shared by the commands that boot a kernel. */
export function addKernelOptions(cmd: Command): Command {
  return cmd
    .option("--kernel <base>", KERNEL_HELP, DEFAULT_KERNEL)
    .option("--series <mbox|dir>", "a patch series applied on the base (mbox or a directory of .patch files)")
    .option(
      "--config <fragment>",
      "a Kconfig fragment file, or one shipped in guest/kconfig by name (smp: two vCPUs; debug: KASAN, KFENCE, lockdep, atomic-sleep and list checks), merged after the base fragment (repeatable)",
      collect,
      [],
    );
}

/** The kernel the options name, with the paths of --kernel, --series and --config made absolute. */
export function resolvedKernelRequest(values: KernelOptionValues): KernelRequest {
  return kernelRequestOf({
    kernel: values.kernel,
    ...(values.series ? { series: values.series } : {}),
    configs: values.config,
  });
}

export function kernelRequest(values: KernelOptionValues): KernelRequest {
  return { base: values.kernel, series: values.series, configs: values.config };
}

export function parseSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive number of seconds, got "${value}"`);
  return n;
}
