/**
 * The command line the verbs benchmarks share: --kernel, --config (repeatable: a fragment file
 * or a shipped name such as smp), --iters (a whole number >= 100) and --json; the measurement's result as JSON or as the benchmark's table on stdout, an error as one
 * message on stderr and exit status 1.
 */
import { parseArgs } from "node:util";
import { isHilError } from "../../util/errors.ts";
import type { KernelRequest } from "../kernel/types.ts";

export function runBench<R>(
  defaultIters: number,
  measure: (kernel: KernelRequest, iters: number) => Promise<R>,
  table: (result: R) => string,
): void {
  const main = async () => {
    const { values } = parseArgs({
      options: {
        kernel: { type: "string", default: "debian:6.12" },
        config: { type: "string", multiple: true, default: [] },
        iters: { type: "string", default: String(defaultIters) },
        json: { type: "boolean", default: false },
      },
    });
    const iters = Number(values.iters);
    if (!Number.isInteger(iters) || iters < 100)
      throw new Error(`--iters ${values.iters}: a whole number >= 100`);
    const r = await measure({ base: values.kernel as string, configs: values.config as string[] }, iters);
    process.stdout.write(values.json ? `${JSON.stringify(r, null, 2)}\n` : `${table(r)}\n`);
  };
  main().catch((err) => {
    process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
    process.exit(1);
  });
}
