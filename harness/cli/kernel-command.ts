import type { Command } from "commander";
import { ACCEPTED_BASE_FORMS } from "../kernel/base-spec.ts";
import { buildKernel } from "../kernel/build.ts";
import { addOldSpelling } from "./old-spellings.ts";

interface BuildOptions {
  kernel: string;
  series?: string;
  config?: string[];
  json?: boolean;
}

export function register(program: Command): void {
  const kernel = program.command("kernel").description("build guest kernels (cached by content)");
  const build = kernel
    .command("build")
    .description(
      "build (or find cached) a kernel: base tree + patch series + config fragments; prints its artifact directory",
    )
    .requiredOption("--kernel <base>", `the kernel's base tree: ${ACCEPTED_BASE_FORMS.join(" | ")}`)
    .option(
      "--series <mbox|dir>",
      "patch series: an mbox (git format-patch --stdout, b4 am) or a directory of *.patch files",
    )
    .option(
      "--config <fragment>",
      "a Kconfig fragment file, or one shipped in guest/kconfig by name (smp: two vCPUs; debug: KASAN, KFENCE, lockdep, atomic-sleep and list checks), merged after guest/kconfig/base.config (repeatable, applied in order)",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option("--json", "print the kernel artifact as JSON");
  addOldSpelling(build, "--base <base>").action(async (opts: BuildOptions) => {
    const artifact = await buildKernel({
      base: opts.kernel,
      series: opts.series,
      configs: opts.config ?? [],
    });
    process.stdout.write(opts.json ? `${JSON.stringify(artifact, null, 2)}\n` : `${artifact.dir}\n`);
  });
}
